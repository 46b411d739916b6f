"""How a turn's progress reads in a terminal or a notebook cell (``nini ask``, ``%%nini``)."""

from __future__ import annotations

from typing import Any

LANGUAGES = {"run_code": "Python", "run_r_code": "R"}


def progress_line(kind: str, data: dict[str, Any]) -> str | None:
    """One short line for a progress event of a turn (tool, language, label, duration); None for
    events that print no line."""
    language = LANGUAGES.get(str(data.get("name")))
    if kind == "tool_call":
        arguments = data.get("arguments") or {}
        label = arguments.get("label") or arguments.get("path") or arguments.get("name") or ""
        return f"→ {data.get('name')}" + (f" [{label}]" if label else "") + (f" · {language}" if language else "")
    if kind == "tool_result":
        if data.get("success"):
            return f"✓ {data.get('name')} ({(language + ', ') if language else ''}{data.get('duration_ms')} ms)"
        error = data.get("error") or {}
        return f"✗ {data.get('name')}: {error.get('code')}: {str(error.get('message', ''))[:200]}"
    if kind == "task_summary":
        return f"↳ {data.get('command')}: {data.get('summary')}"
    return None
