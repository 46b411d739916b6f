"""The ``nini`` command."""

import sys
from pathlib import Path
from typing import Annotated, Literal

import typer
import typer.main

from nini import __version__
from nini.cli import ask, experience, models, prefs, r, report, sessions, skills
from nini.cli._common import (
    NEW_SESSION_HELP,
    CliState,
    handles_errors,
    print_json,
    silence_stdout,
    state,
    warn_unsandboxed,
)
from nini.cli._help import (
    ANALYSIS,
    HELP_OPTIONS,
    MEMORY,
    MODELS,
    SERVER,
    SESSIONS,
    SKILLS,
    SectionedGroup,
    examples,
    help_of,
)
from nini.cli.terminal import working

app = typer.Typer(
    help="nini: a data-analysis agent that lives inside Jupyter.\n\n\b\n"
    "Add -h to any command for its options and examples.\n"
    "Shell completion: nini --install-completion (bash, zsh, fish, PowerShell).",
    epilog=examples(
        'nini ask "Which region grew fastest?" --data sales.csv',
        "nini --lang en doctor",
        "nini --project-dir ~/analysis sessions list",
        "nini skills list --json",
    ),
    cls=SectionedGroup,
    context_settings=HELP_OPTIONS,
    rich_markup_mode=None,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=True,
)
app.command("ask", rich_help_panel=ANALYSIS, epilog=ask.EXAMPLES)(ask.ask_command)
app.command("run-code", rich_help_panel=ANALYSIS, epilog=sessions.RUN_CODE_EXAMPLES)(sessions.run_code_command)
app.command("run-r", help=sessions.RUN_R_HELP, rich_help_panel=ANALYSIS, epilog=sessions.RUN_R_EXAMPLES)(
    sessions.run_code_command
)
app.add_typer(r.app, name="r", rich_help_panel=ANALYSIS)
app.add_typer(sessions.app, name="sessions", rich_help_panel=SESSIONS)
app.command("report", rich_help_panel=SESSIONS, epilog=report.EXAMPLES)(report.report_command)
app.add_typer(skills.app, name="skills", rich_help_panel=SKILLS)
app.command("remember", rich_help_panel=MEMORY, epilog=experience.REMEMBER_EXAMPLES)(experience.remember_command)
app.add_typer(experience.app, name="experience", rich_help_panel=MEMORY)
app.add_typer(prefs.app, name="prefs", rich_help_panel=MEMORY)
app.command("feedback", rich_help_panel=MEMORY, epilog=prefs.FEEDBACK_EXAMPLES)(prefs.feedback_command)
app.add_typer(models.app, name="models", rich_help_panel=MODELS)


def _version(value: bool) -> None:
    if value:
        try:
            typer.echo(f"nini {__version__}")
        except BrokenPipeError:
            silence_stdout()
        raise typer.Exit()


@app.callback()
@handles_errors
def root(
    ctx: typer.Context,
    project_dir: Annotated[
        Path | None,
        typer.Option(
            "--project-dir",
            metavar="DIR",
            help="Project folder (its .nini/, .agents/, .claude/ skills); it must exist. Default: the current folder.",
        ),
    ] = None,
    lang: Annotated[
        Literal["zh", "en"] | None,
        typer.Option(
            "--lang", help="Language of nini's words for this command (default: ui.language, auto: the locale's)."
        ),
    ] = None,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print nini's version and exit.")
    ] = False,
) -> None:
    """Settings are read by the commands that need them; here only what every command shares."""
    from nini.language import use_language

    use_language(lang)  # None lifts an override an earlier in-process call left (tests invoke the app many times)
    ctx.call_on_close(lambda: use_language(None))
    # None rather than Path("."): typer converts a default that is not None through pydantic, whose import
    # would double the time of `nini GROUP --help`
    project_dir = Path(".") if project_dir is None else project_dir
    if not project_dir.is_dir():
        from nini.errors import ErrorCode, NiniError

        if project_dir.exists():
            raise NiniError(ErrorCode.INVALID_ARGUMENT, f"project folder {project_dir} is not a folder")
        raise NiniError(ErrorCode.NOT_FOUND, f"project folder {project_dir} does not exist")
    ctx.obj = CliState(project_dir.resolve())


@app.command(rich_help_panel=SERVER, epilog=examples("nini doctor", "nini doctor --check-models --json"))
@handles_errors
def doctor(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="Print the checks as JSON.")] = False,
    check_models: Annotated[
        bool, typer.Option("--check-models", help="Also make one tiny real call per model to try (nini models test).")
    ] = False,
) -> None:
    """Check Python, packages, R, the sandbox and NINI_HOME; exit 1 if a required part is missing."""
    import asyncio

    from nini.doctor import Check, run_checks

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


@app.command("mcp", rich_help_panel=SERVER, epilog=examples("nini mcp", "nini mcp --session demo-agent"))
@handles_errors
def mcp_command(
    ctx: typer.Context,
    session_id: Annotated[
        str | None, typer.Option("--session", help="Serve this existing session; default: a new one.")
    ] = None,
    new: Annotated[bool, typer.Option("--new", help=NEW_SESSION_HELP)] = False,
) -> None:
    """Serve nini's enabled skills as MCP tools over stdio (for Claude Code, Cursor, Jupyter AI, ...)."""
    import asyncio

    from nini.mcp.server import serve_stdio
    from nini.runtime import Runtime

    cli = state(ctx)

    async def serve() -> None:
        async with Runtime(cli.settings, project_dir=cli.project_dir) as runtime:
            runtime.start_sweep()  # a server: what killed nini processes left is swept, in the background
            async with runtime.command_session(session_id, new=new, title="MCP") as held:
                warn_unsandboxed(cli.settings)
                await serve_stdio(runtime, held.session)
                held.failed = True  # a session made for a client that ran nothing is not kept either

    asyncio.run(serve())


def main() -> None:
    """Console entry point: usage errors exit 1 like every other user error (2 is for policy denials)."""
    try:
        shown = help_of(typer.main.get_command(app), sys.argv[1:]) if sys.argv[-1:] in (["-h"], ["--help"]) else None
        if shown is not None:
            typer.echo(shown)
            sys.stdout.flush()
            sys.exit(0)
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
