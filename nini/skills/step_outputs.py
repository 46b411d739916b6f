"""What a step's ``code_execution`` event carries of the run's outputs, so a viewer (the sidebar)
shows them as a notebook would: streams and displays in their order, a DataFrame's HTML table,
Markdown, the error with its traceback. The store keeps the outputs whole; an event carries a
bounded copy, because every open session replays its events and a chatty step must stay cheap.
"""

from __future__ import annotations

from typing import Any

EVENT_OUTPUT_CHARS = 4000  # of stdout, of stderr and of each stream output or traceback, in each event
# HTML and Markdown of all an event's displays together; past it a display keeps only its text
# (a DataFrame's text twin), so one wide table cannot make every replay of the session slow
EVENT_RICH_CHARS = 60_000
# what a viewer shows of a display: images (and PDF) are the step's charts, shown from their files
SHOWN_TYPES = ("text/html", "text/markdown", "text/plain")
CHART_TYPES = ("image/", "application/pdf")
NOTE_PREFIX = "nini: "  # nini's own lines in a run's stderr (a variable copied, an output left out)


def preview(text: Any, limit: int = EVENT_OUTPUT_CHARS) -> str:
    """``text`` cut to ``limit`` characters, its start and its end kept."""
    text = text if isinstance(text, str) else ""
    if len(text) <= limit:
        return text
    head = limit * 3 // 4
    return f"{text[:head]}\n[... {len(text) - limit} characters left out ...]\n{text[-(limit - head) :]}"


def event_outputs(outputs: Any, stderr: Any) -> list[dict[str, Any]]:
    """The nbformat ``outputs`` of a run as its event carries them, with nini's notes from ``stderr``
    (which the outputs lack) as a last stderr stream. Empty when the run recorded no outputs (an R
    step): a viewer then shows the event's ``stdout`` and ``stderr``."""
    shown: list[dict[str, Any]] = []
    rich_left = EVENT_RICH_CHARS
    for output in outputs if isinstance(outputs, list) else []:
        kind = output.get("output_type") if isinstance(output, dict) else None
        if kind == "stream":
            name = "stderr" if output.get("name") == "stderr" else "stdout"
            shown.append({"output_type": "stream", "name": name, "text": preview(_text(output.get("text")))})
        elif kind in ("display_data", "execute_result"):
            data, rich_left = _display(output, rich_left)
            if data:
                shown.append({"output_type": kind, "data": data})
        elif kind == "error":
            traceback = [line for line in output.get("traceback") or [] if isinstance(line, str)]
            shown.append(
                {
                    "output_type": "error",
                    "ename": str(output.get("ename", "Error")),
                    "evalue": preview(str(output.get("evalue", ""))),
                    "traceback": preview("\n".join(traceback)).split("\n") if traceback else [],
                }
            )
    notes = _notes(stderr, shown)
    if shown and notes:
        shown.append({"output_type": "stream", "name": "stderr", "text": preview(notes)})
    return shown


def _display(output: dict[str, Any], rich_left: int) -> tuple[dict[str, str], int]:
    """The shown part of a display (nothing for a chart) and the rich characters left after it."""
    bundle = given if isinstance(given := output.get("data"), dict) else {}
    if (output.get("metadata") or {}).get("nini") or any(m.startswith(CHART_TYPES) for m in bundle):
        return {}, rich_left  # a chart of the run: the viewer shows it from its file
    data = {mime: _text(bundle[mime]) for mime in SHOWN_TYPES if mime in bundle}
    rich = sum(len(text) for mime, text in data.items() if mime != "text/plain")
    if rich > rich_left:
        data = {"text/plain": data["text/plain"]} if "text/plain" in data else {}
    else:
        rich_left -= rich
    if "text/plain" in data:
        data["text/plain"] = preview(data["text/plain"])
    return data, rich_left


def _notes(stderr: Any, shown: list[dict[str, Any]]) -> str:
    """nini's lines of ``stderr`` that no stream output of the run has already."""
    streams = "".join(o["text"] for o in shown if o["output_type"] == "stream")
    lines = _text(stderr).splitlines(keepends=True)
    return "".join(line for line in lines if line.startswith(NOTE_PREFIX) and line not in streams)


def _text(value: Any) -> str:
    """An nbformat text field (a string, or a list of lines)."""
    if isinstance(value, list):
        return "".join(str(part) for part in value)
    return value if isinstance(value, str) else ""
