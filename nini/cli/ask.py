"""``nini ask``: one agent turn in the terminal, its progress streamed as it happens.

The model's text goes to stdout as it streams; progress lines (tool calls, results, task
summaries) go to stderr, so ``nini ask ... > answer.md`` keeps just the words. On a terminal the
answer is rendered as Markdown under a spinner that counts the seconds (``nini.cli.terminal``).
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Annotated, Literal

import typer

from nini.cli._common import handles_errors, load_data_files, print_json, state
from nini.cli.terminal import print_progress


@handles_errors
def ask_command(
    ctx: typer.Context,
    question: Annotated[str, typer.Argument(help="What you want to know about your data.")],
    data: Annotated[list[Path] | None, typer.Option("--data", help="A data file to load as a dataset first (repeatable).")] = None,
    session_id: Annotated[str | None, typer.Option("--session", help="Continue this session (created if new).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print only the run's result as JSON at the end.")] = False,
    stage: Annotated[Literal["init", "analysis", "report", "review"] | None, typer.Option(
        "--stage", help="The project stage of this question, for experience matching and capture (default: read from the run).")] = None,
) -> None:
    """Ask nini about your data: it plans, runs Python and R, and answers; exit 1 if the run did not finish."""
    cli = state(ctx)
    try:
        session, result = asyncio.run(_ask(cli.settings, cli.project_dir, question, data or [], session_id, not as_json, stage))
    except KeyboardInterrupt:
        typer.echo("\ncancelled (the run is recorded as canceled)", err=True)
        raise typer.Exit(1) from None
    if as_json:
        print_json({"session_id": session, **result.to_dict()})
    else:
        typer.echo(f"session {session} · turn {result.turn_id} · {result.ended_by} after {result.iterations} model call(s)", err=True)
        if result.error and result.ended_by != "finished":
            typer.echo(f"error [{result.error['code']}]: {result.error['message']}", err=True)
        for note in result.notes:  # what came after the answer (the skill enhancement's line)
            typer.echo(note, err=True)
    if not result.completed_normally:
        raise typer.Exit(1)


async def _ask(settings, project_dir: Path, question: str, data: list[Path], session_id: str | None, show: bool,  # noqa: ANN001, ANN202
               stage: str | None = None):
    from nini.runtime import Runtime

    async with Runtime(settings, project_dir=project_dir) as runtime:
        session = runtime.session_or_new(session_id, title=question[:80])
        session.stage = stage
        await load_data_files(session, data, announce=show)
        subscription = session.events.subscribe(session.id) if show else None
        printer = asyncio.create_task(print_progress(subscription, time.monotonic())) if subscription else None
        try:
            result = await runtime.agent.run(session, question)
        finally:
            if printer is not None:
                await _drain(printer)
                subscription.close()
        return session.id, result


async def _drain(printer: asyncio.Task[None]) -> None:
    """Let the printer reach ``done`` (it is published before run() returns), then stop it."""
    try:
        await asyncio.wait_for(printer, timeout=5)
    except (TimeoutError, asyncio.CancelledError):
        printer.cancel()
