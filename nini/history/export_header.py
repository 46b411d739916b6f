"""The provenance header every export starts with: whose code this is, where and when it ran, and
which steps the static policy flags.

An exported notebook re-runs the agent's code wherever it is opened, so its first cell says, in
``ui.language``, that the code was written by nini's agent (a model) and ran in nini's sandbox,
when, which steps did not run in the sandbox, and which steps the static policy flags: Python
steps are checked again now (a rule added since, or a run with ``execution.python_policy`` off,
shows up) by the ``check`` the caller passes, ``nini.execution.policy.find_violations`` (the store
knows no callers: history imports nothing of execution); R steps by what their record says (R's
own parser would have to start in this process to check them again). A plain export then warns
that its cells run unsandboxed, as the reader; a sandboxed one says they go to nini's sandbox
(``%%nini_run``). Agent-written text (labels, the policy's quotes of code) is shown as inline code.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from nini.errors import ErrorCode


class Finding(Protocol):
    """One thing the static policy refuses in a step's code (``nini.execution.policy.Violation``)."""

    def message(self, language: str = "en") -> str: ...


PolicyCheck = Callable[[str, Path], Sequence[Finding]]  # (code, workspace) -> findings: find_violations

AGENT_CODE_TAG = "nini-agent-code"  # the nbformat cell tag on every step the agent wrote
Mode = Literal["notebook", "sandboxed", "markdown"]
_BACKTICKS = re.compile(r"`+")

WORDING: dict[str, dict[str, str]] = {
    "zh": {
        "written": "**这些代码由 nini 的智能体（语言模型）编写**，不是你写的。标记为 `{tag}` 的单元是它的步骤，"
        "{when}在 nini 的沙箱中运行（会话 `{session}`；沙箱：无网络，只有会话工作区可写）。",
        "when": "于 {start} 至 {end}（UTC）",
        "when_one": "于 {start}（UTC）",
        "when_none": "",
        "notebook": "**直接运行这些单元时，它们在本笔记本的内核中以你的身份运行，没有沙箱**：能读写你的文件、访问网络和"
        "环境变量。在沙箱里没有作用的代码在这里可能会起作用。运行前请先读代码，或用 "
        "`nini sessions export --sandboxed` 导出在 nini 沙箱中重新运行的版本。",
        "sandboxed": "这些单元用 `%%nini_run` 把代码交给一个新的 nini 会话，在 nini 的沙箱内核中运行，和原来一样受限，"
        "并像智能体的步骤一样被记录；本内核不执行智能体的代码（需要安装 nini）。",
        "markdown": "把这里的代码复制到你自己的 Python 或 R 中运行，就是以你的身份、在沙箱之外运行。",
        "outside": "以下步骤当时不在 nini 的沙箱中运行：",
        "flagged": "静态策略标记的步骤：",
        "no_flags": "静态策略没有标记任何步骤（它只在运行前检查代码文本，边界是沙箱）。",
        "refused": "被拒绝，未运行",
        "flagged_now": "运行过，但现在的策略会拒绝它",
        "step": "第 {n} 步{label}（{language}）",
        "flag_line": "- {step}（{state}）：{reasons}",
        "outside_line": "- {step}：{where}",
        "user_kernel": "在用户的笔记本内核中",
        "unsandboxed": "未启用沙箱",
        "gateway": "在 Kernel Gateway 的沙箱中",
    },
    "en": {
        "written": "**This code was written by nini's agent (a language model)**, not by you. The cells tagged `{tag}` "
        "are its steps; they ran in nini's sandbox{when} (session `{session}`; the sandbox has no network "
        "and only the session's workspace is writable).",
        "when": " from {start} to {end} UTC",
        "when_one": " at {start} UTC",
        "when_none": "",
        "notebook": "**Run as they are, these cells run in this notebook's kernel, as you, without "
        "a sandbox**: they can "
        "read and write your files and reach the network and your environment. Code that did nothing in "
        "the sandbox may act here. Read it before you run it, or export with "
        "`nini sessions export --sandboxed` for a notebook that re-runs it in nini's sandbox.",
        "sandboxed": "These cells hand their code to a fresh nini session with `%%nini_run`: it runs in nini's "
        "sandboxed kernel, as contained as the first run, and is recorded like any agent step; this "
        "kernel runs none of the agent's code (nini must be installed).",
        "markdown": "Copying this code into your own Python or R runs it as you, outside any sandbox.",
        "outside": "These steps did not run in nini's sandbox:",
        "flagged": "Steps the static policy flags:",
        "no_flags": "The static policy flags no step (it reads the code before it runs; the sandbox is the boundary).",
        "refused": "refused, never ran",
        "flagged_now": "ran, but the policy would refuse it now",
        "step": "step {n}{label} ({language})",
        "flag_line": "- {step} ({state}): {reasons}",
        "outside_line": "- {step}: {where}",
        "user_kernel": "in the user's notebook kernel",
        "unsandboxed": "with no sandbox",
        "gateway": "in the Kernel Gateway's sandbox",
    },
}


@dataclass(frozen=True)
class Flag:
    """A step the static policy flags: ``ran`` False when the policy refused it at the time."""

    step: int
    execution: dict[str, Any]
    reasons: tuple[str, ...]
    ran: bool


def flagged_steps(
    executions: list[dict[str, Any]], workspace: Path, language: str = "en", *, check: PolicyCheck
) -> list[Flag]:
    """The steps the policy refused when they were run (their record's reasons), then the Python
    steps it would refuse now (checked again here with ``check``), in step order."""
    flags = []
    for number, execution in enumerate(executions, 1):
        error = execution.get("error") or {}
        if execution.get("status") == "failed" and error.get("code") == ErrorCode.POLICY_VIOLATION.value:
            reasons = tuple(line for line in (error.get("message") or "").splitlines() if line.strip())
            flags.append(Flag(number, execution, reasons, ran=False))
        elif execution.get("language") == "python":
            found = check(execution.get("code") or "", workspace)
            if found:
                flags.append(Flag(number, execution, tuple(v.message(language) for v in found), ran=True))
    return flags


def provenance_header(
    bundle: dict[str, Any],
    isolation: dict[str, str | None],
    workspace: Path,
    language: str,
    mode: Mode,
    *,
    check: PolicyCheck,
) -> str:
    """The header's Markdown (no title): who wrote the code, where and when it ran, what is flagged
    (``check``: the static policy), and what running it here means for ``mode``. ``isolation`` maps
    execution ids to where they ran (the ``code_execution`` events say: sandbox, unsandboxed,
    gateway, user_kernel)."""
    words = WORDING.get(language, WORDING["zh"])
    executions = bundle["executions"]
    lines = [
        words["written"].format(tag=AGENT_CODE_TAG, session=bundle["session"]["id"], when=_when(executions, words)),
        "",
        words[mode],
    ]
    outside = [(n, e) for n, e in enumerate(executions, 1) if isolation.get(e["id"]) not in (None, "sandbox")]
    if outside:
        lines += ["", words["outside"]]
        lines += [
            words["outside_line"].format(
                step=_step(n, e, words), where=words.get(str(isolation[e["id"]]), isolation[e["id"]])
            )
            for n, e in outside
        ]
    flags = flagged_steps(executions, workspace, language, check=check)
    lines += ["", words["flagged"] if flags else words["no_flags"]]
    for flag in flags:
        lines.append(
            words["flag_line"].format(
                step=_step(flag.step, flag.execution, words),
                state=words["flagged_now"] if flag.ran else words["refused"],
                reasons="; ".join(_code(reason) for reason in flag.reasons),
            )
        )
    return "\n".join(lines)


def _when(executions: list[dict[str, Any]], words: dict[str, str]) -> str:
    times = sorted(_minute(e.get("created_at")) for e in executions if e.get("created_at"))
    if not times:
        return words["when_none"]
    if times[0] == times[-1]:
        return words["when_one"].format(start=times[0])
    return words["when"].format(start=times[0], end=times[-1])


def _minute(value: Any) -> str:
    text = value.isoformat() if hasattr(value, "isoformat") else str(value)
    return text[:16].replace("T", " ")


def _step(number: int, execution: dict[str, Any], words: dict[str, str]) -> str:
    label = f" {_code(execution['label'])}" if execution.get("label") else ""
    return words["step"].format(n=number, label=label, language=execution.get("language"))


def _code(text: str) -> str:
    """``text`` as one line of inline code: agent-written text shows as text, never as Markdown."""
    flat = " ".join(str(text).split())
    fence = "`" * (max((len(run) for run in _BACKTICKS.findall(flat)), default=0) + 1)
    pad = " " if flat.startswith("`") or flat.endswith("`") else ""
    return f"{fence}{pad}{flat}{pad}{fence}"
