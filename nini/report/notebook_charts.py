"""A notebook's charts as files: the images (and Plotly, Vega-Lite, script-driven HTML) in its cell
outputs, and the images its Markdown cells show, written out so that a report previews and links
them like a session's charts."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path
from typing import Any

from nini.fsutil import atomic_write_bytes
from nini.report.images import cell_images
from nini.report.model import ChartFile

# Output mime types of a notebook that become chart files: extension, and how nbformat holds the
# content (base64 text, plain text, or JSON already parsed into dicts and lists).
NOTEBOOK_IMAGES = {
    "image/png": ("png", "base64"),
    "image/jpeg": ("jpg", "base64"),
    "image/gif": ("gif", "base64"),
    "image/webp": ("webp", "base64"),
    "image/svg+xml": ("svg", "text"),
    "application/pdf": ("pdf", "base64"),
    "application/vnd.plotly.v1+json": ("plotly.json", "json"),
    **{f"application/vnd.vegalite.v{n}+json": ("vegalite.json", "json") for n in range(1, 7)},
}
# An HTML output is a chart when it runs scripts (Plotly, Bokeh, Altair, widgets): saved as its own
# page, linked from the report. Without scripts it is a table or text (a DataFrame), not a chart.
HTML_CHART = ("text/html", ("html", "text"))
_SCRIPT = re.compile(r"<script\b", re.IGNORECASE)


def slug(text: str) -> str:
    """A file-name stem of ``text``: its letters and digits (any script), joined by dashes."""
    words = re.findall(r"[^\W_]+", text.lower())
    return "-".join(words)[:60].strip("-")


def cell_charts(
    cell: Any, step_id: str, stem: str, names: NameAllocator, folder: Path, first_order: int
) -> list[ChartFile]:
    """The cell's images as files, one base name per output (its png and svg are one chart)."""
    charts: list[ChartFile] = []
    bundles = [o.get("data") or {} for o in cell.get("outputs") or []
               if o.get("output_type") in ("display_data", "execute_result")]  # fmt: skip
    bundles = [kinds for bundle in bundles if (kinds := _chart_formats(bundle))]
    for index, kinds in enumerate(bundles, start=1):
        name = names.next(stem if len(bundles) == 1 else f"{stem}-{index}")
        for extension, (value, held_as) in kinds.items():
            target = folder / f"{name}.{extension}"
            atomic_write_bytes(target, _decode(value, held_as))
            charts.append(ChartFile(name=target.name, path=target.resolve(), order=first_order + len(charts),
                                    step_id=step_id))  # fmt: skip
    return charts


def markdown_charts(
    source: str, cell: Any, notebook_dir: Path, stem: str, names: NameAllocator, folder: Path, first_order: int
) -> list[ChartFile]:
    """The images a Markdown cell shows (``images.cell_images``) as chart files, named by their alt text."""
    charts: list[ChartFile] = []
    for image in cell_images(source, cell.get("attachments"), notebook_dir):
        target = folder / f"{names.next(slug(image.alt) or stem + '-image')}.{image.extension}"
        atomic_write_bytes(target, image.data)
        charts.append(ChartFile(name=target.name, path=target.resolve(), order=first_order + len(charts)))
    return charts


def _chart_formats(bundle: dict[str, Any]) -> dict[str, tuple[Any, str]]:
    """The chart files one output gives, by extension: ``{extension: (value, how it is held)}``;
    one per extension (a bundle's PNG and SVG are the same chart in two formats)."""
    formats: dict[str, tuple[Any, str]] = {}
    for mime, (extension, held_as) in NOTEBOOK_IMAGES.items():
        if mime in bundle:
            formats.setdefault(extension, (bundle[mime], held_as))
    mime, (extension, held_as) = HTML_CHART
    if mime in bundle and _SCRIPT.search(_text(bundle[mime])):
        formats.setdefault(extension, (bundle[mime], held_as))
    return formats


def _decode(value: Any, held_as: str) -> bytes:
    if held_as == "base64":
        return base64.b64decode(_text(value))
    if held_as == "json" and not isinstance(value, str):
        return json.dumps(value, ensure_ascii=False).encode("utf-8")
    return _text(value).encode("utf-8")


def _text(value: Any) -> str:
    """nbformat keeps multi-line text either as one string or as a list of lines."""
    if value is None:
        return ""
    return "".join(value) if isinstance(value, list) else str(value)


class NameAllocator:
    """Unique names within one notebook: the second chart named "trend" is "trend-2"."""

    def __init__(self, suffix: str = "-{n}") -> None:
        self._suffix = suffix
        self._used: set[str] = set()

    def next(self, name: str) -> str:
        candidate, n = name, 1
        while candidate.casefold() in self._used:
            n += 1
            candidate = name + self._suffix.format(n=n)
        return self.take(candidate)

    def take(self, name: str) -> str:
        """``name`` as it is, marked as used."""
        self._used.add(name.casefold())
        return name
