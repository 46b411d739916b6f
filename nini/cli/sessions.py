"""``nini sessions ...`` and ``nini run-code``: recorded sessions and running code in them."""

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer

from nini.cli._common import (
    NEW_SESSION_HELP,
    EncodingOption,
    SepOption,
    SheetOption,
    handles_errors,
    load_data_files,
    print_data,
    print_json,
    state,
    warn_unsandboxed,
)
from nini.cli._help import examples, group
from nini.cli.terminal import working
from nini.cli.words import say
from nini.errors import ErrorCode, NiniError
from nini.limits import Limits, check_arguments

if TYPE_CHECKING:  # the store (sqlalchemy) loads inside commands: `nini --help` stays fast
    from nini.history.store import HistoryStore

app = group(
    "Recorded sessions: list, inspect, export.",
    ["nini sessions list --limit 5", "nini sessions show demo", "nini sessions export demo --format md --out demo.md"],
)

Purpose = Literal["exploration", "visualization", "export", "transformation"]
# One command body serves both languages; the name it was called by picks the skill.
SKILL_OF_COMMAND = {"run-code": "run_code", "run-r": "run_r_code"}
RUN_CODE_EXAMPLES = examples(
    "nini run-code analysis.py --data sales.csv",
    "echo 'print(df.describe())' | nini run-code - --data sales.csv --json",
    "nini run-code chart.py --session demo --label revenue-by-month",
)
RUN_R_EXAMPLES = examples(
    "nini run-r model.R --data sales.csv",
    "echo 'summary(lm(revenue ~ units, data = df))' | nini run-r - --data sales.csv",
)
RUN_R_HELP = (
    "Run R through run_r_code in a session's R worker (policy-checked, sandboxed), recorded like any agent step."
)


@contextlib.contextmanager
def _store(ctx: typer.Context) -> Iterator["HistoryStore"]:
    """The history store of this command's settings, closed when the block ends."""
    from nini.history.store import HistoryStore

    store = HistoryStore.from_settings(state(ctx).settings)
    try:
        yield store
    finally:
        store.close()


@app.command("list", epilog=examples("nini sessions list", "nini sessions list --limit 5 --json"))
@handles_errors
def list_sessions(
    ctx: typer.Context,
    limit: Annotated[int, typer.Option("--limit", min=1, help="At most this many, newest first.")] = 50,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON array.")] = False,
) -> None:
    """List sessions, newest first."""
    with _store(ctx) as store:
        rows = store.list_sessions(limit=limit)
    if as_json:
        print_json(rows)
        return
    if not rows:
        typer.echo(say(ctx, "no_sessions"))
    for row in rows:
        typer.echo(
            f"{row['id']}  {row['created_at']}  {row.get('tool_call_count', 0):>4} calls  "
            f"{row.get('execution_count', 0):>4} runs  {row.get('title') or ''}".rstrip()
        )


IdArgument = Annotated[str, typer.Argument(metavar="ID", help="The session's id (nini sessions list).")]


@app.command("show", epilog=examples("nini sessions show demo", "nini sessions show demo --json"))
@handles_errors
def show_session(
    ctx: typer.Context,
    session_id: IdArgument,
    as_json: Annotated[
        bool,
        typer.Option(
            "--json",
            help="Print everything recorded (messages, tool calls, executions "
            "with their code and output, artifacts, datasets) as JSON.",
        ),
    ] = False,
) -> None:
    """Show a session: its steps (tool calls and the code they ran), artifacts and datasets."""
    from nini.history.export import session_bundle

    with _store(ctx) as store:
        bundle = session_bundle(store, session_id)
    print_data(bundle, as_json, _session_lines)


def _session_lines(bundle: dict[str, Any]) -> list[str]:
    """A session as a person reads it: one line per step; ``--json`` has the code, outputs and messages."""
    session = bundle["session"]
    lines = [
        f"session {session['id']}" + (f": {session['title']}" if session.get("title") else ""),
        f"created {session.get('created_at')}, updated {session.get('updated_at')}, "
        f"{len(bundle['messages'])} message(s)",
    ]
    sections: list[tuple[str, list[str]]] = [
        (
            "tool calls",
            [
                f"{c['tool_name']:<20} {c['status']:<9} {_seconds(c.get('duration_ms'))}"
                f"{'  ' + c['error_code'] if c.get('error_code') else ''}"
                for c in bundle["tool_calls"]
            ],
        ),
        (
            "executions",
            [
                f"{e['id']:<14} {e['language']:<7} {e['status']:<9} "
                f"{_seconds(e.get('duration_ms'))}  {e.get('label') or ''}".rstrip()
                for e in bundle["executions"]
            ],
        ),
        ("artifacts", [a["path"] for a in bundle["artifacts"]]),
        (
            "datasets",
            [
                f"{d['name']:<20} {d.get('rows') if d.get('rows') is not None else '?'} rows, "
                f"{len(d.get('columns') or [])} columns"
                for d in bundle["datasets"]
            ],
        ),
    ]
    for title, rows in sections:
        lines.append(f"{title} ({len(rows)})" + (":" if rows else ""))
        lines.extend(f"  {row}" for row in rows)
    return lines


def _seconds(milliseconds: int | None) -> str:
    return f"{milliseconds / 1000:>6.1f} s" if milliseconds is not None else f"{'-':>8}"


@app.command(
    "export",
    epilog=examples(
        "nini sessions export demo --format ipynb --out demo.ipynb",
        "nini sessions export demo --format md --out demo.md --sandboxed",
        "nini sessions export demo --format json > demo.json",
    ),
)
@handles_errors
def export(
    ctx: typer.Context,
    session_id: IdArgument,
    format: Annotated[Literal["ipynb", "md", "json"], typer.Option("--format", help="ipynb, md or json.")] = "ipynb",
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            help="Write here instead of to stdout, with <name>_files/ beside it (a notebook's "
            "datasets, the Markdown's images).",
        ),
    ] = None,
    sandboxed: Annotated[
        bool,
        typer.Option(
            "--sandboxed",
            help="A notebook whose steps re-run in nini's sandbox (%%nini_run cells), not in the reader's kernel.",
        ),
    ] = False,
) -> None:
    """Export a session: a notebook that re-runs it, Markdown to read, or JSON.

    Notebook and Markdown start by saying the code is the agent's, when and where it ran and which
    steps the static policy flags; a plain notebook re-runs it unsandboxed, a --sandboxed one in nini's sandbox.
    """
    settings = state(ctx).settings
    from nini.execution.policy import find_violations
    from nini.execution.workspace import Workspace
    from nini.history.export import export_session, write_session_export

    workspace = Workspace.for_session(settings.sessions_dir, session_id).root
    options: dict[str, Any] = {
        "check": find_violations,
        "sandboxed": sandboxed,
        "language": settings.ui.current_language,
    }
    with _store(ctx) as store:
        if out is not None:  # a notebook gets <stem>_files/ beside it: the datasets it reads
            write_session_export(store, session_id, workspace, format, out, **options)
            typer.echo(say(ctx, "wrote", path=out), err=True)
            return
        text = export_session(store, session_id, workspace, format, **options)
    sys.stdout.write(text if text.endswith("\n") else text + "\n")


@handles_errors
def run_code_command(
    ctx: typer.Context,
    file: Annotated[str, typer.Argument(metavar="FILE|-", help="Source file to run, or - for stdin.")],
    session_id: Annotated[
        str | None, typer.Option("--session", help="Run in this existing session (default: a new one).")
    ] = None,
    new: Annotated[bool, typer.Option("--new", help=NEW_SESSION_HELP)] = False,
    data: Annotated[
        list[Path] | None,
        typer.Option("--data", metavar="FILE", help="Load a data file as a dataset first (repeatable)."),
    ] = None,
    encoding: EncodingOption = None,
    sep: SepOption = None,
    sheet: SheetOption = None,
    dataset: Annotated[
        str | None, typer.Option("--dataset", help="Dataset loaded as df (default: the one --data file).")
    ] = None,
    save_as: Annotated[str | None, typer.Option("--save-as", help="Save output_df as this dataset.")] = None,
    label: Annotated[str | None, typer.Option("--label", help="Name of this step (charts are named after it).")] = None,
    purpose: Annotated[
        Purpose, typer.Option("--purpose", help="Why the code runs (recorded with the step).")
    ] = "exploration",
    timeout: Annotated[float | None, typer.Option("--timeout", help="Seconds (default from settings).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the full result as JSON.")] = False,
) -> None:
    """Run Python through run_code in a session's sandboxed kernel, recorded like any agent step."""
    import asyncio

    cli = state(ctx)
    skill_name = SKILL_OF_COMMAND[ctx.info_name or "run-code"]
    if skill_name == "run_r_code":
        from nini.skills.builtin.run_r import r_status

        usable, why = r_status(cli.settings)
        if not usable:
            raise NiniError(ErrorCode.R_UNAVAILABLE, f"R cannot be used here: {why}")
    code = sys.stdin.read() if file == "-" else _read_source(Path(file))
    arguments = {
        "code": code,
        "dataset_name": dataset,
        "save_as": save_as,
        "label": label,
        "purpose": purpose,
        "timeout_s": timeout,
    }
    check_arguments(arguments, Limits.of(cli.settings))  # before any session, row or kernel: TOO_LARGE, a surrogate
    with working("running R" if skill_name == "run_r_code" else "running Python"):
        session_id, result = asyncio.run(
            _run_code(
                cli.settings,
                cli.project_dir,
                (session_id, new),
                data or [],
                skill_name,
                arguments,
                read={"encoding": encoding, "sep": sep, "sheet": sheet},
            )
        )
    if as_json:
        print_json({"session_id": session_id, **result.to_dict()})
    else:
        _print_result(ctx, session_id, result)
    if not result.success:
        code_ = (result.error or {}).get("code")
        raise typer.Exit(2 if code_ == ErrorCode.POLICY_VIOLATION.value else 1)


async def _run_code(
    settings,
    project_dir: Path,
    named: tuple[str | None, bool],
    data: list[Path],
    skill_name: str,  # noqa: ANN001, ANN202
    arguments: dict,
    read: dict | None = None,
):
    """Run in the named session (``--session``, ``--new``); one this command made and nothing ran
    in is gone again when the command fails (``Runtime.command_session``)."""
    from nini.runtime import Runtime
    from nini.skills.invoke import invoke

    async with Runtime(settings, project_dir=project_dir) as runtime:
        session_id, new = named
        async with runtime.command_session(session_id, new=new) as held:
            session = held.session
            warn_unsandboxed(settings)
            if data:
                runtime.readers.keep_spare = False  # one command: no read follows the --data files
            loaded = await load_data_files(session, data, read=read)
            if len(loaded) == 1 and not arguments.get("dataset_name"):
                arguments = {**arguments, "dataset_name": loaded[0]}  # one --data file is df, in Python and in R
            result = await invoke(session, skill_name, arguments)
            held.failed = not result.success
        return None if held.dropped else session.id, result


def _read_source(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise NiniError(ErrorCode.NOT_FOUND, f"no such file: {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise NiniError(ErrorCode.INVALID_ARGUMENT, f"{path} cannot be read as UTF-8 text: {exc}") from None


def _print_result(ctx: typer.Context, session_id: str | None, result) -> None:  # noqa: ANN001
    value = result.result or {}
    if value.get("stdout"):
        sys.stdout.write(value["stdout"] if value["stdout"].endswith("\n") else value["stdout"] + "\n")
    if value.get("stderr"):
        sys.stderr.write(value["stderr"])
    if value.get("result") is not None:
        print_json({"result": value["result"]})
    for artifact in value.get("artifacts") or []:
        typer.echo(f"artifact: {artifact['path']}", err=True)
    for name in value.get("datasets_saved") or []:
        typer.echo(f"dataset saved: {name}", err=True)
    if result.error:
        line = f" (line {result.error['line']})" if result.error.get("line") else ""
        typer.echo(f"error [{result.error['code']}]{line}: {result.error['message']}", err=True)
    typer.echo(f"session: {session_id}" if session_id else say(ctx, "no_session_kept"), err=True)
