"""The observability appendix (``--with-observability``, ``include_session_stats``): tool calls,
executions by language, failures, durations, row counts and the model's sections. System detail
lives here only, never in the business sections, and the body is the same with or without it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from nini.report.cells import RUN_REASONS
from nini.report.markdown import md_name
from nini.report.methods import LANGUAGES
from nini.report.model import ReportInput, Step, ToolCallInfo
from nini.report.page import templates


def appendix(data: ReportInput, relevant: list[Step], t: dict[str, str], narrated: list[str]) -> str:
    """The appendix's Markdown; ``relevant`` are the steps whose outcome stands, ``narrated`` the
    lines on the model's sections."""

    def usage(name: str, statuses: list[str], durations: list[int | None]) -> str:
        failed = sum(status in ("failed", "interrupted") for status in statuses)
        return t["calls"].format(
            name=md_name(name), count=len(statuses), failed=failed, duration=_duration(_total(durations))
        )

    calls: dict[str, list[ToolCallInfo]] = {}
    for call in data.tool_calls:
        calls.setdefault(call.name, []).append(call)
    languages: dict[str, list[Step]] = {}
    for step in data.steps:
        languages.setdefault(step.language, []).append(step)
    failed = [step for step in data.steps if step.status == "failed"]
    kinds = Counter(str((step.error or {}).get("code") or t["unknown"]) for step in failed)
    standing = sum(step.status == "succeeded" and not step.rolled_back for step in data.steps)
    durations = [step.duration_ms for step in data.steps if step.duration_ms is not None]
    sections = {
        "tool_calls": [
            usage(name, [c.status for c in group], [c.duration_ms for c in group]) for name, group in calls.items()
        ],
        "executions": [
            usage(LANGUAGES.get(language, language), [s.status for s in group], [s.duration_ms for s in group])
            for language, group in languages.items()
        ],
        "failures": [
            t["failed_steps"].format(n=len(failed))
            + (
                t["error_kinds"].format(kinds=t["sep"].join(f"{md_name(k)} {n}" for k, n in kinds.most_common()))
                if kinds
                else ""
            ),
            t["superseded"].format(n=standing - len(relevant)),
            t["rolled_back"].format(n=sum(step.rolled_back for step in data.steps)),
            t["failed_calls"].format(n=sum(call.status in ("failed", "interrupted") for call in data.tool_calls)),
            *_failed_cells(data, t),
        ],
        "durations": [
            t["execution_time"].format(
                total=_duration(_total(durations)), longest=_duration(max(durations, default=None))
            ),
            t["tool_time"].format(total=_duration(_total([call.duration_ms for call in data.tool_calls]))),
        ],
        "dataset_rows": [
            t["dataset_line"].format(
                name=md_name(d.name), rows=t["unknown"] if d.rows is None else t["rows"].format(n=f"{d.rows:,}")
            )
            for d in data.datasets
        ],
        "source": [md_name(data.source)],
    }
    if narrated:
        sections["narrative"] = narrated
    return (
        templates()
        .get_template("appendix.md.j2")
        .render(t=t, sections=[{"heading": t[key], "lines": lines} for key, lines in sections.items()])
    )


def _failed_cells(data: ReportInput, t: dict[str, str]) -> list[str]:
    """The line saying which cells of a notebook run for the report failed (``--execute``), if any."""
    run = data.execution
    if run is None or not run.failed:
        return []
    cells = t["sep"].join(
        t["why"].format(ref=t["cell"].format(n=n), why=t[RUN_REASONS[why]] if why in RUN_REASONS else md_name(why))
        for n, why in run.failed
    )
    return [t["failed_cells"].format(n=len(run.failed), total=run.cells, cells=cells)]


def _duration(ms: float | None) -> str:
    if ms is None:
        return "—"
    return f"{ms:.0f} ms" if ms < 1000 else f"{ms / 1000:.1f} s"


def _total(values: Sequence[int | None]) -> float | None:
    known = [value for value in values if value is not None]
    return sum(known) if known else None
