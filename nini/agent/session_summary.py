"""The running summary of a session's older turns: what falls out of the model's context is folded
into it, so a long analysis keeps its early decisions (which column was dropped, which dataset was
made) instead of forgetting them.

The summary has two parts. The *ledger* is deterministic and always there: per folded turn, the
user's request, the datasets its steps made, the steps that failed and the first sentence of its
answer, kept under a token bound by leaving out the least telling notes of the oldest turns first
(a dataset made outlives a request, a request outlives an answer). The *narrative* is the model's
(purpose ``summarize``, the task-summary path's timeout), written from the previous narrative and
the folded turns; it is kept only when every number in it appears in what it summarizes
(``numbers_grounded``), else the ledger stands alone. Both are stored with the session
(``session_context``) and given to the model ahead of the recent turns.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from nini.tokens import count_tokens

if TYPE_CHECKING:
    from nini.agent.llm import ModelRouter

log = logging.getLogger("nini.agent.session_summary")

# Priority of a ledger note when the ledger must shrink: the lowest go first, oldest turn first.
PRIORITY = {"dataset": 3, "request": 2, "failed": 1, "answer": 0}
NOTE_CHARS = 200  # one note's text at most
LINE_TOKENS = 4  # what a note adds to the text beside its own words ("; ", its turn's line start)
PARSE_CHARS = 200_000  # a stored tool output or arguments longer than this is not parsed for notes
NARRATIVE_MAX_TOKENS = 600  # what the model may write
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")

WORDS = {
    "en": {
        "title": "Earlier in this session ({turns} turns summarized)",
        "request": "asked: {text}",
        "dataset": "made dataset {name} (step: {label})",
        "failed": "step failed: {label}: {error}",
        "answer": "answered: {text}",
        "turn": "turn {n}",
        "left_out": "({count} older notes left out)",
    },
    "zh": {
        "title": "本会话早前内容（已概括 {turns} 轮）",
        "request": "提问：{text}",
        "dataset": "生成数据集 {name}（步骤：{label}）",
        "failed": "步骤失败：{label}：{error}",
        "answer": "回答：{text}",
        "turn": "第 {n} 轮",
        "left_out": "（省略了 {count} 条更早的记录）",
    },
}

NARRATIVE_PROMPT = """You keep the running summary of a long data-analysis conversation whose older turns \
no longer fit the model's context. Given the previous summary and the turns that now fall out, write the \
new summary: the decisions that still matter later (columns dropped or renamed, rows filtered, outliers \
removed, datasets made and from what), the findings with their numbers, and what failed. Use only numbers \
that appear in the text you are given. At most 12 short lines, no preamble."""


@dataclass
class Summary:
    """A session's summary as stored (``session_context.summary``)."""

    notes: list[dict[str, Any]] = field(default_factory=list)  # {"turn", "kind", "text"}
    left_out: int = 0
    narrative: str | None = None

    @classmethod
    def of(cls, stored: dict[str, Any] | None) -> Summary:
        stored = stored or {}
        notes = [n for n in stored.get("notes") or [] if isinstance(n, dict) and n.get("kind") in PRIORITY]
        narrative = stored.get("narrative")
        return cls(notes, int(stored.get("left_out") or 0), narrative if isinstance(narrative, str) else None)

    def to_dict(self) -> dict[str, Any]:
        return {"notes": self.notes, "left_out": self.left_out, "narrative": self.narrative}

    def text(self, turns: int, language: str) -> str:
        """What the model (and the sidebar's collapsed note) is given."""
        words = WORDS.get(language, WORDS["en"])
        lines = [words["title"].format(turns=turns)]
        if self.narrative:
            lines.append(self.narrative.strip())
        if self.left_out:
            lines.append(words["left_out"].format(count=self.left_out))
        by_turn: dict[int, list[str]] = {}
        for note in self.notes:
            by_turn.setdefault(int(note["turn"]), []).append(note["text"])
        lines += [f"- {words['turn'].format(n=n)}: " + "; ".join(texts) for n, texts in sorted(by_turn.items())]
        return "\n".join(lines)

    def bounded(self, max_tokens: int, turns: int, language: str) -> Summary:
        """This summary with its least telling notes left out until its text fits ``max_tokens``.

        Each note's tokens are counted once (kept in the note) and the text's estimated from them,
        so shrinking a ledger of thousands of notes costs one count of each new note, not a count of
        the whole text per note dropped; the result is checked with a real count of its text."""
        for note in self.notes:
            if not isinstance(note.get("tokens"), int):
                note["tokens"] = count_tokens(note["text"]) + LINE_TOKENS
        order = sorted(range(len(self.notes)), key=lambda i: (PRIORITY[self.notes[i]["kind"]], self.notes[i]["turn"]))
        kept, dropped = self, 0
        while (excess := count_tokens(kept.text(turns, language)) - max_tokens) > 0:
            if dropped >= len(order):
                return Summary([], self.left_out + len(self.notes), None)  # a narrative alone over the bound goes too
            while dropped < len(order) and excess > 0:
                excess -= self.notes[order[dropped]]["tokens"]
                dropped += 1
            gone = set(order[:dropped])
            notes = [note for i, note in enumerate(self.notes) if i not in gone]
            kept = Summary(notes, self.left_out + dropped, self.narrative)
        return kept


def turn_notes(rows: list[dict[str, Any]], turn: int, language: str) -> list[dict[str, Any]]:
    """The ledger notes of one turn's stored messages (in order)."""
    words = WORDS.get(language, WORDS["en"])
    notes: list[dict[str, Any]] = []
    calls: dict[str, dict[str, Any]] = {}  # the model's call id -> its name and arguments
    for row in rows:
        role, content, meta = row["role"], row.get("content") or "", row.get("metadata") or {}
        if role == "user" and content.strip():
            notes.append(_note(turn, "request", words["request"].format(text=_clip(content))))
        elif role == "assistant":
            for call in meta.get("tool_calls") or []:
                calls[str(call.get("id"))] = {"name": call.get("name"), "arguments": _parsed(call.get("arguments"))}
            if content.strip() and not meta.get("tool_calls"):
                notes.append(_note(turn, "answer", words["answer"].format(text=_clip(_first_sentence(content)))))
        elif role == "tool":
            call = calls.get(str(row.get("tool_call_id")), {"name": meta.get("name"), "arguments": {}})
            notes += _step_notes(call, _parsed(content), turn, words)
    return notes


def _step_notes(call: dict[str, Any], result: dict[str, Any], turn: int, words: dict[str, str]) -> list[dict[str, Any]]:
    arguments = call.get("arguments") or {}
    label = _clip(str(arguments.get("label") or call.get("name") or "?"), 80)
    if result.get("success") is False:
        found = result.get("error")
        error: dict[str, Any] = found if isinstance(found, dict) else {}
        message = _clip(f"{error.get('code', '')} {error.get('message', '')}".strip() or "?", 120)
        return [_note(turn, "failed", words["failed"].format(label=label, error=message))]
    name = arguments.get("save_as") or (arguments.get("name") if call.get("name") == "load_dataset" else None)
    if isinstance(name, str) and name.strip():
        return [_note(turn, "dataset", words["dataset"].format(name=_clip(name, 80), label=label))]
    return []


def _note(turn: int, kind: str, text: str) -> dict[str, Any]:
    return {"turn": turn, "kind": kind, "text": text}


def _parsed(text: Any) -> dict[str, Any]:
    """A stored JSON object, or {} (too long to parse here, not JSON, or not an object)."""
    if isinstance(text, dict):
        return text
    if not isinstance(text, str) or len(text) > PARSE_CHARS:
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _clip(text: str, chars: int = NOTE_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= chars else flat[: chars - 1] + "…"


def _first_sentence(text: str) -> str:
    match = re.search(r"^(.+?[.!?。！？])(\s|$)", text.strip(), re.S)
    return match.group(1) if match else text


def numbers_grounded(summary: str, sources: str) -> bool:
    """Whether every number in ``summary`` appears in ``sources`` (the guard on a model's summary:
    a number the turns never had is invented). Turn numbers the summary gives are counted too."""
    known = {_plain(n) for n in _NUMBER.findall(sources)}
    return all(_plain(n) in known for n in _NUMBER.findall(summary))


def _plain(number: str) -> str:
    return number.replace(",", "")


async def narrative(router: ModelRouter | None, previous: str | None, folded: str, *, timeout_s: float) -> str | None:
    """The model's new summary of ``folded`` (the turns falling out, as text) after ``previous``;
    None when no model answers usably in ``timeout_s`` or its numbers are not all in what it was shown."""
    if router is None:
        return None
    try:
        router.chain("summarize")
    except Exception:  # no model routed: the ledger alone
        return None
    shown = f"Previous summary:\n{previous or '(none)'}\n\nTurns now falling out:\n{folded}"
    messages = [{"role": "system", "content": NARRATIVE_PROMPT}, {"role": "user", "content": shown}]
    try:
        completion = await asyncio.wait_for(
            router.complete("summarize", messages, temperature=0, max_tokens=NARRATIVE_MAX_TOKENS, timeout_s=timeout_s),
            timeout_s,
        )
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # the model failed or timed out: the ledger alone
        log.warning("the session summary's model part is not available (%s); the ledger stands alone", exc)
        return None
    text = (completion.text or "").strip()
    if not text:
        return None
    if not numbers_grounded(text, shown):
        log.warning("the model's session summary has numbers its turns do not; the ledger stands alone")
        return None
    return text
