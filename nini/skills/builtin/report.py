"""The ``generate_report`` skill: the session's layered report, written into its workspace."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from nini.skills.function import skill
from nini.skills.output import ToolOutput
from nini.skills.services import services_of

if TYPE_CHECKING:
    from nini.session import Session

REPORTS_DIR = "reports"
ReportFormat = Literal["md", "html", "ipynb", "pdf"]


@skill("generate_report", category="report")
async def generate_report(
    session: Session,
    title: str | None = None,
    methods: str | None = None,
    summary_text: str | None = None,
    conclusions: str | None = None,
    dataset_names: list[str] | None = None,
    include_charts: bool = True,
    include_key_findings: bool = True,
    include_session_stats: bool = False,
    lang: Literal["zh", "en"] | None = None,
    formats: tuple[ReportFormat, ...] = ("md", "html"),
) -> ToolOutput:
    """Write the analysis report of this session (Markdown and a self-contained HTML file) into reports/.

    Key findings and charts come from the recorded executions (superseded steps are left out; a
    failed step that was not corrected is named in the summary); the text you give fills the
    methods, summary and conclusions sections.

    Args:
        title: The report title (default: 科研数据分析报告 / Data analysis report).
        methods: How the analysis was done, for the methods section (Markdown).
        summary_text: The summary section (Markdown).
        conclusions: Conclusions and recommendations (Markdown).
        dataset_names: Only these session datasets in the dataset overview (default: all).
        include_charts: Show the session's charts with previews and a download list.
        include_key_findings: List key findings taken from the successful executions.
        include_session_stats: Add an appendix with tool calls, executions and durations.
        lang: Language of the report: zh or en (default: the user's).
        formats: Files to write: md, html, ipynb, pdf (pdf only where a converter is installed).
    """
    from nini.report.narrative import router_completer
    from nini.report.output import check_formats
    from nini.report.service import ReportRequest, session_report, wants_model_text

    services = services_of(session)

    request = ReportRequest(
        title=title,
        methods=methods,
        summary_text=summary_text,
        conclusions=conclusions,
        dataset_names=dataset_names,
        include_charts=include_charts,
        include_key_findings=include_key_findings,
        include_session_stats=include_session_stats,
        lang=lang,
    )
    chosen = check_formats(formats)  # a bad format fails before the record is read
    complete = router_completer(services.router) if wants_model_text(session.settings, request) else None
    # the one pipeline `nini report --session` uses too: the same session gives the same report
    report = await session_report(
        session.store,
        session.id,
        session.workspace,
        request,
        settings=session.settings,
        memory=services.preferences,
        owner=session.owner,
        folder=session.workspace.root / REPORTS_DIR,
        formats=chosen,
        complete=complete,
        within=session.workspace.fs,
    )
    rendered, preferred = report.rendered, report.style.preferences
    paths = {fmt: session.workspace.relative(path) for fmt, path in report.paths.items()}
    artifacts = [
        {
            "name": path.name,
            "path": paths[fmt],
            "format": fmt,
            "kind": "report",
            "size_bytes": session.workspace.fs.file_size(paths[fmt]),
        }
        for fmt, path in report.paths.items()
    ]
    result: dict[str, Any] = {"title": rendered.title, "paths": paths}
    if rendered.model_written or rendered.model_refused:
        result["model_sections"] = {
            "written": list(rendered.model_written),
            "refused": {s: why.kind for s, why in rendered.model_refused.items()},
        }
    injected = (
        [
            (
                "preferences_injected",
                {
                    "ids": preferred.ids,
                    "keys": [r["key"] for r in preferred.rows],
                    "lines": preferred.lines,
                    "skill": "generate_report",
                },
            )
        ]
        if preferred and preferred.rows
        else []
    )
    return ToolOutput(
        result=result,
        artifacts=artifacts,
        summary=f"report {rendered.title!r}: {', '.join(paths.values())}",
        events=[("report_ready", {"paths": paths, "title": rendered.title}), *injected],
    )
