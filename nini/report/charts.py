"""Chart files grouped into charts, and each chart's caption.

A chart saved as ``sales.png``, ``sales.svg`` and ``sales.pdf`` is one chart ``sales``; the report
shows it once, as the highest-priority format present, and lists all three files. Its caption is
the title the chart gives itself (the cell's ``plt.title``/``set_title``/``suptitle``, Plotly's
``layout.title``, Vega's ``title``), else the heading it sits under, else ``cell N``: never a
file-name slug.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

from nini.report import pycode
from nini.report.model import ChartFile, Step

# Preview priority, best first. gif is not in the spec's list; it is an image a browser shows, so
# it ranks with the other raster images. Formats not listed rank after pdf.
PRIORITY = ("png", "jpg", "jpeg", "webp", "gif", "svg", "html", "json", "pdf")
IMAGE_FORMATS = frozenset({"png", "jpg", "jpeg", "webp", "gif", "svg"})
# one extension each: ``fit.plotly.json`` is chart ``fit``
COMPOUND_EXTENSIONS = (".plotly.json", ".vegalite.json", ".vega.json")
MAX_CAPTION_CHARS = 120
MAX_SPEC_READ = 4 * 1024 * 1024  # a chart JSON larger than this is not read for its title
_MPL_TITLES = {"suptitle": 0, "title": 1, "set_title": 1}  # call name -> rank (a figure's suptitle first)
_R_TITLE = re.compile(r"""\b(?:main\s*=|ggtitle\(|labs\([^)]*?\btitle\s*=)\s*(["'])((?:(?!\1).){1,200})\1""")
_SHOW = re.compile(r"(?:^|\.)(?:show|display)$")


@dataclass(frozen=True)
class ChartGroup:
    base: str  # the chart's name: the file name without its extension
    files: list[ChartFile]  # every format, in preview priority order
    preview: ChartFile | None  # the file shown in the report (always set for a group built here)
    order: int  # creation order of the chart: that of its earliest file
    index_in_step: int = 0  # this chart's position among the charts its step drew (0-based)
    step_charts: int = 1  # how many charts its step drew


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


def spec_kind(name: str) -> str | None:
    """``"plotly"``, ``"vegalite"`` or ``"vega"`` for a chart's JSON file, else None."""
    lowered = name.lower()
    return next((ext.split(".")[1] for ext in COMPOUND_EXTENSIONS if lowered.endswith(ext)), None)


def preview_kind(file: ChartFile) -> Literal["image", "html", "interactive", "file"]:
    """How the report shows ``file`` as a preview: an image; a link to a page; for a Plotly or
    Vega chart without a static preview, an "interactive chart, open the file" entry; else a file link."""
    fmt = split_name(file.name)[1]
    if fmt in IMAGE_FORMATS:
        return "image"
    if fmt in ("html", "htm"):
        return "html"
    return "interactive" if spec_kind(file.name) else "file"


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
    per_step: dict[str | None, list[str]] = {}
    for base, members in by_base.items():
        step_id = next(iter(members.values())).step_id
        per_step.setdefault(step_id, []).append(base)
    groups = []
    for base, members in by_base.items():
        ordered = sorted(members.values(), key=_rank)
        siblings = per_step[ordered[0].step_id] if ordered[0].step_id is not None else [base]
        groups.append(
            ChartGroup(
                base=base,
                files=ordered,
                preview=ordered[0],
                order=created[base],
                index_in_step=siblings.index(base),
                step_charts=len(siblings),
            )
        )
    return groups  # already in creation order: files were visited oldest first


def chart_title(group: ChartGroup, steps: list[Step]) -> str:
    """A chart's caption: its own title (the JSON's, else the one its cell's code sets), else the
    heading above its cell, else its step's label, else ``cell N``; a file name only for a chart
    no step drew (a notebook's Markdown image), made readable."""
    step_id = group.files[0].step_id if group.files else None
    step = _steps_by_id(steps).get(step_id) if step_id is not None else None
    own = _spec_title(group) or (
        _code_title(step.code, step.language, group.index_in_step, group.step_charts) if step is not None else None
    )
    if own:
        return own
    if step is not None:
        if step.section or step.label:
            return _short(step.section or step.label or "")
        if step.cell is not None:
            return f"cell {step.cell}"
    return _readable(group.base)


_last_index: tuple[list[Step], int, dict[str, Step]] | None = None


def _steps_by_id(steps: list[Step]) -> dict[str, Step]:
    """``steps`` by id, kept for the last list asked about: a report captions each chart several
    times (summary, figures, the model's facts) from one list, and a search per caption is O(steps)."""
    global _last_index
    last = _last_index
    if last is not None and last[0] is steps and last[1] == len(steps):
        return last[2]
    index: dict[str, Step] = {}
    for step in steps:
        index.setdefault(step.id, step)
    _last_index = (steps, len(steps), index)
    return index


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_CAPTION_CHARS else text[: MAX_CAPTION_CHARS - 1].rstrip() + "…"


def _readable(base: str) -> str:
    """A file name as words: ``cell-12-image`` -> ``cell 12``, ``flow-chart`` -> ``flow chart``."""
    if match := re.fullmatch(r"cell-(\d+)(?:-\w+)*", base):
        return f"cell {match.group(1)}"
    return base.replace("-", " ").replace("_", " ")


def _spec_title(group: ChartGroup) -> str | None:
    """The title a Plotly figure (``layout.title``: a string or ``{text}``) or a Vega/Vega-Lite
    spec (``title``: a string, a list of lines or ``{text}``) gives itself."""
    file = next((f for f in group.files if spec_kind(f.name)), None)
    if file is None:
        return None
    try:
        if file.fs is not None and file.relative is not None:
            raw = file.fs.read_bytes(file.relative, limit=MAX_SPEC_READ)
        else:
            with open(file.path, "rb") as handle:
                raw = handle.read(MAX_SPEC_READ + 1)
        spec = json.loads(raw) if len(raw) <= MAX_SPEC_READ else None
    except Exception:  # noqa: BLE001 - gone, refused, too large or not JSON: no title from it, the caption falls back
        return None
    if not isinstance(spec, dict):
        return None
    title = (spec.get("layout") or {}).get("title") if spec_kind(file.name) == "plotly" else spec.get("title")
    if isinstance(title, dict):
        title = title.get("text")
    if isinstance(title, list):
        title = " ".join(str(line) for line in title)
    return _short(_plain(title)) if isinstance(title, str) and _plain(title) else None


def _plain(text: str) -> str:
    """Plotly titles may hold ``<b>``/``<br>`` markup: the words only."""
    return " ".join(re.sub(r"<[^>]*>", " ", text).split())


def _code_title(code: str, language: str, index: int, count: int) -> str | None:
    """The title the cell's code gives the ``index``-th of its ``count`` charts: matplotlib's
    ``suptitle``/``title``/``set_title`` (or ``ax.set(title=...)``) with a string literal (an
    f-string or a variable gives none); R's ``main =``, ``ggtitle``, ``labs(title =)``. A cell that
    shows its figures one by one (``plt.show()``) gives each chart the title of its own part."""
    parts = _figure_titles(code) if language == "python" else _r_titles(code)
    if not parts:
        return None
    if count > 1 and len(parts) == count:
        return parts[index]
    return next((title for title in parts if title), None)


@lru_cache(maxsize=512)
def _figure_titles(code: str) -> tuple[str | None, ...]:
    """The title of each figure the cell shows, in order: its code cut at every ``show()`` call."""
    source = "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in code.splitlines())
    tree = pycode.parse(source)
    if tree is None:
        return ()
    parts: list[list[tuple[int, str]]] = [[]]
    for statement in tree.body:
        for node in ast.walk(statement):
            if isinstance(node, ast.Call) and (found := _title_call(node)):
                parts[-1].append(found)
        if _shows(statement):
            parts.append([])
    if not parts[-1] and len(parts) > 1:
        parts.pop()  # nothing after the last show()
    return tuple(min(found, key=lambda f: f[0])[1] if found else None for found in parts)  # the first of the best rank


def _title_call(node: ast.Call) -> tuple[int, str] | None:
    """``(rank, title)`` of a matplotlib title call with a string literal, else None."""
    name = (
        node.func.attr
        if isinstance(node.func, ast.Attribute)
        else node.func.id
        if isinstance(node.func, ast.Name)
        else ""
    )
    if name in _MPL_TITLES:
        argument = (
            node.args[0] if node.args else next((k.value for k in node.keywords if k.arg in ("label", "t")), None)
        )
        rank = _MPL_TITLES[name]
    elif name == "set":
        argument, rank = next((k.value for k in node.keywords if k.arg == "title"), None), 1
    else:
        return None
    if isinstance(argument, ast.Constant) and isinstance(argument.value, str) and argument.value.strip():
        return rank, _short(argument.value)
    return None


def _shows(statement: ast.stmt) -> bool:
    """Whether a top-level statement is ``plt.show()``, ``fig.show()`` or ``display(fig)``."""
    if not (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call)):
        return False
    func: Any = statement.value.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    return bool(_SHOW.search(name))


def _r_titles(code: str) -> tuple[str | None, ...]:
    return tuple(_short(match.group(2)) for match in _R_TITLE.finditer(code))
