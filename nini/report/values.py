"""Values as an analyst writes them: labelled, sensibly rounded, tables as tables, no object dumps.

A finding must say what it measures, so this module decides which printed or returned values
carry a label (a ``print("slope:", x)`` line, a dict key, a cell's last expression) and drops
the rest; it rounds long floats to a few significant digits (``report.decimals``), summarises
object reprs (``DatetimeIndex(...)``, ``array(...)``) in one line, and turns DataFrames (their
HTML or their printed text) into small bounded tables instead of one flattened line.
"""

from __future__ import annotations

import ast
import math
import re
from html.parser import HTMLParser

from nini.report.model import Table  # header row first

DEFAULT_DIGITS = 4  # significant digits, the default of the ``report.decimals`` setting
MAX_TABLE_ROWS = 10
MAX_TABLE_COLUMNS = 8
MAX_CELL_CHARS = 40
MAX_EXPRESSION_CHARS = 60


def format_number(value: float, digits: int = DEFAULT_DIGITS) -> str:
    """``value`` rounded to ``digits`` significant digits; whole parts are never cut.

    ``0.5623850983416314`` reads ``0.5624``; a total such as ``2857565.0`` stays ``2857565``
    rather than ``2.858e+06``, since rounding away whole units hides real amounts.
    """
    if isinstance(value, bool) or not isinstance(value, float):
        return str(value)  # integers are exact: never rounded
    if math.isnan(value) or math.isinf(value):
        return str(value)
    if value == 0:
        return "0"
    if 10**digits <= abs(value) < 1e15:
        return f"{value:.0f}"
    return format(value, f".{max(1, digits)}g")


# A decimal literal standing alone (not part of a version number, a date or a word).
_FLOAT = re.compile(r"(?<![\w.])-?\d+\.\d+(?:[eE][-+]?\d+)?(?![\w.])")


def round_numbers(text: str, digits: int = DEFAULT_DIGITS) -> str:
    """``text`` with each float literal of more than ``digits`` significant digits rounded."""

    def replace(match: re.Match[str]) -> str:
        literal = match.group(0)
        mantissa = re.sub(r"[eE].*$", "", literal)
        significant = len(mantissa.replace("-", "").replace(".", "").lstrip("0"))
        padded = re.search(r"\.\d*0{2,}$", mantissa)  # pandas' 0.000000 and 17.000000
        return format_number(float(literal), digits) if significant > digits or padded else literal

    return _FLOAT.sub(replace, text)


_VALUE_WORDS = re.compile(r"\b(?:nan|NaN|inf|True|False|None|NA|NULL|TRUE|FALSE|e[-+]?\d+)\b")


def is_bare_value(line: str) -> bool:
    """Whether a line is a value without words saying what it is: ``7``, ``(1035, 6)``, ``[1] 5.5``."""
    rest = _VALUE_WORDS.sub("", line)
    return not re.search(r"[^\W\d_]", rest)


# Reprs a reader learns nothing from line by line: summarised in one line.
_REPR_START = re.compile(
    r"\b(DatetimeIndex|TimedeltaIndex|PeriodIndex|RangeIndex|MultiIndex|CategoricalIndex|Index|Int64Index"
    r"|Float64Index|Timestamp|Timedelta|Period|array|matrix)\("
)


def summarise_reprs(text: str) -> str:
    """``text`` with each pandas or numpy object repr replaced by a one-line summary.

    ``DatetimeIndex(['2015-07-01', ...], dtype=..., freq='B')`` becomes "DatetimeIndex of 5
    dates, 2015-07-01 to 2015-07-07"; ``Timestamp('2015-07-01 00:00:00')`` becomes the date;
    ``array([[...]])`` its shape. The repr may span lines; text around it stays.
    """
    out, position = [], 0
    for match in _REPR_START.finditer(text):
        if match.start() < position:
            continue
        end = _closing(text, match.end() - 1)
        if end is None:
            continue
        out.append(text[position : match.start()])
        out.append(_summary(match.group(1), text[match.end() : end]))
        position = end + 1
    out.append(text[position:])
    return "".join(out)


def _closing(text: str, opening: int) -> int | None:
    """The index of the parenthesis closing the one at ``opening``, skipping quoted text."""
    depth, quote = 0, ""
    for index in range(opening, len(text)):
        char = text[index]
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
            if depth == 0:
                return index
    return None


_QUOTED = re.compile(r"'([^']*)'|\"([^\"]*)\"")


def _summary(kind: str, inner: str) -> str:
    if kind in ("Timestamp", "Timedelta", "Period"):
        quoted = _QUOTED.search(inner)
        value = (quoted.group(1) or quoted.group(2)) if quoted else inner.split(",")[0]
        return value.removesuffix(" 00:00:00").strip()
    if kind in ("array", "matrix"):
        given = re.search(r"shape=\(([\d,\s]+)\)", inner)  # numpy >= 2 writes it for elided arrays
        shape = [int(n) for n in given.group(1).split(",") if n.strip()] if given else _shape(inner.split("dtype=")[0])
        return f"{kind} of shape {'×'.join(str(n) for n in shape)}" if shape else kind
    if kind == "RangeIndex":
        bounds = dict(re.findall(r"(start|stop|step)=(-?\d+)", inner))
        values = range(int(bounds.get("start", 0)), int(bounds.get("stop", 0)), int(bounds.get("step", 1)) or 1)
        return f"RangeIndex of {len(values)} values, {values[0]} to {values[-1]}" if values else "RangeIndex of 0 values"
    body = inner.split("], ")[0] if "], " in inner else inner
    items = [m.group(1) or m.group(2) for m in _QUOTED.finditer(body.split("dtype=")[0])]
    if not items:
        items = [item for item in re.split(r"[\s,\[\]]+", body.split("dtype=")[0]) if item]
    length = re.search(r"length=(\d+)", inner)
    count = int(length.group(1)) if length else len(items)
    if not items:
        return kind
    noun = "dates" if kind in ("DatetimeIndex", "PeriodIndex") else "values"
    first, last = items[0].removesuffix(" 00:00:00"), items[-1].removesuffix(" 00:00:00")
    return f"{kind} of {count} {noun}, {first} to {last}" if count > 1 else f"{kind} of 1 {noun[:-1]}, {first}"


def _shape(body: str) -> list[int]:
    """The shape of a nested list literal, from its brackets (``...`` elisions make it a guess)."""
    try:
        value = ast.literal_eval(re.sub(r"\.\.\.,?", "", body).strip().rstrip(","))
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return []
    shape = []
    while isinstance(value, (list, tuple)):
        shape.append(len(value))
        value = value[0] if value else None
    return shape


def last_expression(code: str, language: str = "python") -> str | None:
    """The source of the code's last statement when it is an expression: the label of its value.

    ``kmeans.score(X)`` labels 0.942; an assignment or a bare name of ``result`` labels nothing
    new. Python code is parsed; R's last non-comment line is taken as it is.
    """
    if language == "python":
        try:
            tree = ast.parse(code)
        except SyntaxError:
            return None
        if not tree.body or not isinstance(tree.body[-1], ast.Expr) or isinstance(tree.body[-1].value, ast.Constant):
            return None  # a literal says nothing of what it measures
        text = ast.get_source_segment(code, tree.body[-1]) or ""
    else:
        lines = [line.strip() for line in code.splitlines() if line.strip() and not line.strip().startswith("#")]
        text = lines[-1] if lines else ""
        if re.search(r"<-|^\w+\s*=[^=]", text):
            return None
    text = " ".join(text.split())
    if not text or len(text) > MAX_EXPRESSION_CHARS:
        return None
    return text


class _HTMLTable(HTMLParser):
    """The cells of the first ``<table>`` of an HTML output (pandas' ``DataFrame._repr_html_``)."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self.depth = 0
        self.done = False
        self.cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self.done:
            return
        if tag == "table":
            self.depth += 1
        elif self.depth == 1 and tag == "tr":
            self.rows.append([])
        elif self.depth == 1 and tag in ("td", "th") and self.rows:
            self.cell = []

    def handle_endtag(self, tag: str) -> None:
        if self.done:
            return
        if tag == "table":
            self.depth -= 1
            self.done = self.depth == 0
        elif tag in ("td", "th") and self.cell is not None and self.rows:
            self.rows[-1].append(" ".join("".join(self.cell).split()))
            self.cell = None

    def handle_data(self, data: str) -> None:
        if self.cell is not None:
            self.cell.append(data)


def html_table(html: str) -> Table | None:
    """The first table of an HTML output, bounded, or None when there is none.

    pandas writes a second header row for the index name (``<th>region</th><th></th>...``):
    it is folded into the first so that the table keeps one header row.
    """
    if "<table" not in html:
        return None
    parser = _HTMLTable()
    try:
        parser.feed(html)
    except Exception:  # noqa: BLE001 - a malformed output is simply not a table
        return None
    rows = [row for row in parser.rows if row]
    if len(rows) < 2:
        return None
    if len(rows) > 2 and rows[1][0] and not any(rows[1][1:]) and not rows[0][0]:
        rows[0][0] = rows[1][0]
        del rows[1]
    return bound_table(rows)


def text_table(lines: list[str]) -> Table | None:
    """A DataFrame as pandas prints it (a header line, maybe an index-name line, then rows), or None."""
    split = [re.split(r"\s{2,}", line.strip()) for line in lines if line.strip()]
    if len(split) < 2:
        return None
    if footer := _SERIES_FOOTER.match(lines[-1].strip()):
        return _series(split[:-1], footer.group(1))
    header = split[0]
    rows = split[1:]
    index_name = ""
    if rows and len(rows[0]) == 1 and _INDEX_NAME.fullmatch(rows[0][0]):
        index_name = rows[0][0]
        rows = rows[1:]
    shown = [row for row in rows if row != ["..."]]
    if len(header) > 1 or index_name:  # one cell is a Series' first pair, or a header one space apart
        if not index_name and shown and all(len(row) == len(header) for row in shown):
            return bound_table([header, *shown])  # printed without its index (``to_string(index=False)``)
        if shown and all(len(row) == len(header) + 1 for row in shown):
            return bound_table([[index_name, *header], *shown])
    # a full column leaves one space between columns ("East 948035.0  0.332"): split where every line has a gap
    columns = None if index_name else _fixed_width([line for line in lines if line.strip() not in ("", "..", "...")])
    return bound_table(columns) if columns else None


def _fixed_width(lines: list[str]) -> list[list[str]] | None:
    """``lines`` cut into columns at the character positions blank in every line (as pandas and R
    align them), or None when that gives fewer than two columns or an empty cell below the header."""
    width = max(len(line) for line in lines)
    padded = [line.ljust(width) for line in lines]
    spans, start = [], None
    for position in range(width + 1):
        blank = position == width or all(line[position] == " " for line in padded)
        if not blank and start is None:
            start = position
        elif blank and start is not None:
            spans.append((start, position))
            start = None
    rows = [[line[a:b].strip() for a, b in spans] for line in padded]
    header = rows[0][1:] if not rows[0][0] else rows[0]  # an index column has no name
    if len(spans) < 2 or any(not cell for row in rows[1:] for cell in row) or not all(map(_COLUMN_NAME.fullmatch, header)):
        return None
    return rows


def _series(split: list[list[str]], name: str | None) -> Table | None:
    """A printed pandas Series (pairs, maybe under an index-name line) as a two-column table."""
    index_name = split[0][0] if len(split[0]) == 1 and _INDEX_NAME.fullmatch(split[0][0]) else ""
    rows = [["…", "…"] if row in ([".."], ["..", ".."]) else row for row in (split[1:] if index_name else split)]
    if not rows or any(len(row) != 2 for row in rows):
        return None
    return bound_table([[index_name, name or "value"], *rows])


def bound_table(rows: list[list[str]]) -> Table:
    """At most MAX_TABLE_ROWS rows and MAX_TABLE_COLUMNS columns, with "…" where some were cut;
    numbers in cells rounded as everywhere else."""
    width = max(len(row) for row in rows)
    cut_columns = width > MAX_TABLE_COLUMNS
    shown = []
    for row in rows[: MAX_TABLE_ROWS + 1]:
        row = [*row, *[""] * (width - len(row))][:MAX_TABLE_COLUMNS]
        if cut_columns:
            row.append("…")
        shown.append(tuple(_cell(cell) for cell in row))
    if len(rows) > MAX_TABLE_ROWS + 1:
        shown.append(tuple("…" for _ in shown[0]))
    return tuple(shown)


def _cell(text: str) -> str:
    if text.strip() in ("..", "..."):
        return "…"  # pandas' elided rows
    text = round_numbers(" ".join(text.split()))
    return text if len(text) <= MAX_CELL_CHARS else text[: MAX_CELL_CHARS - 1] + "…"


_INDEX_NAME = re.compile(r"[^\W\d][\w.]*")  # what pandas prints on the line of an index's name
_COLUMN_NAME = re.compile(r"[^\s:;,!?。，：；！？]+")  # one word: a column name, not a line of prose
_COLUMNS = re.compile(r"\S\s{2,}\S")
_SERIES_FOOTER = re.compile(r"^(?:(?:Freq|Length): [^,]+, )*(?:Name: (.+?), )?(?:Length: \d+, )?dtype: \w+$")


def split_text_tables(text: str) -> tuple[str, list[Table]]:
    """``text`` without the DataFrames printed in it, and those DataFrames as tables.

    A printed frame is a run of at least three lines whose columns are two or more spaces apart;
    its header line alone would otherwise become a finding ("revenue  share").
    """
    lines = text.splitlines()
    kept: list[str] = []
    tables: list[Table] = []
    index = 0
    while index < len(lines):
        end = index
        while end < len(lines) and (_COLUMNS.search(lines[end].strip()) or lines[end].strip() in ("..", "...")
                                    or (end <= index + 1 and re.fullmatch(r"\S+", lines[end].strip()))):
            end += 1
        if end < len(lines) and _SERIES_FOOTER.match(lines[end].strip()):
            end += 1  # a Series' "Name: revenue, dtype: float64" closes its table
        # a header whose columns are one space apart (R's " region monthly_trend") above such rows
        if (end - index >= 2 and kept and kept[-1].strip() and kept[-1] == lines[index - 1]
                and not _COLUMNS.search(kept[-1].strip()) and (table := text_table(lines[index - 1:end])) is not None):
            kept.pop()
            tables.append(table)
            index = end
            continue
        if end - index >= 3 and (table := text_table(lines[index:end])) is not None:
            tables.append(table)
            index = end
            continue
        kept.append(lines[index])
        index += 1
    return "\n".join(kept), tables
