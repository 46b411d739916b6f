"""What a report is built from: structured execution records, never chat text.

Two sources fill a ``ReportInput``: a recorded session (``sources.from_session``) and a notebook
(``sources.from_notebook``). Everything after that (findings, charts, the layered document) only
sees these types, so a notebook report and a session report are the same report.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

Table = tuple[tuple[str, ...], ...]  # a bounded table of display strings, header row first


@dataclass(frozen=True)
class Value:
    """One value a step showed, structured: a DataFrame from its HTML or JSON, an R value from
    IRkernel's ``display_data``, a model summary R printed, or a short text value. Findings rank
    these; they never re-parse flattened text when a structured form was there."""

    text: str | None = None  # a short value as text (markdown, LaTeX and plain text reduced to words)
    table: Table | None = None  # header row first
    name: str | None = None  # what the value is called, when known (the last expression, a Series' name, an R call)
    origin: str = "display"  # "result" (the cell's last expression), "display" (display_data), "printed" (stdout)


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
    # a DataFrame the step displayed (a notebook's text/html output), header row first, bounded
    table: Table | None = None
    error: dict[str, Any] | None = None
    dataset_name: str | None = None
    save_as: str | None = None
    retry_of: str | None = None  # the failed step this one corrects
    rolled_back: bool = False
    tool_name: str | None = None
    duration_ms: int | None = None
    created_at: str | None = None
    cell: int | None = None  # a notebook step's cell: its 1-based position among all the notebook's cells
    section: str | None = None  # the nearest heading above the step (a notebook's Markdown)
    values: tuple[Value, ...] = ()  # what it showed, structured, in output order


@dataclass(frozen=True)
class ChartFile:
    """One file of a chart; a chart saved as png+svg+pdf is three ChartFiles with one base name.

    A session's chart lives in a workspace that agent code writes: it is read through the
    workspace file system (``fs`` and ``relative``), which never follows a link, never by ``path``.
    ``path`` serves to compute links; a chart nini wrote itself (a notebook's) has no ``fs``.
    """

    name: str  # file name, e.g. "monthly-revenue.png" or "fit.plotly.json"
    path: Path  # absolute path of the file on disk
    order: int  # creation order, 0-based
    step_id: str | None = None
    fs: Any = field(default=None, compare=False, repr=False)  # a rooted.RootedDir
    relative: str | None = None  # the path beneath ``fs``'s root

    def read_bytes(self) -> bytes:
        """The file's content; OSError or NiniError when it is gone or refused."""
        if self.fs is not None and self.relative is not None:
            return self.fs.read_bytes(self.relative)
        return Path(self.path).read_bytes()


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


# Why a cell of a notebook run (``--execute``) failed, besides the exception's name it raised.
TIMED_OUT = "timeout"
NOT_RUN = "not run"  # the kernel died before it (or the run stopped): it never ran
KERNEL_DIED = "kernel died"  # the kernel died while it ran


@dataclass
class ExecutionSummary:
    """How a notebook run for its report went (``nini report --execute``): never a silent failure.

    Cell numbers are the cells' 1-based positions among all the notebook's cells (``Step.cell``),
    so "cell 51 failed" and "Figure 21 (cell 51)" name the same cell. When no kernel could run
    the notebook (``kernel`` None), the report is from its saved outputs and ``missing_kernel``
    says why; ``kernel`` differing from the notebook's own is ``--kernel auto``'s substitute.
    """

    cells: int  # the code cells that were to run
    failed: list[tuple[int, str]] = field(
        default_factory=list
    )  # (cell number, exception name | TIMED_OUT | NOT_RUN | KERNEL_DIED)
    kernel: str | None = None  # the kernelspec that ran it; None: nothing ran, the saved outputs are reported
    missing_kernel: str | None = None  # the kernel the notebook (or --kernel auto) asked for that is not installed
    kernel_problem: str = "not installed"  # or "could not start" (its program is gone, or it died starting)

    def note(self) -> str | None:
        """Why the report is not from a run of the notebook's own kernel, or None."""
        if self.missing_kernel is None:
            return None
        if self.kernel is None:
            return f"ran from saved outputs: kernel {self.missing_kernel} {self._problem()}"
        return f"ran with kernel {self.kernel}: kernel {self.missing_kernel} {self._problem()}"

    def _problem(self) -> str:
        return "is not installed" if self.kernel_problem == "not installed" else self.kernel_problem

    def message(self) -> str | None:
        """``3 of 15 cells failed: cell 4 (NameError), ...`` and the note; None when every cell ran."""
        note = self.note()
        parts = [note] if note else []
        if self.failed:
            cells = ", ".join(f"cell {number} ({why})" for number, why in self.failed)
            parts.append(f"{len(self.failed)} of {self.cells} cells failed: {cells}")
        return "\n".join(parts) or None


@dataclass
class ReportInput:
    """Everything a report may say, from one session or one notebook."""

    source: str  # "session <id>" or the notebook's file name
    steps: list[Step] = field(default_factory=list)
    charts: list[ChartFile] = field(default_factory=list)
    datasets: list[DatasetInfo] = field(default_factory=list)
    tool_calls: list[ToolCallInfo] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # markdown text written by people (notebook cells)
    title: str | None = (
        None  # the source's title: the session's; a notebook's metadata title, first heading before code, or file name
    )
    execution: ExecutionSummary | None = None  # a notebook run first (--execute): what failed, which kernel
    # the text of the notebook's own concluding section (Conclusion, Summary, 结论, ...), bounded; None: it has none
    conclusion: str | None = None
