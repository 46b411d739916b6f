"""A notebook's charts as files: the images, Plotly figures and Vega/Vega-Lite specs in its cell
outputs, and the images its Markdown cells show, written out so that a report previews and links
them like a session's charts.

What is not a chart stays out: Plotly's loader (``window.PlotlyConfig``, ``require.config``), a
styling cell's ``<style>``, an empty or script-free HTML output (a DataFrame), and any HTML page
that loads scripts from elsewhere (a CDN): offline it is blank, online it runs someone else's
code. An Altair or Plotly page holds its chart's JSON; that JSON is kept as the chart instead
(``previews`` renders a static image of it). Files are written like the report's own files
(``RootedDir.write_bytes``: mode 0644 less the umask), so whoever may read the report may read them.
"""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path
from typing import Any

from nini.report.headings import cell_text
from nini.report.images import cell_images
from nini.report.model import ChartFile
from nini.rooted import RootedDir

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
    **{f"application/vnd.vega.v{n}+json": ("vega.json", "json") for n in range(1, 7)},
}
SPEC_EXTENSIONS = ("plotly.json", "vegalite.json", "vega.json")  # a chart as JSON: one of them per output
_SCRIPT = re.compile(r"<script\b", re.IGNORECASE)
# A page that loads code from elsewhere: a script with a src, an AMD loader (require/requirejs,
# whose paths point at a CDN), a dynamic import, or any http(s) or protocol-relative URL in it.
_REMOTE = re.compile(
    r"<script\b[^>]*\bsrc\s*=|\brequire(?:js)?(?:\.config)?\s*\(|\bimport\s*\(|https?:|[\"']//", re.IGNORECASE
)
# Plotly's notebook-mode bootstrap (offline.init_notebook_mode, the first fig.show()): a loader, not a chart.
_LOADER = re.compile(r"window\.PlotlyConfig|define\(\s*['\"]plotly", re.IGNORECASE)
# Where Altair's HTML holds its spec: ``})({spec}, {"mode": "vega-lite"})`` (Altair 4-6) or
# ``var spec = {spec};`` (Altair 3); Plotly's: ``Plotly.newPlot("id", [data], {layout}, {config})``.
_ALTAIR_CALL = re.compile(r"\}\)\(\s*(?=\{)")
_ALTAIR_VAR = re.compile(r"\bvar\s+spec\s*=\s*(?=\{)")
_PLOTLY_CALL = re.compile(r"Plotly\.(?:newPlot|plot)\(\s*(['\"])[^'\"]*\1\s*,\s*(?=\[)")
_EMBED_MODE = re.compile(r"""["']mode["']\s*:\s*["'](vega-lite|vega)["']""")


def slug(text: str) -> str:
    """A file-name stem of ``text``: its letters and digits (any script), joined by dashes."""
    words = re.findall(r"[^\W_]+", text.lower())
    return "-".join(words)[:60].strip("-")


def cell_charts(
    cell: Any, step_id: str, stem: str, names: NameAllocator, folder: Path, first_order: int
) -> list[ChartFile]:
    """The cell's charts as files, one base name per output (its png and svg are one chart)."""
    charts: list[ChartFile] = []
    bundles = [
        o.get("data") or {}
        for o in cell.get("outputs") or []
        if o.get("output_type") in ("display_data", "execute_result")
    ]
    bundles = [kinds for bundle in bundles if (kinds := chart_formats(bundle))]
    for index, kinds in enumerate(bundles, start=1):
        name = names.next(stem if len(bundles) == 1 else f"{stem}-{index}")
        for extension, (value, held_as) in kinds.items():
            target = write_chart(folder, f"{name}.{extension}", _decode(value, held_as))
            charts.append(ChartFile(name=target.name, path=target, order=first_order + len(charts), step_id=step_id))
    return charts


def markdown_charts(
    source: str, cell: Any, notebook_dir: Path, stem: str, names: NameAllocator, folder: Path, first_order: int
) -> list[ChartFile]:
    """The images a Markdown cell shows (``images.cell_images``) as chart files, named by their alt text."""
    charts: list[ChartFile] = []
    for image in cell_images(source, cell.get("attachments"), notebook_dir):
        target = write_chart(folder, f"{names.next(slug(image.alt) or stem + '-image')}.{image.extension}", image.data)
        charts.append(ChartFile(name=target.name, path=target, order=first_order + len(charts)))
    return charts


def write_chart(folder: Path, name: str, data: bytes) -> Path:
    """``data`` as ``folder/name``, atomically and with the mode the report's own files get; its path.
    Not fsynced: a chart is made again from its notebook, and 300 fsyncs were most of a report's time."""
    folder.mkdir(parents=True, exist_ok=True)
    RootedDir(folder, label="the report's chart folder").write_with(name, lambda file: file.write(data), durable=False)
    return folder.resolve() / name


def chart_formats(bundle: dict[str, Any]) -> dict[str, tuple[Any, str]]:
    """The chart files one output gives, by extension: ``{extension: (value, how it is held)}``;
    one per extension (a bundle's PNG and SVG are the same chart in two formats). An HTML output
    counts only through the chart JSON it holds, or as a page that runs its own scripts alone."""
    formats: dict[str, tuple[Any, str]] = {}
    for mime, (extension, held_as) in NOTEBOOK_IMAGES.items():
        if mime in bundle:
            formats.setdefault(extension, (bundle[mime], held_as))
    if "text/html" in bundle and not any(extension in formats for extension in SPEC_EXTENSIONS):
        page = cell_text(bundle["text/html"])
        if (spec := html_chart_spec(page)) is not None:
            formats[spec[0]] = (spec[1], "json")
        elif is_html_chart(page):
            formats.setdefault("html", (page, "text"))
    return formats


def is_html_chart(page: str) -> bool:
    """Whether an HTML output is a chart page to link: it runs scripts, loads none from elsewhere,
    and is not Plotly's loader. A page of a table, a ``<style>`` or nothing runs no script."""
    return bool(_SCRIPT.search(page)) and not _LOADER.search(page) and not _REMOTE.search(page)


def html_chart_spec(page: str) -> tuple[str, Any] | None:
    """``(extension, JSON)`` of the chart an Altair or Plotly HTML output draws, read from its
    script as data (never run); None when it holds none (Plotly's loader holds none)."""
    if not _SCRIPT.search(page):
        return None
    decoder = json.JSONDecoder()
    for pattern in (_ALTAIR_CALL, _ALTAIR_VAR):
        for match in reversed(list(pattern.finditer(page))):
            try:
                spec, end = decoder.raw_decode(page, match.end())
            except ValueError:
                continue
            if isinstance(spec, dict) and ("$schema" in spec or "mark" in spec or "layer" in spec or "marks" in spec):
                mode = _EMBED_MODE.search(page, end, end + 200)
                kind = mode.group(1) if mode else ("vega" if "vega/v" in str(spec.get("$schema", "")) else "vega-lite")
                return ("vega.json" if kind == "vega" else "vegalite.json"), spec
    if call := _PLOTLY_CALL.search(page):
        arguments: list[Any] = []
        position = call.end()
        for _ in range(3):  # data, layout, config
            try:
                value, position = decoder.raw_decode(page, position)
            except ValueError:
                break
            arguments.append(value)
            position = re.compile(r"\s*,?\s*").match(page, position).end()  # type: ignore[union-attr]
        if arguments and isinstance(arguments[0], list):
            figure: dict[str, Any] = {"data": arguments[0]}
            if len(arguments) > 1 and isinstance(arguments[1], dict):
                figure["layout"] = arguments[1]
            return "plotly.json", figure
    return None


def _decode(value: Any, held_as: str) -> bytes:
    if held_as == "base64":
        return base64.b64decode(cell_text(value))
    if held_as == "json" and not isinstance(value, str):
        return json.dumps(value, ensure_ascii=False).encode("utf-8")
    return cell_text(value).encode("utf-8")


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
