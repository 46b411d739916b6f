"""``nini report``: the layered report of a recorded session or of a Jupyter notebook."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Annotated, Any, Literal

import typer

from nini.cli.terminal import cell_progress, working
from nini.cli._common import handles_errors, state
from nini.errors import ErrorCode, NiniError

STRICT_FAILED_EXIT = 3  # `--execute --strict` and a cell failed or timed out: the report is written, the run is not clean


@handles_errors
def report_command(
    ctx: typer.Context,
    notebook: Annotated[Path | None, typer.Argument(metavar="[NOTEBOOK.ipynb]", help="Report on this notebook.")] = None,
    session_id: Annotated[str | None, typer.Option("--session", help="Report on this recorded session.")] = None,
    out: Annotated[Path | None, typer.Option("--out", help="Folder to write into (default: the session's "
                                             "workspace reports/, or the notebook's folder).")] = None,  # fmt: skip
    with_observability: Annotated[bool, typer.Option("--with-observability", help="Add the appendix of tool "
                                                     "calls, executions and durations.")] = False,  # fmt: skip
    lang: Annotated[Literal["zh", "en"], typer.Option("--lang", help="Language of the headings.")] = "zh",
    formats: Annotated[str, typer.Option("--format", help="Comma-separated: md, html, ipynb, pdf.")] = "md,html",
    title: Annotated[str | None, typer.Option("--title", help="Report title.")] = None,
    execute: Annotated[bool, typer.Option("--execute", help="Run the notebook first (nbclient); "
                                          "the notebook file itself is not changed.")] = False,  # fmt: skip
    timeout: Annotated[float, typer.Option("--timeout", min=1, help="With --execute: seconds per cell.")] = 600,
    strict: Annotated[bool, typer.Option("--strict", help="With --execute: exit with status 3 when a cell "
                                         "failed or timed out (the report is still written).")] = False,  # fmt: skip
    model_text: Annotated[bool | None, typer.Option("--model-text/--no-model-text", help="Let the model for purpose "
                          "report write the summary and conclusions from the findings, numbers checked (default: "
                          "the report.model_text setting; only when a model is configured).")] = None,  # fmt: skip
) -> None:
    """Write the layered report of a session (--session ID) or a notebook (--execute runs it first); print its paths."""
    from nini.report.builder import ReportOptions, build_report
    from nini.report.output import check_formats, new_folder, write_report

    if (notebook is None) == (session_id is None):
        raise NiniError(ErrorCode.INVALID_ARGUMENT, "give either a notebook path or --session ID (exactly one)")
    if execute and notebook is None:
        raise NiniError(ErrorCode.INVALID_ARGUMENT, "--execute runs a notebook; a session's steps have already run")
    chosen = check_formats(formats.split(","))
    options = ReportOptions(title=title, include_session_stats=with_observability, lang=lang,
                            decimals=state(ctx).settings.report.decimals)
    if notebook is not None:
        from nini.report.sources import from_notebook

        folder = (out or notebook.parent).resolve()
        files_dir = new_folder(folder, f"{notebook.stem}_report_files")
        with cell_progress(execute) as progress:
            data, _ = from_notebook(notebook, execute=execute, timeout_s=timeout, files_dir=files_dir, progress=progress)
        prefix = f"{notebook.stem}-report"
        within = None
    else:
        data, folder, within = _session_input(ctx, session_id, out)
        prefix = "report"
    settings = state(ctx).settings
    wanted = settings.report.model_text if model_text is None else model_text
    narrative = _narrative(settings, data, options) if wanted else None
    rendered = build_report(data, options, link_base=folder, narrative=narrative)
    for path in write_report(rendered, folder, formats=chosen, stem=prefix, within=within).values():
        typer.echo(str(path))
    for section, why in rendered.model_refused.items():
        detail = f": {why.detail}" if why.detail else ""
        typer.echo(f"the model's {section} was not used ({why.kind}{detail}); the generated text stands", err=True)
    failures = data.execution.message() if data.execution is not None else None
    if failures:
        typer.echo(failures, err=True)
        if strict:
            raise typer.Exit(STRICT_FAILED_EXIT)


def _narrative(settings: Any, data: Any, options: Any) -> Any:
    """The model's summary and conclusions (``report.narrative``), or None when no model is configured."""
    from nini.agent.llm import ModelRouter
    from nini.report.narrative import narrate, router_completer

    router = ModelRouter(settings.llm)
    complete = router_completer(router)
    if complete is None:
        return None

    async def ask() -> Any:
        try:
            return await narrate(data, lang=options.lang, digits=options.decimals, complete=complete)
        finally:
            await router.aclose()

    with working("the model writes the summary and conclusions"):
        return asyncio.run(ask())


def _session_input(ctx: typer.Context, session_id: str, out: Path | None):  # noqa: ANN202 - (ReportInput, Path, RootedDir | None)
    """Read-only on the session: a report reads the record and adds nothing to it. The third
    value is the workspace's file system when the report goes inside the workspace."""
    from nini.execution.workspace import Workspace
    from nini.history.store import HistoryStore
    from nini.report.output import copy_charts
    from nini.report.sources import from_session

    settings = state(ctx).settings
    workspace = Workspace.for_session(settings.sessions_dir, session_id)
    store = HistoryStore.from_settings(settings)
    try:
        data = from_session(store, session_id, workspace)
    finally:
        store.close()
    if out is None:
        return data, workspace.root / "reports", workspace.fs
    folder = Path(os.path.abspath(out))  # lexically: a link inside the workspace is not followed
    if folder.is_relative_to(workspace.root):
        return data, folder, workspace.fs
    folder = out.resolve()
    if folder.is_relative_to(workspace.root):
        raise NiniError(ErrorCode.INVALID_ARGUMENT, "--out leads into the session workspace through a link; "
                        "name the folder inside it directly")  # fmt: skip
    return copy_charts(data, folder / f"{session_id}-charts"), folder, None
