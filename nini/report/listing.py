"""A session's reports as its record tells them, without reading a file.

Every report written for a session (the agent's ``generate_report``, ``POST .../report``) is a
recorded ``generate_report`` call whose result holds its title and files. Its charts are the chart
artifacts recorded before that call started, less those of executions rolled back by then: what
``sources.from_session`` gave the report, grouped as the report groups them (``group_charts``).
Reports written by ``nini report`` only read the session and are not in its record.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import Any

from nini.errors import NiniError
from nini.execution.workspace import Workspace
from nini.report.charts import group_charts, split_name
from nini.report.model import ChartFile
from nini.report.sources import is_chart_artifact

REPORT_SKILL = "generate_report"


def list_reports(store: Any, session_id: str, workspace: Workspace) -> list[dict[str, Any]]:
    """``[{title, created_at, tool_call_id, files: {format: path}, charts: [{name, formats: {format:
    path}}]}]``, newest first; every path relative to the workspace. Blocking: the store's thread."""
    calls = [
        c
        for c in store.list_tool_calls(session_id)
        if c["tool_name"] == REPORT_SKILL and c["status"] == "succeeded" and isinstance(c.get("result"), dict)
    ]
    if not calls:
        return []
    rolled_back = {
        row["id"]: row["rolled_back_at"] for row in store.list_executions(session_id) if row.get("rolled_back_at")
    }
    charts = [row for row in store.list_artifacts(session_id) if is_chart_artifact(row)]
    reports = []
    for call in calls:
        arguments = call.get("arguments") if isinstance(call.get("arguments"), dict) else {}
        started = call["started_at"]  # store timestamps are ISO-8601 UTC and strictly increasing
        shown = [row for row in charts if row["created_at"] < started and _still_done(row, rolled_back, started)]
        reports.append(
            {
                "title": call["result"].get("title"),
                "created_at": call.get("ended_at") or call["started_at"],
                "tool_call_id": call["id"],
                "files": dict(call["result"].get("paths") or {}),
                "charts": _charts(shown, workspace) if arguments.get("include_charts", True) is not False else [],
            }
        )
    reports.sort(key=lambda report: report["created_at"], reverse=True)
    return reports


def _still_done(row: dict[str, Any], rolled_back: dict[str, str], moment: str) -> bool:
    """Whether the chart's execution was not yet rolled back at ``moment`` (the report left it out if so)."""
    undone = rolled_back.get(row.get("execution_id") or "")
    return undone is None or undone >= moment


def _charts(rows: list[dict[str, Any]], workspace: Workspace) -> list[dict[str, Any]]:
    files: list[ChartFile] = []
    for row in rows:
        try:
            relative = workspace.relative(row["path"])
        except NiniError:  # a recorded path outside the workspace: the report left it out too
            continue
        files.append(
            ChartFile(name=PurePosixPath(relative).name, path=Path(relative), order=len(files), relative=relative)
        )
    charts = []
    for group in group_charts(files):
        formats: dict[str, str] = {}
        for file in group.files:  # preview priority, newest first: the first of each format is the one shown
            formats.setdefault(split_name(file.name)[1], file.relative or "")
        charts.append({"name": group.base, "formats": formats})
    return charts
