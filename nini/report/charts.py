"""Chart files grouped into charts: one preview per chart, every format kept for download.

A chart saved as ``sales.png``, ``sales.svg`` and ``sales.pdf`` is one chart ``sales``; the report
shows it once, as the highest-priority format present, and lists all three files.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from nini.report.model import ChartFile, Step

# Preview priority, best first. gif is not in the spec's list; it is an image a browser shows, so
# it ranks with the other raster images. Formats not listed rank after pdf.
PRIORITY = ("png", "jpg", "jpeg", "webp", "gif", "svg", "html", "json", "pdf")
IMAGE_FORMATS = frozenset({"png", "jpg", "jpeg", "webp", "gif", "svg"})
COMPOUND_EXTENSIONS = (".plotly.json", ".vegalite.json")  # one extension: ``fit.plotly.json`` is chart ``fit``


@dataclass(frozen=True)
class ChartGroup:
    base: str  # the chart's name: the file name without its extension
    files: list[ChartFile]  # every format, in preview priority order
    preview: ChartFile | None  # the file shown in the report (always set for a group built here)
    order: int  # creation order of the chart: that of its earliest file


def split_name(name: str) -> tuple[str, str]:
    """``(base, format)``: ``"fit.plotly.json"`` -> ``("fit", "json")``, ``"a.PNG"`` -> ``("a", "png")``."""
    lowered = name.lower()
    for extension in COMPOUND_EXTENSIONS:
        if lowered.endswith(extension) and len(name) > len(extension):
            return name[: -len(extension)], extension.rsplit(".", 1)[-1]
    base, dot, extension = name.rpartition(".")
    if not dot or not base:
        return name, ""
    return base, extension.lower()


def preview_kind(file: ChartFile) -> Literal["image", "html", "file"]:
    """How the report shows ``file`` as a preview: an image, a link to an interactive page, or a file link."""
    fmt = split_name(file.name)[1]
    if fmt in IMAGE_FORMATS:
        return "image"
    return "html" if fmt in ("html", "htm") else "file"


def _rank(file: ChartFile) -> tuple[int, str, int]:
    fmt = split_name(file.name)[1]
    fmt = "html" if fmt == "htm" else fmt
    position = PRIORITY.index(fmt) if fmt in PRIORITY else len(PRIORITY)
    # Newest first within one format: a chart re-drawn under the same name shows its last version.
    return position, fmt, -file.order


def group_charts(files: list[ChartFile]) -> list[ChartGroup]:
    """Chart files grouped by base name, in order of creation; the same path listed twice counts once."""
    by_base: dict[str, dict[str, ChartFile]] = {}
    created: dict[str, int] = {}
    for file in sorted(files, key=lambda f: f.order):
        base = split_name(file.name)[0]
        created.setdefault(base, file.order)
        # A later record of the same path (the file was overwritten) replaces the earlier one.
        by_base.setdefault(base, {})[str(file.path)] = file
    groups = []
    for base, members in by_base.items():
        ordered = sorted(members.values(), key=_rank)
        groups.append(ChartGroup(base=base, files=ordered, preview=ordered[0], order=created[base]))
    return groups  # already in creation order: files were visited oldest first


def chart_title(group: ChartGroup, steps: list[Step]) -> str:
    """A chart's name for prose: the label of the step that drew it, else its file's base name."""
    step_id = group.files[0].step_id if group.files else None
    label = next((step.label for step in steps if step.id == step_id and step.label), None)
    return label or group.base
