"""Capture one ``shell.run_cell`` of this process as a kernel's iopub messages would report it.

``InProcessExecutor`` runs agent code in the notebook's own shell, where nothing goes over iopub:
these context managers route stdout, stderr, ``display(...)``, the last expression's value and
tracebacks into an ``Exchange`` through ``python_runner.absorb``, in order, so the outcome is
built exactly as for a kernel. Nothing reaches the cell the code runs under.
"""

from __future__ import annotations

import base64
import contextlib
import io
import sys
from collections.abc import Callable, Iterator
from typing import Any

from IPython.core.displayhook import DisplayHook
from IPython.core.displaypub import DisplayPublisher

from nini.execution.python_runner import Exchange, absorb

_BINARY_MIME = frozenset({"image/png", "image/jpeg", "image/gif", "application/pdf"})


def ends_quiet(code: str) -> bool:
    """A trailing ';' hides the last expression's value, as in a notebook."""
    try:
        quiet: bool = DisplayHook.semicolon_at_end_of_expression(code)
        return quiet
    except Exception:  # tokenize errors: the run reports the SyntaxError
        return False


@contextlib.contextmanager
def captured(shell: Any, exchange: Exchange, *, quiet: bool) -> Iterator[None]:
    """Route stdout, stderr, displays, the last expression's value and tracebacks into ``exchange``,
    as the kernel's iopub messages would have been, in order."""

    def sink(kind: str, content: dict[str, Any]) -> None:
        absorb(exchange, {"msg_type": kind, "content": content})

    def show_traceback(etype: type, evalue: BaseException, stb: list[str]) -> None:
        sink("error", {"ename": etype.__name__, "evalue": str(evalue), "traceback": list(stb)})

    saved = sys.stdout, sys.stderr, sys.displayhook, shell.display_pub
    own_traceback = vars(shell).get("_showtraceback")
    sys.stdout, sys.stderr = _Stream("stdout", sink), _Stream("stderr", sink)
    # run_cell's display trap is already active (the magic's cell is running), so it keeps this hook
    sys.displayhook = _DisplayHook(shell, sink, quiet)
    shell.display_pub = _Publisher(sink)
    # ipykernel's _showtraceback would publish the error into the cell
    shell._showtraceback = show_traceback
    try:
        yield
    finally:
        sys.stdout, sys.stderr, sys.displayhook, shell.display_pub = saved
        if own_traceback is None:
            del shell._showtraceback
        else:
            shell._showtraceback = own_traceback


@contextlib.contextmanager
def inline_figures_held(shell: Any) -> Iterator[None]:
    """Keep matplotlib-inline from showing (and closing) the code's figures after the run: collect
    saves them as PNG and SVG artifacts, as in nini's own kernels.

    Filtered when post_execute fires, not before the run: importing pyplot during the run is what
    registers the inline backend's hook.
    """
    events = shell.events
    own_trigger = vars(events).get("trigger")
    trigger = events.trigger

    def trigger_without_flush(event: str, *args: Any, **kwargs: Any) -> Any:
        if event != "post_execute":
            return trigger(event, *args, **kwargs)
        held = [cb for cb in events.callbacks[event] if getattr(cb, "__name__", "") == "flush_figures"]
        for callback in held:
            events.unregister(event, callback)
        try:
            return trigger(event, *args, **kwargs)
        finally:
            for callback in held:
                events.register(event, callback)

    events.trigger = trigger_without_flush
    try:
        yield
    finally:
        if own_trigger is None:
            del events.trigger
        else:
            events.trigger = own_trigger


class _Stream(io.TextIOBase):
    """sys.stdout / sys.stderr during a run."""

    encoding = "utf-8"

    def __init__(self, name: str, sink: Callable[[str, dict[str, Any]], None]) -> None:
        super().__init__()
        self.stream_name = name
        self._sink = sink

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False

    def write(self, text: str) -> int:
        if text:
            self._sink("stream", {"name": self.stream_name, "text": str(text)})
        return len(text)


class _DisplayHook:
    """sys.displayhook during a run: the value of the code's last expression, an execute_result."""

    def __init__(self, shell: Any, sink: Callable[[str, dict[str, Any]], None], quiet: bool) -> None:
        self.shell, self.sink, self.quiet = shell, sink, quiet

    def __call__(self, value: Any = None) -> None:
        if value is None or self.quiet:
            return
        data, metadata = self.shell.display_formatter.format(value)
        content = {"data": _jsonable(data), "metadata": metadata or {}, "execution_count": self.shell.execution_count}
        self.sink("execute_result", content)


class _Publisher(DisplayPublisher):
    """shell.display_pub during a run: ``display(...)`` becomes a display_data output."""

    def __init__(self, sink: Callable[[str, dict[str, Any]], None]) -> None:
        # with a shell it would register event hooks at each run (IPython's __init__ is untyped)
        super().__init__(shell=None)  # type: ignore[no-untyped-call]
        self._sink = sink

    def publish(
        self,
        data: dict[str, Any],
        metadata: dict[str, Any] | None = None,
        source: Any = None,
        *,
        transient: dict[str, Any] | None = None,
        update: bool = False,
        **kwargs: Any,
    ) -> None:
        self._sink("display_data", {"data": _jsonable(data), "metadata": metadata or {}})

    def clear_output(self, wait: bool = False) -> None:
        """Outputs are records here; nothing to clear."""


def _jsonable(data: dict[str, Any]) -> dict[str, Any]:
    """A mime bundle as the kernel would send it: binary types base64 text, others text."""
    out = {}
    for mime, value in data.items():
        if isinstance(value, bytes):
            value = (
                base64.b64encode(value).decode("ascii") if mime in _BINARY_MIME else value.decode("utf-8", "replace")
            )
        out[mime] = value
    return out
