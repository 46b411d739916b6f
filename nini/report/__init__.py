"""Layered analysis reports from structured records: sources -> findings and charts -> files.

``build_report`` turns a ``ReportInput`` (``from_session`` or ``from_notebook``) into Markdown and
HTML; ``write_report`` writes it under a name that never overwrites an earlier report.
"""

from nini.report.builder import RenderedReport, ReportOptions, build_report
from nini.report.model import ReportInput
from nini.report.output import write_report
from nini.report.sources import from_notebook, from_session

__all__ = [
    "RenderedReport",
    "ReportInput",
    "ReportOptions",
    "build_report",
    "from_notebook",
    "from_session",
    "write_report",
]
