"""Progress in a terminal: a run's (``nini ask``), a notebook's cells (``nini report --execute``),
and a spinner for any other wait (``working``: a step of ``nini run-code``, model calls).

On a terminal (rich decides, and honours ``NO_COLOR``): the answer is rendered as Markdown, re-drawn
as it streams, under a spinner line that counts the seconds while the model thinks or a step runs;
each step's line (tool, language, label, duration) prints above it. Piped or redirected: the plain
text of the answer on stdout as it streams, the step lines on stderr, nothing that moves.
"""

from __future__ import annotations

import contextlib
import re
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

from nini.agent.progress import progress_line

TICK_S = 0.25
LINE_STYLES = {"✓": "green", "✗": "red", "→": "dim", "↳": "cyan"}  # by a progress line's first character


async def print_progress(subscription: Any, started: float | None = None) -> None:
    """Print the run's events until its ``done``: live on a terminal, plain otherwise. The first
    "thinking" counts from ``started`` (``time.monotonic()`` when the question was asked), so the
    time it takes to draw the first frame is not lost from the count."""
    from rich.console import Console

    console = Console(file=sys.stdout)
    if console.is_terminal:
        await _live(subscription, console, time.monotonic() if started is None else started)
    else:
        await _plain(subscription)


async def _plain(subscription: Any) -> None:
    streamed_tail = "\n"
    async for event in subscription:
        kind, data = event["type"], event["data"] or {}
        if kind == "assistant_delta":
            sys.stdout.write(data.get("text", ""))
            sys.stdout.flush()
            streamed_tail = data.get("text", "")[-1:] or streamed_tail
            continue
        if kind == "assistant_message" and data.get("tool_calls") and streamed_tail != "\n":
            sys.stdout.write("\n")
            streamed_tail = "\n"
        line = progress_line(kind, data)
        if line:
            print(line, file=sys.stderr, flush=True)
        if kind == "done":
            if streamed_tail != "\n":
                sys.stdout.write("\n")
            return


async def _live(subscription: Any, console: Any, started: float) -> None:
    import asyncio

    from rich.console import Group
    from rich.live import Live
    from rich.markdown import Markdown
    from rich.spinner import Spinner

    state: dict[str, Any] = {"text": "", "doing": "thinking", "since": started}
    spinner = Spinner("dots", style="cyan")

    def view(final: bool = False) -> Any:
        parts: list[Any] = [Markdown(state["text"])] if state["text"] else []
        if not final:
            spinner.update(text=f"{state['doing']}… {time.monotonic() - state['since']:.0f} s")
            parts.append(spinner)
        return Group(*parts)

    with Live(view(), console=console, refresh_per_second=8, transient=False) as live:
        ticker = asyncio.get_running_loop().create_task(_tick(live, view))
        try:
            async for event in subscription:
                kind, data = event["type"], event["data"] or {}
                if kind == "assistant_delta":
                    state["text"] += data.get("text", "")
                elif kind == "tool_call":
                    state["doing"], state["since"] = f"running {data.get('name')}", time.monotonic()
                elif kind in ("tool_result", "assistant_message"):
                    state["doing"], state["since"] = "thinking", time.monotonic()
                line = progress_line(kind, data)
                if line:
                    live.console.print(line, markup=False, highlight=False, style=LINE_STYLES.get(line[0], "dim"))
                if kind == "done":
                    break
                live.update(view())
        finally:
            ticker.cancel()
            live.update(view(final=True))


async def _tick(live: Any, view: Any) -> None:
    import asyncio

    while True:
        await asyncio.sleep(TICK_S)
        live.update(view())


@contextlib.contextmanager
def cell_progress(active: bool) -> Iterator[Callable[[str], None] | None]:
    """The ``progress`` callback of a notebook run: a progress bar with the current cell on a
    terminal (stderr), its lines (``cell 4/15 ...``) otherwise; None when nothing runs."""
    if not active:
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(file=sys.stderr)
    if not console.is_terminal:
        yield lambda line: print(line, file=sys.stderr, flush=True)
        return
    columns = (
        TextColumn("running the notebook"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
    )
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task("", total=None)

        def advance(line: str) -> None:
            found = re.match(r"cell (\d+)/(\d+) ?(.*)", line)
            if found is None:
                bar.console.print(line, markup=False, highlight=False)
                return
            done, total, text = int(found.group(1)), int(found.group(2)), found.group(3)
            bar.update(task, completed=done - 1, total=total, description=text[:40])

        yield advance
        bar.update(task, completed=bar.tasks[0].total or 0)


@contextlib.contextmanager
def working(what: str) -> Iterator[None]:
    """A spinner on stderr with ``what`` and the time elapsed while the block runs, on a terminal
    only, and gone when it ends; piped or redirected, nothing (the output stays the command's)."""
    from rich.console import Console

    console = Console(file=sys.stderr)
    if not console.is_terminal:
        yield
        return
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    with Progress(
        SpinnerColumn(style="cyan"),
        TextColumn(what, markup=False),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    ) as spinner:
        spinner.add_task(what, total=None)
        yield
