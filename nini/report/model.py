"""What a report is built from: structured execution records, never chat text.

Two sources fill a ``ReportInput``: a recorded session (``sources.from_session``) and a notebook
(``sources.from_notebook``). Everything after that (findings, charts, the layered document) only
sees these types, so a notebook report and a session report are the same report.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Step:
    """One execution (a run_code / run_r_code call, or a notebook code cell)."""

    id: str
    order: int  # creation order, 0-based
    language: str  # "python" | "r"
    status: str  # "succeeded" | "failed"
    code: str
    label: str | None = None
    purpose: str | None = None
    stdout: str = ""
    stderr: str = ""
    result: Any = None  # the JSON value the code set as `result`
    error: dict[str, Any] | None = None
    dataset_name: str | None = None
    save_as: str | None = None
    retry_of: str | None = None  # the failed step this one corrects
    rolled_back: bool = False
    tool_name: str | None = None
    duration_ms: int | None = None
    created_at: str | None = None


@dataclass(frozen=True)
class ChartFile:
    """One file of a chart; a chart saved as png+svg+pdf is three ChartFiles with one base name."""

    name: str  # file name, e.g. "monthly-revenue.png" or "fit.plotly.json"
    path: Path  # absolute path of the file on disk
    order: int  # creation order, 0-based
    step_id: str | None = None


@dataclass(frozen=True)
class DatasetInfo:
    name: str
    rows: int | None = None
    columns: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class ToolCallInfo:
    """For the observability appendix only: never shown in the business sections."""

    name: str
    status: str
    duration_ms: int | None = None


@dataclass
class ReportInput:
    """Everything a report may say, from one session or one notebook."""

    source: str  # "session <id>" or the notebook's file name
    steps: list[Step] = field(default_factory=list)
    charts: list[ChartFile] = field(default_factory=list)
    datasets: list[DatasetInfo] = field(default_factory=list)
    tool_calls: list[ToolCallInfo] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # markdown text written by people (notebook cells)
    title: str | None = None  # a title the source suggests (the session's title)
