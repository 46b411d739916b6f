"""Values as an analyst writes them: labelled, sensibly rounded, tables as tables, no object dumps.

A finding must say what it measures, so this module decides which printed or returned values
carry a label (a ``print("slope:", x)`` line, a dict key, a cell's last expression) and drops
the rest; it rounds long floats to a few significant digits (``report.decimals``), summarises
object reprs (``DatetimeIndex(...)``, ``array(...)``) in one line, and turns an output's values
into ``Value``s: DataFrames from their table-schema JSON or HTML (``markup``), R's values from
IRkernel's displays and printed summaries (``rvalues``), printed text tables only as a last
resort, each a small bounded table with its header row instead of one flattened line.
"""

from __future__ import annotations

import ast
import math
import re
from dataclasses import replace
from typing import Any

from nini.report import pycode
from nini.report.markup import (
    MAX_TEXT_CHARS,
    RawTable,
    html_tables,
    html_words,
    markdown_table,
    markdown_words,
    schema_table,
    words,
)
from nini.report.model import Table, Value  # a Table is header row first
from nini.report.rvalues import latex_text, r_column, r_html_text, r_plain, r_printed, r_type_row

DEFAULT_DIGITS = 4  # significant digits, the default of the ``report.decimals`` setting
MAX_TABLE_ROWS = 10
MAX_TABLE_COLUMNS = 8
MAX_CELL_CHARS = 40
MAX_EXPRESSION_CHARS = 60
MAX_PARSE_CHARS = 200_000  # of one output form, cut before it is parsed
MAX_LINE_CHARS = 2_000  # of one printed table line


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
        return (
            f"RangeIndex of {len(values)} values, {values[0]} to {values[-1]}" if values else "RangeIndex of 0 values"
        )
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
        tree = pycode.parse(code)
        if tree is None:
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


def output_values(output: dict[str, Any], language: str = "python") -> list[Value]:
    """The structured values of one nbformat output (``execute_result`` or ``display_data``).

    The richest form wins: pandas' table schema, then HTML tables, then Markdown tables (IRkernel's
    data frames), then the text of Markdown, HTML and LaTeX (R vectors, ``display(Markdown(...))``),
    and ``text/plain`` last. Charts, bare object reprs (``<Figure ...>``, ``alt.Chart(...)``, ``[]``)
    and estimator reprs give nothing; a numpy array is never a table. Each form is cut to
    MAX_PARSE_CHARS before it is parsed, so a 25 MB output costs what a small one does.
    ``language`` is the kernel's ("python", "r"): R's ``[1] 55`` is read as 55 from an R kernel only.
    """
    if output.get("output_type") not in ("execute_result", "display_data"):
        return []
    data = output.get("data") or {}
    if not isinstance(data, dict) or any(kind.startswith(_CHART_TYPES) for kind in data):
        return []
    origin = "result" if output["output_type"] == "execute_result" else "display"
    plain = _mime(data, "text/plain")
    schema = data.get("application/vnd.dataresource+json")
    if schema is not None and (raw := schema_table(schema, MAX_PARSE_CHARS)) and (table := _table(raw)):
        return [Value(table=table, origin=origin)]
    markup = _mime(data, "text/html")
    if found := html_values(markup, origin):
        return found
    markdown = _mime(data, "text/markdown")
    if (raw := markdown_table(markdown)) is not None and (table := _table(raw)) is not None:
        return [Value(table=table, origin=origin)]
    bare = plain.strip()
    if _BARE_REPR.search(bare) and not _REPR_START.match(bare) and not _DISPLAY_OBJECT.match(bare):
        return []
    plain = "" if _DISPLAY_OBJECT.match(bare) else plain
    text = (
        r_html_text(markup)
        or latex_text(_mime(data, "text/latex"))
        or markdown_words(markdown)
        or html_words(markup)
        or _plain_text(plain, language)
    )
    if text and len(text) <= MAX_TEXT_CHARS:
        return [Value(text=text, origin=origin)]
    if plain and (table := text_table(plain.splitlines())) is not None:
        return [Value(table=table, origin=origin)]  # a printed DataFrame without HTML: the last resort
    return []


def printed_values(text: str, language: str = "python") -> tuple[str, list[Value]]:
    """The tables printed in ``text`` (a step's stdout) as values, and the rest of the text.

    R's model summaries and tests come first, whatever ``language`` the kernel has (a ``%%R``
    cell prints R's text into a Python kernel), then DataFrames pandas or R printed, each with
    its header row. A long output is looked through at its head and tail only.
    """
    if len(text) > MAX_PARSE_CHARS:
        head, tail = text[: MAX_PARSE_CHARS // 2], text[-(MAX_PARSE_CHARS // 2) :]
        text = head[: head.rfind("\n") + 1] + tail[tail.find("\n") + 1 :]
    rest, values = r_printed(text)
    values = [
        replace(value, table=bound_table([list(row) for row in value.table])) if value.table else value
        for value in values
    ]
    rest, tables = split_text_tables(rest)
    return rest, values + [Value(table=table, origin="printed") for table in tables]


def html_values(markup: str, origin: str = "display") -> list[Value]:
    """The DataFrames of an HTML output as tables; a table of ``label:`` / value pairs
    (statsmodels' summary) as named text values."""
    values: list[Value] = []
    for raw in html_tables(markup):
        pairs = _pairs(raw)
        if pairs:
            values += [Value(text=value, name=name, origin=origin) for name, value in pairs]
        elif (table := _table(raw)) is not None:
            values.append(Value(table=table, origin=origin))
    return values


def html_table(html: str) -> Table | None:
    """The first DataFrame of an HTML output, bounded, or None when there is none."""
    return next((value.table for value in html_values(html) if value.table), None)


def _table(raw: RawTable) -> Table | None:
    """A parsed table with one header row: the levels of MultiIndex columns joined, the index
    names pandas writes on a row of their own moved into it, IRkernel's type row dropped."""
    head = [row for row in raw.head if not r_type_row(row)]
    body = raw.body
    if not head or not body:
        return None
    width = max(len(row) for row in head + body)
    head = [row + [""] * (width - len(row)) for row in head]
    index = raw.row_heads[0] if raw.row_heads else 0
    names = None
    if len(head) > 1 and any(head[-1][:index]) and not any(head[-1][index:]):
        names = head.pop()
    header = []
    for column in range(width):
        if column < index:
            header.append(names[column] if names else head[-1][column])
            continue
        levels = [row[column] for row in head if row[column]]
        header.append(" ".join(level for n, level in enumerate(levels) if n == 0 or level != levels[n - 1]))
    header = [r_column(name) for name in header]
    if width < 2 or not any(header[index:]):
        return None
    return bound_table([header, *body], more_rows=raw.more_rows, more_columns=raw.more_columns)


def _pairs(raw: RawTable) -> list[tuple[str, str]]:
    """``[(label, value)]`` when every row is label/value pairs whose labels end in a colon."""
    rows = raw.head + raw.body
    pairs = [(row[n].rstrip(":").strip(), row[n + 1]) for row in rows for n in range(0, len(row) - 1, 2) if row[n]]
    labelled = all(
        len(row) % 2 == 0 and all(not row[n] or row[n].endswith(":") for n in range(0, len(row), 2)) for row in rows
    )
    return [(name, value) for name, value in pairs if value] if labelled and pairs else []


def _mime(data: dict[str, Any], kind: str) -> str:
    """A text mime of the bundle (a string or nbformat's list of lines), cut before parsing."""
    value = data.get(kind)
    if isinstance(value, list):
        value = "".join(str(part) for part in value[: MAX_PARSE_CHARS // 20])
    return value[:MAX_PARSE_CHARS] if isinstance(value, str) else ""


def _plain_text(plain: str, language: str) -> str | None:
    """``text/plain`` as a value: R's ``[1] 55`` is 55, a numpy array is summarised (a short 1-D
    one listed), a DataFrame's text is left to the table parser."""
    if language == "r" and (r_text := r_plain(plain)):
        return r_text
    text = plain.strip()
    if one_d := _ONE_D_ARRAY.fullmatch(" ".join(text.split())):
        items = [item for item in re.split(r"[\s,]+", one_d.group(1)) if item]
        if 0 < len(items) <= MAX_TABLE_ROWS:
            return ", ".join(items)
    if _REPR_START.match(text):
        return summarise_reprs(text)
    lines = text.splitlines()
    if len(lines) > 3 or (len(lines) > 1 and split_text_tables(text)[1]):
        return None  # a printed table, not a short value
    return words(text)


_CHART_TYPES = (
    "image/",
    "application/vnd.vegalite",
    "application/vnd.vega",
    "application/vnd.plotly",
    "application/vnd.jupyter.widget-view",
)
# A repr that names an object instead of giving a value: <Figure ...>, [<Line2D ...>], Text(0.5, 1, 't'),
# alt.Chart(...), LinearRegression(), <Axes: ...>, [] from ax.plot().
_BARE_REPR = re.compile(
    r"^(?:\[\s*\]|\(?\[?<[^>]*>.*|.*\bat 0x[0-9a-f]+>.*|(?:[a-z_]\w*\.)*[A-Z]\w*\(.*\)|Text\(.*\)"
    r"|\((?:array\(.*\), ){1,2}<[^>]*>\))$",
    re.S,
)
_DISPLAY_OBJECT = re.compile(r"^<IPython\.core\.display\.(?:HTML|Markdown|Latex|Math) object>$")
_ONE_D_ARRAY = re.compile(r"array\(\[([^\[\]]*)\](?:, dtype=\w+)?\)")


def text_table(lines: list[str]) -> Table | None:
    """A DataFrame as pandas (or R) prints it, header row kept, or None.

    Columns are cut where every line is blank (pandas and R align them), so the header keeps its
    place above its column: MultiIndex column levels are joined ("2023 5"), the line of index
    names below them becomes the index's header, and a sparse MultiIndex is filled down. Only the
    first MAX_TABLE_ROWS rows are looked at.
    """
    lines = [line.rstrip() for line in lines if line.strip() and not _FRAME_FOOTER.fullmatch(line.strip())]
    if len(lines) < 2:
        return None
    if footer := _SERIES_FOOTER.match(lines[-1].strip()):
        return _series(lines[:-1], footer.group(1))
    more = len(lines) > MAX_TABLE_ROWS + 4
    lines = [line[:MAX_LINE_CHARS] for line in lines[: MAX_TABLE_ROWS + 4]]
    return _spaced(lines, more) or _aligned(lines, more)


def _spaced(lines: list[str], more: bool) -> Table | None:
    """A frame whose columns are two or more spaces apart on every line (the common case, and
    the safe one for values with single spaces, "New York")."""
    split = [re.split(r"\s{2,}", line.strip()) for line in lines]
    header, rows = split[0], [row for row in split[1:] if row != ["..."]]
    if len(header) < 2 or not rows or not all(map(_COLUMN_NAME.fullmatch, header)):
        return None
    if all(len(row) == len(header) for row in rows) and lines[0][:1] != " ":
        return bound_table([header, *rows], more_rows=more)  # printed without its index
    if all(len(row) == len(header) + 1 for row in rows):
        return bound_table([["", *header], *rows], more_rows=more)
    return None


def _aligned(lines: list[str], more: bool, index: int | None = None) -> Table | None:
    """``lines`` cut into columns at the positions blank in every line; None when the header
    does not name every column or a value is missing. ``index``: how many index columns, when known."""
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
    if len(spans) < 2:
        return None
    grid = [[line[a:b].strip() for a, b in spans] for line in padded]
    # pandas' line of index names: names in the first columns only, above the first row's index
    at = next((n for n in range(1, min(4, len(grid) - 1)) if _names_only(grid[n]) and grid[n + 1][0]), None)
    if index is not None:
        head, names, body = grid[:1], None, grid[1:]
    elif at is not None:
        head, names, body = grid[:at], grid[at], grid[at + 1 :]
        index = max(k for k, cell in enumerate(names) if cell) + 1
    else:
        count = 1
        while count < len(grid) - 1 and not grid[0][0] and not grid[count][0]:
            count += 1  # MultiIndex column levels above an unnamed index
        head, names, body = grid[:count], None, grid[count:]
        index = next((k for k, cell in enumerate(head[-1]) if cell), 0)
    for row in head[:-1]:  # a sparse column level names the columns after it too
        for k in range(index + 1, len(row)):
            row[k] = row[k] or row[k - 1]
    header = [
        (names[k] if names else head[-1][k]) if k < index else " ".join(r[k] for r in head if r[k])
        for k in range(len(spans))
    ]
    if not all(_COLUMN_NAME.fullmatch(word) for name in header[index:] for word in (name.split() or [""])):
        return None
    if not all(any(row[index:]) for row in head):
        return None  # a line above the header (a title) is not a column level
    for previous, row in zip(body, body[1:], strict=False):
        row[:index] = [cell or above for cell, above in zip(row[:index], previous[:index], strict=False)]
    if not body or (index and not all(body[0][:index])) or any(not cell for row in body for cell in row[index:]):
        return None
    return bound_table([header, *body], more_rows=more)


def _names_only(row: list[str]) -> bool:
    filled = [k for k, cell in enumerate(row) if cell]
    return bool(filled) and filled == list(range(len(filled))) and len(filled) < len(row)


def _series(lines: list[str], name: str | None) -> Table | None:
    """A printed pandas Series (pairs, maybe under an index-name line) as a two-column table."""
    split = [re.split(r"\s{2,}", line.strip()) for line in lines]
    index_name = split[0][0] if len(split[0]) == 1 and _INDEX_NAME.fullmatch(split[0][0]) else ""
    rows = [["…", "…"] if row in ([".."], ["..", ".."]) else row for row in (split[1:] if index_name else split)]
    if rows and all(len(row) == 2 for row in rows):
        return bound_table([[index_name, name or "value"], *rows])
    # a MultiIndex Series: its index names on the first line, the name right-aligned above the values
    names, name = lines[0].strip(), name or "value"
    width = max(len(line) for line in lines)
    if not _NAMES_LINE.fullmatch(names) or len(lines[0].rstrip()) >= width - len(name):
        return None
    return _aligned([lines[0].rstrip().ljust(width - len(name)) + name, *lines[1:]], False, index=len(names.split()))


def bound_table(rows: list[list[str]], *, more_rows: bool = False, more_columns: bool = False) -> Table:
    """At most MAX_TABLE_ROWS rows and MAX_TABLE_COLUMNS columns, with "…" where some were cut
    (here or, ``more_rows``/``more_columns``, by the parser before); numbers in cells rounded."""
    width = max(len(row) for row in rows)
    cut_columns = more_columns or width > MAX_TABLE_COLUMNS
    shown = []
    for row in rows[: MAX_TABLE_ROWS + 1]:
        row = [*row, *[""] * (width - len(row))][:MAX_TABLE_COLUMNS]
        if cut_columns:
            row.append("…")
        shown.append(tuple(_cell(cell) for cell in row))
    if more_rows or len(rows) > MAX_TABLE_ROWS + 1:
        shown.append(tuple("…" for _ in shown[0]))
    return tuple(shown)


def _cell(text: str) -> str:
    if text.strip() in ("..", "...", "⋯", "…"):
        return "…"  # elided rows or columns (pandas, R)
    text = round_numbers(" ".join(text.split()))
    return text if len(text) <= MAX_CELL_CHARS else text[: MAX_CELL_CHARS - 1] + "…"


_INDEX_NAME = re.compile(r"[^\W\d][\w.]*")  # what pandas prints on the line of an index's name
_COLUMN_NAME = re.compile(r"[^\s:;,!?。，：；！？]+")  # one word: a column name, not a line of prose
_COLUMNS = re.compile(r"\S\s{2,}\S")
_NAMES_LINE = re.compile(r"[^\W\d][\w.]*(?: +[^\W\d][\w.]*){0,3}")  # a line of index names
_FRAME_FOOTER = re.compile(r"\[\d+ rows x \d+ columns\]")
_SERIES_FOOTER = re.compile(r"^(?:(?:Freq|Length): [^,]+, )*(?:Name: (.+?), )?(?:Length: \d+, )?dtype: \w+$")


def split_text_tables(text: str) -> tuple[str, list[Table]]:
    """``text`` without the DataFrames printed in it, and those DataFrames as tables.

    A printed frame is a run of at least three lines whose columns are two or more spaces apart
    (an index-name line of a few words may sit among its first lines); its header line alone
    would otherwise become a finding ("revenue  share").
    """
    lines = text.splitlines()
    kept: list[str] = []
    tables: list[Table] = []
    index = 0
    while index < len(lines):
        end = index
        while end < len(lines) and _in_frame(lines, end, index):
            end += 1
        if end < len(lines) and (
            _SERIES_FOOTER.match(lines[end].strip()) or _FRAME_FOOTER.fullmatch(lines[end].strip())
        ):
            end += 1  # a Series' "Name: revenue, dtype: float64" or a frame's "[5 rows x 3 columns]" closes it
        # a header whose columns are one space apart (R's " region monthly_trend") above such rows
        if (
            end - index >= 2
            and kept
            and kept[-1].strip()
            and kept[-1] == lines[index - 1]
            and not _COLUMNS.search(kept[-1].strip())
            and all(map(_COLUMN_NAME.fullmatch, kept[-1].split()))
            and (table := text_table(lines[index - 1 : end])) is not None
        ):
            kept.pop()
            tables.append(table)
            index = end
            continue
        if end - index >= 3:
            # the frame may start one line into the run (a title with a gap in it); a run that is no
            # frame is passed whole, so that a long aligned log costs one look, not one per line
            offset = next(
                (n for n in (0, 1) if end - index - n >= 3 and (table := text_table(lines[index + n : end]))), None
            )
            kept += lines[index : index + offset] if offset is not None else lines[index:end]
            tables += [table] if offset is not None and table else []
            index = end
            continue
        kept.append(lines[index])
        index += 1
    return "\n".join(kept), tables


def _in_frame(lines: list[str], at: int, start: int) -> bool:
    """Whether ``lines[at]`` continues a printed frame that starts at ``start``."""
    line = lines[at].strip()
    if _COLUMNS.search(line) or line in ("..", "..."):
        return True
    if at <= start + 1 and _COLUMN_NAME.fullmatch(line):
        return True  # a header of one column, or an index name
    # pandas' index-name line below MultiIndex column levels ("region month"), then a row
    return (
        at <= start + 3
        and bool(_NAMES_LINE.fullmatch(line))
        and at + 1 < len(lines)
        and bool(_COLUMNS.search(lines[at + 1].strip()))
        and at > start
    )
