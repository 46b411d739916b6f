"""The ``nini remember`` dialogue, shared by the CLI and ``%nini remember``: list the pending
candidates with their stage-2 evaluation, let the user pick (all, a subset, change a target, edit,
cancel), show the curator's plan and carry it out only on an explicit yes.

It talks through two callables (``ask`` returns the user's line, raising EOFError when there is
none; ``say`` prints), so a terminal, a notebook's stdin and a test all drive the same code.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from nini.errors import NiniError
from nini.memory.experience.model import LEVELS
from nini.memory.experience.service import ExperienceMemory

TEXT: dict[str, dict[str, Any]] = {
    "zh": {
        "none": "没有待沉淀的经验候选。",
        "title": "待沉淀的经验候选（{n} 条）：",
        "item": "  {n}. [{level} · {type}] {title}",
        "shape": "     决策：{decision} ｜ 放弃：{alternatives} ｜ 信号：{signal}",
        "scores": "     评估：结构 {structure:.2f} · 判断质量 {judgement:.2f} · 可复用 "
        "{reusability:.2f} · 目标匹配 {fit:.2f}",
        "note": "     提示：{note}",
        "menu": "选择：a 全部 · 编号（如 1,3 或 1 3）· t N 更改存储目标 · e N 编辑 · c 取消",
        "bad": "没有第 {n} 条（共 {total} 条）。",
        "unknown": "没看懂：{answer}",
        "target": "第 {n} 条的存储目标（team/project）：",
        "plan": "沉淀计划：",
        "confirm": "确认执行？[y/N] ",
        "cancelled": "已取消，候选仍在待沉淀列表中。",
        "edit": "编辑第 {n} 条（回车保留原值；放弃的做法用 ; 分隔）：",
        "fields": {
            "title": "标题",
            "trigger": "触发条件",
            "decision": "决策",
            "alternatives": "放弃的做法",
            "signal": "信号",
            "type": "类型（standard/knowledge）",
        },
    },
    "en": {
        "none": "No experience candidates are pending.",
        "title": "Pending experience candidates ({n}):",
        "item": "  {n}. [{level} · {type}] {title}",
        "shape": "     decision: {decision} | rejected: {alternatives} | signal: {signal}",
        "scores": "     evaluation: structure {structure:.2f} · judgement {judgement:.2f} · "
        "reusability {reusability:.2f} · fit {fit:.2f}",
        "note": "     note: {note}",
        "menu": "Choose: a all · numbers (1,3 or 1 3) · t N change the target · e N edit · c cancel",
        "bad": "There is no number {n} (there are {total}).",
        "unknown": "Not understood: {answer}",
        "target": "Target of number {n} (team/project): ",
        "plan": "Plan:",
        "confirm": "Carry it out? [y/N] ",
        "cancelled": "Cancelled; the candidates stay pending.",
        "edit": "Edit number {n} (Enter keeps a value; separate rejected alternatives with ;):",
        "fields": {
            "title": "title",
            "trigger": "trigger",
            "decision": "decision",
            "alternatives": "rejected alternatives",
            "signal": "signal",
            "type": "type (standard/knowledge)",
        },
    },
}


def remember_dialogue(memory: ExperienceMemory, ask: Callable[[str], str], say: Callable[[str], None]) -> str | None:
    """Run the dialogue to its end; the deposit's line, or None when nothing was written."""
    words = TEXT.get(memory.language, TEXT["zh"])
    targets: dict[str, str] = {}
    try:
        while True:
            state, shown = memory.pending_view()
            if not shown:
                say(words["none"])
                return None
            _show(words, shown, targets, say)
            memory.mark_asked()
            answer = ask("> ").strip().lower()
            ids = [item["candidate"]["id"] for item in shown]
            if answer in ("c", "q", "cancel", ""):
                say(words["cancelled"])
                return None
            command = re.fullmatch(r"([te])\s*(\d+)", answer)
            if command:
                number = int(command.group(2))
                if not 1 <= number <= len(ids):
                    say(words["bad"].format(n=number, total=len(ids)))
                elif command.group(1) == "t":
                    level = ask(words["target"].format(n=number)).strip().lower()
                    if level in LEVELS:
                        targets[ids[number - 1]] = level
                else:
                    _edit(memory, words, ids[number - 1], number, ask, say)
                continue
            chosen = _chosen(answer, ids, words, say)
            if chosen is None:
                continue
            plan = memory.plan(chosen, {i: level for i, level in targets.items() if i in chosen})
            say(words["plan"])
            for line in plan.describe(memory.language):
                say("  " + line)
            if ask(words["confirm"]).strip().lower() not in ("y", "yes", "是", "确认"):
                say(words["cancelled"])
                return None
            line = memory.deposit(plan, confirm=True)
            say(line)
            return line
    except EOFError:
        say(words["cancelled"])
        return None


def _show(words: dict, shown: list[dict], targets: dict[str, str], say: Callable[[str], None]) -> None:
    say(words["title"].format(n=len(shown)))
    for item in shown:
        c, evaluation = item["candidate"], item["evaluation"]
        level = targets.get(c["id"], c["level"])
        say(words["item"].format(n=item["number"], level=level, type=c["type"], title=c["title"]))
        say(
            words["shape"].format(decision=c["decision"], alternatives="; ".join(c["alternatives"]), signal=c["signal"])
        )
        say(words["scores"].format(**evaluation))
        for note in [*c.get("notes", []), *evaluation["notes"]]:
            say(words["note"].format(note=note))
    say(words["menu"])


def _chosen(answer: str, ids: list[str], words: dict, say: Callable[[str], None]) -> list[str] | None:
    """The ids the answer picks ("a", "1,3", "1 3"); None (after saying why) when it picks nothing valid."""
    if answer in ("a", "all", "全部"):
        return ids
    parts = [part for part in re.split(r"[,\s，、]+", answer) if part]
    if not parts or not all(part.isdigit() for part in parts):
        say(words["unknown"].format(answer=answer))
        return None
    numbers = [int(part) for part in parts]
    wrong = [n for n in numbers if not 1 <= n <= len(ids)]
    if wrong:
        say(words["bad"].format(n=wrong[0], total=len(ids)))
        return None
    return [ids[n - 1] for n in dict.fromkeys(numbers)]


def _edit(
    memory: ExperienceMemory,
    words: dict,
    candidate_id: str,
    number: int,
    ask: Callable[[str], str],
    say: Callable[[str], None],
) -> None:
    current = memory.pending.load().find(candidate_id)
    if current is None:
        return
    say(words["edit"].format(n=number))
    changes: dict[str, object] = {}
    for field_name, label in words["fields"].items():
        value = getattr(current, field_name)
        shown = "; ".join(value) if isinstance(value, list) else value
        answer = ask(f"  {label} [{shown}]: ").strip()
        if answer:
            changes[field_name] = (
                [part.strip() for part in answer.split(";") if part.strip()] if field_name == "alternatives" else answer
            )
    if changes:
        try:
            memory.edit(candidate_id, changes)
        except NiniError as exc:
            say(f"{exc.code}: {exc.message}")
