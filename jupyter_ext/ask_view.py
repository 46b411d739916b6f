"""What ``%%nini`` shows while the agent works, on the cell's thread.

Each tool call is one block, shown when it starts and updated in place when it ends (IPython
display updates, so the cell's output stays one readable transcript and a saved notebook keeps
it): a collapsible HTML ``<details>`` with the code highlighted, its stdout and stderr (bounded),
its charts inline, a task's summary, or a proposed cell ready to copy; every block has a
text/plain form too (terminals, frontends without HTML). The model's text streams as Markdown,
shown as sanitized HTML (``nini.safe_html``); while the model thinks, a line counts the seconds.
Outside a Jupyter frontend (``live`` false) the same is printed as text.
"""

from __future__ import annotations

import base64
import html
import sys
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nini.agent.runner import RunResult
    from nini.rooted import RootedDir

OUTPUT_CHARS = 4000  # of a step's stdout and of its stderr, in the cell
STREAM_REFRESH_S = 0.25  # the streaming text is rendered (Markdown, sanitized) at most this often: each render costs ms
ENDINGS = {
    "finished": "finished",
    "max_iterations": "stopped at max iterations",
    "tool_failures": "stopped after repeated tool failures",
    "canceled": "cancelled",
    "error": "stopped by an error",
}


@dataclass
class Step:
    """One tool call as the cell shows it."""

    name: str
    arguments: dict[str, Any]
    handle: Any = None  # its display
    ended: dict[str, Any] | None = None  # the tool_result's data
    stdout: str = ""
    stderr: str = ""
    charts: list[str] = field(default_factory=list)  # workspace paths of its PNG charts
    summary: str = ""  # a task:* tool's summary
    table: dict[str, Any] | None = None  # output_df's preview: {columns, rows, shape}

    def code(self) -> tuple[str, str]:
        """(source, language) of what the step runs or proposes."""
        source = self.arguments.get("code") or self.arguments.get("source") or ""
        language = self.arguments.get("language") or ("r" if self.name == "run_r_code" else "python")
        if self.name == "propose_cell" and language == "r" and not source.lstrip().startswith("%%nini_r"):
            source = "%%nini_r\n" + source
        return str(source), "markdown" if language == "markdown" else ("r" if language == "r" else "python")

    def headline(self) -> str:
        label = self.arguments.get("label") or ""
        label = f" [{label}]" if label else ""
        if self.ended is None:
            return f"→ {self.name}{label} · running…"
        if self.ended.get("success"):
            return f"✓ {self.name}{label} ({self.ended.get('duration_ms')} ms)"
        error = self.ended.get("error") or {}
        return f"✗ {self.name}{label}: {error.get('code')}: {str(error.get('message', ''))[:200]}"

    def plain(self) -> str:
        source, _language = self.code()
        lines = [self.headline()]
        if self.name == "propose_cell":
            lines.append(f"Proposed cell ({self.arguments.get('language', 'python')}); copy it into a new cell:")
        if source:
            lines += ["    " + line for line in source.rstrip("\n").split("\n")]
        for title, text in (("stdout", self.stdout), ("stderr", self.stderr)):
            if text:
                lines += [f"  {title}:", *("    " + line for line in _bounded(text).rstrip("\n").split("\n"))]
        if self.table:
            rows, columns = self.table.get("shape") or ["?", "?"]
            lines.append(
                f"  table: {rows} rows × {columns} columns ({', '.join(self.table.get('columns') or [])[:200]})"
            )
        if self.summary:
            lines.append(f"  ↳ {self.summary}")
        return "\n".join(lines)

    def html(self, files: RootedDir) -> str:
        source, language = self.code()
        parts = [f"<summary><code>{html.escape(self.headline())}</code></summary>"]
        if self.name == "propose_cell":
            parts.append(
                f"<p>Proposed cell ({html.escape(str(self.arguments.get('language', 'python')))}); "
                "copy it into a new cell:</p>"
            )
        if source:
            parts.append(_highlighted(source, language))
        for title, text in (("stdout", self.stdout), ("stderr", self.stderr)):
            if text:
                parts.append(f"<div>{title}</div><pre>{html.escape(_bounded(text))}</pre>")
        if self.table:
            parts.append(_table_html(self.table))
        parts += [img for path in self.charts if (img := _img(files, path))]
        if self.summary:
            parts.append(f"<p>↳ {html.escape(self.summary)}</p>")
        failed = self.ended is not None and not self.ended.get("success")
        opened = " open" if failed or self.name == "propose_cell" else ""
        return f"<details class='nini-step'{opened}>{''.join(parts)}</details>"


class AskView:
    def __init__(self, files: RootedDir, *, live: bool) -> None:
        self.files = files  # the session workspace, where the charts are
        self.live = live  # displays can be updated in place (a Jupyter frontend), else text is printed
        self.started = time.monotonic()
        self.steps: dict[str, Step] = {}
        self.text = ""  # the model's text of the current step
        self.handle: Any = None  # the display showing it
        self.shown_at = 0.0  # when that display was last refreshed
        self.answer_shown = False
        self.thinking: Any = None  # the "thinking… N s" display, while the model is asked
        self.asked_at: float | None = time.monotonic()  # when the model was last asked (None: not waiting)
        self.saved: list[str] = []  # datasets the run saved (save_as), in order

    def show(self, event: dict[str, Any]) -> None:
        kind, data = event["type"], event.get("data") or {}
        step = self.steps.get(event.get("tool_call_id") or "")
        if kind != "user_message":
            self._stop_thinking()
        if kind == "assistant_delta":
            self._stream(data.get("text", ""))
        elif kind == "assistant_message":
            if data.get("tool_calls"):  # text before tool calls: this step is over
                self._end_step()
            else:
                self.answer_shown = bool(self.text)
        elif kind == "tool_call":
            self._end_line()
            step = self.steps[event.get("tool_call_id") or str(len(self.steps))] = Step(
                data.get("name", "?"), data.get("arguments") or {}
            )
            self._render(step, new=True)
        elif step is not None and kind == "code_execution":
            step.stdout, step.stderr = data.get("stdout") or "", data.get("stderr") or ""
            step.charts = [p for p in data.get("artifacts") or [] if p.endswith(".png")]
            step.table = data.get("table") if isinstance(data.get("table"), dict) else None
            self.saved += [name for name in data.get("datasets_saved") or [] if name not in self.saved]
        elif step is not None and kind == "tool_result":
            step.ended = data
            self._render(step)
            self.asked_at = time.monotonic()  # the model is asked again
        elif kind == "task_summary":
            task = next((s for s in reversed(self.steps.values()) if s.name == data.get("command")), None)
            if task is not None:
                task.summary = str(data.get("summary") or "")
                self._render(task)

    def tick(self) -> None:
        """While the model is asked (nothing streams yet): "nini: thinking… N s", updated in place."""
        if not self.live or self.asked_at is None or self.text:
            return
        line = f"nini: thinking… {time.monotonic() - self.asked_at:.0f} s"
        from IPython.display import display

        if self.thinking is None:
            self.thinking = display({"text/plain": line}, raw=True, display_id=True)
        else:
            self.thinking.update({"text/plain": line}, raw=True)

    def finish(self, result: RunResult, changes: str) -> None:
        """The answer, then the last status line (how the run ended, its time and steps) and what
        changed in the user's namespace."""
        from IPython.display import display

        self._stop_thinking()
        self._end_line()
        if result.answer and self.live:
            bundle = markdown(result.answer)
            if self.answer_shown and self.handle is not None:
                self.handle.update(bundle, raw=True)  # the streamed text, now whole
            else:
                display(bundle, raw=True)
        elif self.live and self.handle is not None:  # no answer (cancelled, failed): the text streamed so far, whole
            self.handle.update(markdown(self.text), raw=True)
        elif result.answer and not self.answer_shown:
            print(result.answer)
        if result.error and result.ended_by != "canceled":
            print(f"nini: {result.error.get('code')}: {result.error.get('message')}", file=sys.stderr)
        if result.ended_by == "canceled":
            print("nini: the run was cancelled (recorded as canceled)", file=sys.stderr)
        steps = len(self.steps)
        print(
            f"nini: {ENDINGS.get(result.ended_by, result.ended_by)} in {time.monotonic() - self.started:.1f} s, "
            f"{steps} step{'s' if steps != 1 else ''}" + (f"; {changes}" if changes else "")
        )
        for note in result.notes:  # after the answer: what the stop hooks did (a skill enhanced, ...)
            print(note)

    def _render(self, step: Step, *, new: bool = False) -> None:
        if not self.live:
            if step.ended is not None or step.summary:
                print(step.plain())
            return
        from IPython.display import display

        bundle = {"text/plain": step.plain(), "text/html": step.html(self.files)}
        if new or step.handle is None:
            step.handle = display(bundle, raw=True, display_id=True)
        else:
            step.handle.update(bundle, raw=True)

    def _stream(self, piece: str) -> None:
        from IPython.display import display

        self.text += piece
        self.asked_at = None
        if not self.live:
            print(piece, end="", flush=True)
        elif self.handle is None:
            self.handle = display(markdown(self.text), raw=True, display_id=True)
            self.shown_at = time.monotonic()
        elif time.monotonic() - self.shown_at >= STREAM_REFRESH_S:
            self.handle.update(markdown(self.text), raw=True)
            self.shown_at = time.monotonic()

    def _stop_thinking(self) -> None:
        if self.thinking is not None:
            self.thinking.update({"text/plain": ""}, raw=True)
            self.thinking = None

    def _end_step(self) -> None:
        self._end_line()
        if self.handle is not None:
            self.handle.update(markdown(self.text), raw=True)  # whole, whatever the last refresh showed
        self.text, self.handle = "", None

    def _end_line(self) -> None:
        if not self.live and self.text and not self.text.endswith("\n"):
            print()
            self.text += "\n"


def markdown(text: str) -> dict[str, str]:
    """The model's Markdown as a display: sanitized HTML (``nini.safe_html``), and the text itself
    as the plain form (terminals, frontends without HTML).

    Never ``text/markdown`` nor unsanitized HTML: JupyterLab trusts the outputs a live session
    produces, so it would render the model's raw HTML, scripts and all, on the Jupyter origin.
    """
    from nini.safe_html import markdown_html

    return {"text/html": f"<div class='nini-answer'>{markdown_html(text)}</div>", "text/plain": text}


def _bounded(text: str) -> str:
    return (
        text if len(text) <= OUTPUT_CHARS else f"{text[:OUTPUT_CHARS]}\n… {len(text) - OUTPUT_CHARS:,} more characters"
    )


def _table_html(table: dict[str, Any]) -> str:
    """output_df's preview as an HTML table (its first rows; the shape says how many there are)."""
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in table.get("columns") or [])
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in row) + "</tr>" for row in table.get("rows") or []
    )
    rows, columns = table.get("shape") or ["?", "?"]
    return (
        f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table><div>{rows} rows × {columns} columns</div>"
    )


def _highlighted(source: str, language: str) -> str:
    """The code as HTML with inline colours (no stylesheet needed in a saved notebook)."""
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import get_lexer_by_name

    lexer = get_lexer_by_name({"r": "r", "markdown": "markdown"}.get(language, "python"))
    return highlight(source, lexer, HtmlFormatter(noclasses=True, nobackground=True))


def _img(files: RootedDir, path: str) -> str | None:
    """A chart of the workspace as an inline image, read without following links; None if refused."""
    from nini.errors import NiniError

    try:
        data = files.read_bytes(path, limit=20 * 1024 * 1024)
    except NiniError:
        return None
    return f"<img src='data:image/png;base64,{base64.b64encode(data).decode('ascii')}' style='max-width:100%'/>"
