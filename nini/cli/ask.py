"""``nini ask``: one agent turn in the terminal, its progress streamed as it happens.

The model's text goes to stdout as it streams; progress lines (tool calls, results, task
summaries) go to stderr, so ``nini ask ... > answer.md`` keeps just the words. On a terminal the
answer is rendered as Markdown under a spinner that counts the seconds (``nini.cli.terminal``).
"""

import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer

from nini.cli._common import (
    NEW_SESSION_HELP,
    EncodingOption,
    SepOption,
    SheetOption,
    handles_errors,
    load_data_files,
    print_json,
    state,
    warn_unsandboxed,
)
from nini.cli._help import examples
from nini.cli.terminal import print_progress
from nini.cli.words import say

if TYPE_CHECKING:
    import asyncio  # imported where it runs: the CLI starts without it

    from nini.agent.runner import RunResult

EXAMPLES = examples(
    'nini ask "Which region grew fastest last quarter?" --data sales.csv',
    'nini ask "Now plot it by month" --session demo-agent',
    'nini ask "Summarise the data" --data sales.csv --json',
)


@handles_errors
def ask_command(
    ctx: typer.Context,
    question: Annotated[str, typer.Argument(metavar="QUESTION", help="What you want to know about your data.")],
    data: Annotated[
        list[Path] | None,
        typer.Option("--data", metavar="FILE", help="A data file to load as a dataset first (repeatable)."),
    ] = None,
    encoding: EncodingOption = None,
    sep: SepOption = None,
    sheet: SheetOption = None,
    session_id: Annotated[
        str | None, typer.Option("--session", help="Continue this existing session (default: a new one).")
    ] = None,
    new: Annotated[bool, typer.Option("--new", help=NEW_SESSION_HELP)] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print only the run's result as JSON at the end.")] = False,
    stage: Annotated[
        Literal["init", "analysis", "report", "review"] | None,
        typer.Option(
            "--stage",
            help="The project stage of this question, for experience matching and capture (default: "
            "read from the run).",
        ),
    ] = None,
) -> None:
    """Ask nini about your data: it plans, runs Python and R, and answers; exit 1 if the run did not finish."""
    import asyncio

    cli = state(ctx)
    try:
        session, result = asyncio.run(
            _ask(
                cli.settings,
                cli.project_dir,
                question,
                data or [],
                (session_id, new),
                not as_json,
                stage,
                read={"encoding": encoding, "sep": sep, "sheet": sheet},
            )
        )
    except KeyboardInterrupt:
        typer.echo("\n" + say(ctx, "ask_cancelled"), err=True)
        raise typer.Exit(1) from None
    if as_json:
        print_json({"session_id": session, **result.to_dict()})
    else:
        kept = f"session {session} · turn {result.turn_id}" if session else say(ctx, "no_session_kept")
        ended = f"{result.ended_by} after {result.iterations} model call(s)"
        typer.echo(f"{kept} · {ended}{_context_part(result)}", err=True)
        if result.error and result.ended_by != "finished":
            typer.echo(f"error [{result.error['code']}]: {result.error['message']}", err=True)
        for note in result.notes:  # what came after the answer (the skill enhancement's line)
            typer.echo(note, err=True)
    if not result.completed_normally:
        raise typer.Exit(1)


def _context_part(result: "RunResult") -> str:
    """`` · context 5,120 tokens (8% of 64,000), 12 turns summarized``: how full the model's context was."""
    context = result.context
    if not context:
        return ""
    part = f" · context {context['tokens']:,} tokens ({context['percent']:g}% of {context['window']:,})"
    if context["summarized_turns"]:
        part += f", {context['summarized_turns']:,} earlier turns summarized"
    return part


async def _ask(
    settings,
    project_dir: Path,
    question: str,
    data: list[Path],
    named: tuple[str | None, bool],  # noqa: ANN001, ANN202
    show: bool,
    stage: str | None = None,
    read: dict | None = None,
):
    """One turn in the named session (``--session``, ``--new``). No model: said (with how to add one)
    before any session is made; a session this command made that holds no step when the turn fails
    is gone again (``Runtime.command_session``)."""
    import asyncio

    from nini.runtime import Runtime

    async with Runtime(settings, project_dir=project_dir) as runtime:
        session_id, new = named
        if session_id is not None and not new:
            runtime.existing_session(session_id)  # a mistyped id is the first thing to say
        runtime.router.chain("chat")
        async with runtime.command_session(session_id, new=new, title=question[:80]) as held:
            session = held.session
            session.stage = stage
            warn_unsandboxed(settings)
            await load_data_files(session, data, announce=show, read=read)
            subscription = session.events.subscribe(session.id) if show else None
            printer = asyncio.create_task(print_progress(subscription, time.monotonic())) if subscription else None
            try:
                result = await runtime.agent.run(session, question)
            finally:
                if printer is not None and subscription is not None:  # the printer reads the subscription
                    await _drain(printer)
                    subscription.close()
            held.failed = not result.completed_normally
        return None if held.dropped else session.id, result


async def _drain(printer: "asyncio.Task[None]") -> None:
    """Let the printer reach ``done`` (it is published before run() returns), then stop it."""
    import asyncio

    try:
        await asyncio.wait_for(printer, timeout=5)
    except (TimeoutError, asyncio.CancelledError):
        printer.cancel()
