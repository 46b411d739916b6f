"""The ``nini`` command."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from nini import __version__
from nini.cli import ask, experience, models, prefs, r, report, sessions, skills
from nini.cli._common import CliState, handles_errors, print_json, silence_stdout, state
from nini.cli.terminal import working
from nini.doctor import run_checks

app = typer.Typer(
    help="nini: a data-analysis agent that lives inside Jupyter.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
app.add_typer(skills.app, name="skills")
app.add_typer(sessions.app, name="sessions")
app.add_typer(r.app, name="r")
app.add_typer(experience.app, name="experience")
app.add_typer(prefs.app, name="prefs")
app.add_typer(models.app, name="models")
app.command("ask")(ask.ask_command)
app.command("run-code")(sessions.run_code_command)
app.command("run-r", help=sessions.RUN_R_HELP)(sessions.run_code_command)
app.command("report")(report.report_command)
app.command("remember")(experience.remember_command)
app.command("feedback")(prefs.feedback_command)


def _version(value: bool) -> None:
    if value:
        try:
            typer.echo(f"nini {__version__}")
        except BrokenPipeError:
            silence_stdout()
        raise typer.Exit()


@app.callback()
def root(
    ctx: typer.Context,
    project_dir: Annotated[
        Path, typer.Option("--project-dir", help="Project folder (its .nini/, .agents/, .claude/ skills).")
    ] = Path("."),
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True)] = False,
) -> None:
    ctx.obj = CliState(project_dir.resolve())


@app.command()
@handles_errors
def doctor(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="Print the checks as JSON.")] = False,
    check_models: Annotated[bool, typer.Option("--check-models", help="Also make one tiny real call per model to try (nini models test).")] = False,
) -> None:
    """Check Python, packages, R, the sandbox and NINI_HOME; exit 1 if a required part is missing."""
    import asyncio

    from nini.doctor import Check

    settings = state(ctx).settings
    checks = run_checks(settings)
    if check_models:
        from nini.agent.model_admin import test_routes

        with working("calling each model once"):
            tested = asyncio.run(test_routes(settings))
        checks += [Check(f"model call {target}", ok, detail, required=False) for target, ok, detail in tested]
        if not tested:
            checks.append(Check("model call", False, "no model to test: nini models add NAME", required=False))
    if as_json:
        print_json([c.to_dict() for c in checks])
    else:
        width = max(len(c.name) for c in checks)
        for c in checks:
            mark = "OK" if c.ok else ("FAIL" if c.required else "WARN")
            typer.echo(f"{mark:<4}  {c.name:<{width}}  {c.detail}")
    if any(c.required and not c.ok for c in checks):
        raise typer.Exit(1)


@app.command("mcp")
@handles_errors
def mcp_command(
    ctx: typer.Context,
    session_id: Annotated[str | None, typer.Option("--session", help="Serve this session (created if new); default: a new one.")] = None,
) -> None:
    """Serve nini's enabled skills as MCP tools over stdio (for Claude Code, Cursor, Jupyter AI, ...)."""
    import asyncio

    from nini.mcp.server import serve_stdio
    from nini.runtime import Runtime

    cli = state(ctx)

    async def serve() -> None:
        async with Runtime(cli.settings, project_dir=cli.project_dir) as runtime:
            await serve_stdio(runtime.session_or_new(session_id, title="MCP"))

    asyncio.run(serve())


def main() -> None:
    """Console entry point: usage errors exit 1 like every other user error (2 is for policy denials)."""
    try:
        code = app(standalone_mode=False)
        sys.stdout.flush()  # output still buffered meets a closed pipe here, not at interpreter exit
    except BrokenPipeError:
        # the reader went away (`nini skills list | head`): not an error worth a message
        silence_stdout()
        sys.exit(0)
    except typer.Abort:
        typer.echo("aborted", err=True)
        sys.exit(1)
    except Exception as exc:
        # Usage errors come from the click that typer vendors; they know how to show themselves.
        if not (hasattr(exc, "show") and hasattr(exc, "exit_code")):
            raise
        exc.show()
        sys.exit(1)
    sys.exit(code if isinstance(code, int) else 0)
