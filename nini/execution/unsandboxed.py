"""The one warning line a command that runs code prints when that code runs without the sandbox.

Without bubblewrap (or with ``execution.sandbox`` none) agent code runs with the user's own rights;
only ``nini doctor`` used to say so. The CLI's commands that run code (run-code, run-r, ask, mcp)
print this line on stderr once per command, unless ``execution.warn_unsandboxed`` is off.
"""

from __future__ import annotations

from nini.config import ExecutionSettings
from nini.execution.sandbox import probe_bwrap

WORDS = {
    "zh": (
        "warning: 代码在沙箱之外运行：{why}；请安装 bubblewrap（apt install bubblewrap），或查看 nini doctor",
        {
            "setting": "execution.sandbox 设为 none",
            "missing": "没有安装 bubblewrap",
            "broken": "bubblewrap 在这里无法运行",
        },
    ),
    "en": (
        "warning: code runs without the sandbox: {why}; install bubblewrap (apt install bubblewrap) or see nini doctor",
        {
            "setting": "execution.sandbox is none",
            "missing": "bubblewrap is not installed",
            "broken": "bubblewrap cannot run here",
        },
    ),
}


def unsandboxed_warning(execution: ExecutionSettings, language: str) -> str | None:
    """The line in ``language``, or None when code runs sandboxed or the warning is turned off.
    ``execution.sandbox`` bwrap never runs code unsandboxed (a kernel refuses to start without it)."""
    if not execution.warn_unsandboxed or execution.sandbox == "bwrap":
        return None
    if execution.sandbox == "none":
        why = "setting"
    else:
        ok, detail = probe_bwrap()
        if ok:
            return None
        why = "missing" if detail.startswith("bwrap not found") else "broken"
    line, reasons = WORDS.get(language, WORDS["en"])
    return line.format(why=reasons[why])
