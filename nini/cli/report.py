"""``nini report``: the layered report of a recorded session or of a Jupyter notebook."""

import os
from collections.abc import Awaitable, Callable
from contextlib import nullcontext
from pathlib import Path
from typing import Annotated, Any, Literal

import typer

from nini.cli._common import handles_errors, print_json, state
from nini.cli._help import examples
from nini.cli.terminal import cell_progress, working
from nini.errors import ErrorCode, NiniError

EXAMPLES = examples(
    "nini report --session demo-agent",
    "nini report --session demo-agent --out reports --format md,html,ipynb",
    "nini report analysis.ipynb --execute --strict",
)
# `--execute --strict` and a cell failed or timed out, or nothing ran: the report is written, the run is not clean
STRICT_FAILED_EXIT = 3


@handles_errors
def report_command(
    ctx: typer.Context,
    notebook: Annotated[Path | None, typer.Argument(metavar="NOTEBOOK.ipynb", help="Report on this notebook.")] = None,
    session_id: Annotated[str | None, typer.Option("--session", help="Report on this recorded session.")] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out", help="Folder to write into (default: the session's workspace reports/, or the notebook's folder)."
        ),
    ] = None,
    with_observability: Annotated[
        bool, typer.Option("--with-observability", help="Add the appendix of tool calls, executions and durations.")
    ] = False,
    lang: Annotated[
        Literal["zh", "en"] | None,
        typer.Option("--lang", help="Language of the report (default: ui.language, auto: the locale's)."),
    ] = None,
    formats: Annotated[str, typer.Option("--format", help="Comma-separated: md, html, ipynb, pdf.")] = "md,html",
    title: Annotated[str | None, typer.Option("--title", help="Report title.")] = None,
    execute: Annotated[
        bool,
        typer.Option("--execute", help="Run the notebook first (nbclient); the notebook file itself is not changed."),
    ] = False,
    kernel: Annotated[
        str | None,
        typer.Option(
            "--kernel",
            help="With --execute: the kernel to run it with "
            "(default: the notebook's own; auto: python3 or ir when that one is "
            "not installed). Without one, the report is from the saved outputs "
            "and says so.",
        ),
    ] = None,
    timeout: Annotated[float, typer.Option("--timeout", min=1, help="With --execute: seconds per cell.")] = 600,
    strict: Annotated[
        bool,
        typer.Option(
            "--strict",
            help="With --execute: exit with status 3 when a cell "
            "failed or timed out, or no kernel could run the notebook (the report "
            "is still written).",
        ),
    ] = False,
    model_text: Annotated[
        bool | None,
        typer.Option(
            "--model-text/--no-model-text",
            help="Let the model for purpose "
            "report write the summary and conclusions from the findings, numbers checked (default: "
            "the report.model_text setting; only when a model is configured).",
        ),
    ] = None,
    as_json: Annotated[
        bool,
        typer.Option(
            "--json",
            help="Print the title, the files written (by format) and the "
            "report's sections as JSON instead of the paths.",
        ),
    ] = False,
) -> None:
    """Write the layered report of a session (--session ID) or a notebook (--execute runs it first); print its paths."""
    from nini.language import use_language
    from nini.report.output import check_formats
    from nini.report.service import ReportRequest

    if lang is not None:  # the same override as the root --lang: the report and every message of this command
        use_language(lang)
    if (notebook is None) == (session_id is None):
        raise NiniError(ErrorCode.INVALID_ARGUMENT, "give either a notebook path or --session ID (exactly one)")
    if execute and notebook is None:
        raise NiniError(ErrorCode.INVALID_ARGUMENT, "--execute runs a notebook; a session's steps have already run")
    if kernel is not None and not execute:
        raise NiniError(ErrorCode.INVALID_ARGUMENT, "--kernel names the kernel --execute runs the notebook with")
    chosen = check_formats(formats.split(","))
    request = ReportRequest(title=title, include_session_stats=with_observability, lang=lang, model_text=model_text)
    settings, project_dir = state(ctx).settings, state(ctx).project_dir
    if notebook is not None:
        report = _run(
            settings,
            project_dir,
            request,
            execute,
            lambda memory, complete: _notebook_report(
                notebook, request, settings, memory, complete, out, chosen, execute, kernel, timeout
            ),
        )
    else:
        assert session_id is not None  # exactly one of notebook and session_id (checked above)
        report = _run(
            settings,
            project_dir,
            request,
            False,
            lambda memory, complete: _session_report(session_id, request, settings, memory, complete, out, chosen),
        )
    if as_json:
        print_json(_described(report))
    else:
        for path in report.paths.values():
            typer.echo(str(path))
    for section, why in report.rendered.model_refused.items():
        detail = f": {why.detail}" if why.detail else ""
        typer.echo(f"the model's {section} was not used ({why.kind}{detail}); the generated text stands", err=True)
    run = report.data.execution
    failures = run.message() if run is not None else None
    if failures:
        typer.echo(failures, err=True)
        if strict and run is not None and (run.failed or run.kernel is None):  # a cell failed, or nothing ran
            raise typer.Exit(STRICT_FAILED_EXIT)


def _described(report: Any) -> dict[str, Any]:
    """``--json``: what was written, and the sections a reader finds in it (its ``## `` headings)."""
    rendered = report.rendered
    return {
        "title": rendered.title,
        "paths": {fmt: str(path) for fmt, path in report.paths.items()},
        "sections": [line[3:].strip() for line in rendered.markdown.splitlines() if line.startswith("## ")],
        "model_sections": {
            "written": list(rendered.model_written),
            "refused": {s: why.kind for s, why in rendered.model_refused.items()},
        },
    }


def _run(
    settings: Any, project_dir: Path, request: Any, executing: bool, make: Callable[[Any, Any], Awaitable[Any]]
) -> Any:
    """Run ``make(preferences, complete)`` (one of the service's pipelines) with the unnamed user's
    preference memory over the history store and, when the model is to write, its router; both
    closed after."""
    import asyncio

    from nini.history.store import HistoryStore
    from nini.memory.preferences import PreferenceMemory
    from nini.report.service import wants_model_text

    async def go() -> Any:
        store = HistoryStore.from_settings(settings)
        router = None
        try:
            complete = None
            if wants_model_text(settings, request):
                from nini.agent.llm import ModelRouter
                from nini.report.narrative import router_completer

                router = ModelRouter.from_settings(settings)
                complete = router_completer(router)
            with (
                working("the model writes the summary and conclusions") if complete and not executing else nullcontext()
            ):
                return await make(PreferenceMemory(settings, store, Path(project_dir)), complete)
        finally:
            if router is not None:
                await router.aclose()
            store.close()

    return asyncio.run(go())


async def _notebook_report(
    notebook: Path,
    request: Any,
    settings: Any,
    memory: Any,
    complete: Any,
    out: Path | None,
    formats: list[str],
    execute: bool,
    kernel: str | None,
    timeout: float,
) -> Any:
    from nini.report.output import new_folder
    from nini.report.service import notebook_report

    folder = (out or notebook.parent).resolve()
    files_dir = new_folder(folder, f"{notebook.stem}_report_files")
    try:
        with cell_progress(execute) as progress:
            return await notebook_report(
                notebook,
                request,
                settings=settings,
                memory=memory,
                folder=folder,
                files_dir=files_dir,
                formats=formats,
                execute=execute,
                timeout_s=timeout,
                kernel=kernel,
                progress=progress,
                complete=complete,
                stem=f"{notebook.stem}-report",
            )
    except BaseException:
        try:  # a refused notebook (missing, not JSON, not a notebook) leaves no empty folder behind
            files_dir.rmdir()
        except OSError:  # charts were written before the failure: they stay for the user to see
            pass
        raise


async def _session_report(
    session_id: str, request: Any, settings: Any, memory: Any, complete: Any, out: Path | None, formats: list[str]
) -> Any:
    """Read-only on the session: a report reads the record and adds nothing to it. Written inside
    the workspace, through its file system; written elsewhere, with its own copy of the charts."""
    from nini.execution.workspace import Workspace
    from nini.report.service import session_report

    workspace = Workspace.for_session(settings.sessions_dir, session_id)
    owner = (await memory.store.call(memory.store.get_session, session_id)).get("owner")  # NOT_FOUND first
    charts_to = None
    if out is None:
        folder, within = workspace.root / "reports", workspace.fs
    elif (folder := Path(os.path.abspath(out))).is_relative_to(workspace.root):  # lexically: a link is not followed
        within = workspace.fs
    else:
        folder, within = out.resolve(), None
        if folder.is_relative_to(workspace.root):
            raise NiniError(
                ErrorCode.INVALID_ARGUMENT,
                "--out leads into the session workspace through a link; name the folder inside it directly",
            )
        charts_to = folder / f"{session_id}-charts"
    return await session_report(
        memory.store,
        session_id,
        workspace,
        request,
        settings=settings,
        memory=memory,
        owner=owner,
        folder=folder,
        formats=formats,
        complete=complete,
        within=within,
        charts_to=charts_to,
        stem="report",
    )
