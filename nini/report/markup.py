"""The tables in an output's markup (HTML, Markdown, pandas' table-schema JSON) as raw rows.

Parsing only: a ``RawTable`` keeps header rows and body rows apart and says where rows or
columns were cut; ``values`` turns it into a bounded, rounded ``Table``. The HTML goes through a
real parser (the stdlib's ``HTMLParser``): entities, nested tags, ``colspan``/``rowspan`` and
several header rows are handled, CSS and scripts are never read as text, and the work stops at
a fixed number of rows and cells however large the output.
"""

from __future__ import annotations

import html
import json
import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any

MAX_ROWS = 10  # body rows kept (values.MAX_TABLE_ROWS): one more marks a cut
MAX_CELLS = 12  # cells kept per row: the index columns and values.MAX_TABLE_COLUMNS
MAX_CELL_CHARS = 200
ROW_CHARS = 8_000  # of one row's markup: far more than MAX_CELLS cells take
FEED_CHARS = 4_096  # markup is parsed in pieces so that parsing stops once a table has all the rows it shows
MAX_TABLES = 4  # top-level tables of one output (statsmodels' summary has three)
MAX_LIST_ITEMS = 10
MAX_TEXT_CHARS = 300  # a text value longer than this is prose or a dump, not a value
_SKIPPED = {"style", "script", "caption", "template", "noscript"}


@dataclass
class RawTable:
    head: list[list[str]] = field(default_factory=list)  # header rows (``<thead>``, or leading rows of ``<th>``)
    body: list[list[str]] = field(default_factory=list)
    row_heads: list[int] = field(default_factory=list)  # per body row: how many leading cells are ``<th>``
    more_rows: bool = False
    more_columns: bool = False


class _Tables(HTMLParser):
    """The top-level ``<table>``s of an HTML output; a table inside a cell is that cell's text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tables: list[RawTable] = []
        self.current: RawTable | None = None  # None past MAX_TABLES
        self.depth = 0
        self.skip = 0
        self.in_head = False
        self.row: list[str] | None = None
        self.row_th = 0  # leading <th> cells of the current row
        self.row_all_th = True
        self.cell: list[str] | None = None
        self.cell_th = False
        self.span = (1, 1)
        self.pending: dict[int, list[Any]] = {}  # column -> [text, rows left] of a rowspan

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIPPED:
            self.skip += 1
        elif tag == "table":
            self.depth += 1
            if self.depth == 1:
                self.current = RawTable() if len(self.tables) < MAX_TABLES else None
                self.tables += [self.current] if self.current else []
                self.in_head, self.pending = False, {}
        elif self.depth != 1 or self.current is None:
            if self.cell is not None and tag in ("td", "th", "br", "li", "p", "div"):
                self.cell.append(" ")  # a nested table's cells stay words apart
        elif tag == "thead":
            self.in_head = True
        elif tag in ("tbody", "tfoot"):
            self.in_head = False
        elif tag == "tr":
            self._end_row()
            self.row, self.row_th, self.row_all_th = [], 0, True
        elif tag in ("td", "th") and self.row is not None:
            self._end_cell()
            names = dict(attrs)
            self.cell, self.cell_th = [], tag == "th"
            self.span = (_number(names.get("colspan")), _number(names.get("rowspan")))
        elif tag == "br" and self.cell is not None:
            self.cell.append(" ")

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIPPED:
            self.skip = max(0, self.skip - 1)
        elif tag == "table":
            if self.depth == 1:
                self._end_row()
            self.depth = max(0, self.depth - 1)
        elif self.depth == 1 and tag in ("td", "th"):
            self._end_cell()
        elif self.depth == 1 and tag == "tr":
            self._end_row()

    def handle_data(self, data: str) -> None:
        if self.cell is not None and not self.skip and sum(map(len, self.cell)) < MAX_CELL_CHARS:
            self.cell.append(data)

    def _end_cell(self) -> None:
        if self.cell is None or self.row is None:
            return
        text = " ".join("".join(self.cell).split())[:MAX_CELL_CHARS]
        self.row_all_th = self.row_all_th and (self.cell_th or not text)
        if self.cell_th and len(self.row) == self.row_th:
            self.row_th += self.span[0]
        self._fill()
        for _ in range(min(self.span[0], MAX_CELLS)):
            if self.span[1] > 1:
                self.pending[len(self.row)] = [text, self.span[1] - 1]
            self.row.append(text)
            self._fill()
        self.cell = None

    def _fill(self) -> None:
        """Cells a ``rowspan`` above carries into this row (pandas' sparse MultiIndex)."""
        while (carried := self.pending.get(len(self.row or []))) is not None and self.row is not None:
            self.row.append(carried[0])
            carried[1] -= 1
            if carried[1] <= 0:
                del self.pending[len(self.row) - 1]

    def _end_row(self) -> None:
        self._end_cell()
        if self.row is None or self.current is None:
            self.row = None
            return
        self._fill()
        table, row = self.current, self.row
        self.row = None
        if not any(row):
            return
        if len(row) > MAX_CELLS:
            table.more_columns, row = True, row[:MAX_CELLS]
        if self.in_head or (not table.body and self.row_all_th):
            table.head.append(row)
        elif len(table.body) >= MAX_ROWS + 1:
            table.more_rows = True
        else:
            table.body.append(row)
            table.row_heads.append(self.row_th)


def _number(text: str | None) -> int:
    return int(text) if text and text.strip().isdigit() and 0 < int(text) < 10_000 else 1


def html_tables(markup: str) -> list[RawTable]:
    """The top-level tables of ``markup`` (already cut to a bounded length) with a body."""
    if "<table" not in markup:
        return []
    parser = _Tables()
    markup = _cut_rows(markup)
    try:
        for start in range(0, len(markup), FEED_CHARS):
            parser.feed(markup[start : start + FEED_CHARS])
            if parser.current is not None and parser.current.more_rows:
                break  # the rest of a long table is never shown: a 60-row frame costs what 11 rows do
        parser.close()
    except Exception:  # noqa: BLE001 - malformed markup is simply not a table
        pass
    parser._end_row()
    return [table for table in parser.tables if table.body]


def _cut_rows(markup: str) -> str:
    """``markup`` with each row's markup past ROW_CHARS left out (a "…" cell in its place): a row
    of 10,000 cells shows MAX_CELLS of them, so the parser need not read the others."""
    pieces = markup.split("<tr")
    for index, piece in enumerate(pieces[1:], 1):
        if len(piece) > ROW_CHARS:
            end = piece.rfind("</tr")
            pieces[index] = (
                piece[: max(0, piece.rfind("<t", 0, ROW_CHARS))]
                + "<td>…</td>"
                + (piece[end:] if end > ROW_CHARS else "")
            )
    return "<tr".join(pieces)


def markdown_table(text: str) -> RawTable | None:
    """A Markdown pipe table (``| a | b |`` then ``|---|---|``), the first in ``text``, or None."""
    lines = text.splitlines()
    for index in range(len(lines) - 1):
        if lines[index].lstrip().startswith("|") and re.fullmatch(
            r"\s*\|?(?:\s*:?-{3,}:?\s*\|)+\s*:?-*:?\s*\|?\s*", lines[index + 1]
        ):
            table = RawTable(head=[_pipe_cells(lines[index])])
            for line in lines[index + 2 :]:
                if not line.lstrip().startswith("|"):
                    break
                if len(table.body) >= MAX_ROWS + 1:
                    table.more_rows = True
                    break
                table.body.append(_pipe_cells(line))
            if table.body:
                return table
    return None


def _pipe_cells(line: str) -> list[str]:
    cells = re.split(r"(?<!\\)\|", line.strip().strip("|"))
    return [" ".join(html.unescape(re.sub(r"\*\*|__|`", "", cell)).split()) for cell in cells[:MAX_CELLS]]


def schema_table(value: Any, limit: int) -> RawTable | None:
    """pandas' ``application/vnd.dataresource+json`` (``to_json(orient="table")``): the index
    fields first, as the HTML shows them. A string longer than ``limit`` is not parsed."""
    if isinstance(value, str):
        if len(value) > limit:
            return None
        try:
            value = json.loads(value)
        except ValueError:
            return None
    if (
        not isinstance(value, dict)
        or not isinstance(value.get("schema"), dict)
        or not isinstance(value.get("data"), list)
    ):
        return None
    fields = [f.get("name") for f in value["schema"].get("fields") or [] if isinstance(f, dict)]
    keys = [key for key in value["schema"].get("primaryKey") or [] if key in fields]
    names = keys + [name for name in fields if name not in keys]
    if not names:
        return None
    table = RawTable(
        head=[[_schema_cell(name) for name in names[:MAX_CELLS]]],
        more_columns=len(names) > MAX_CELLS,
        more_rows=len(value["data"]) > MAX_ROWS + 1,
    )
    for record in value["data"][: MAX_ROWS + 1]:
        if isinstance(record, dict):
            table.body.append([_schema_cell(record.get(name)) for name in names[:MAX_CELLS]])
            table.row_heads.append(len(keys))
    if names[0] == "index":
        table.head[0][0] = ""  # a default RangeIndex has no name
    return table if table.body else None


def _schema_cell(value: Any) -> str:
    if value is None:
        return "NaN"
    if isinstance(value, float):
        return repr(value)
    text = str(value)
    return text.removesuffix("T00:00:00.000").removesuffix("T00:00:00.000Z")


def markdown_words(markdown: str) -> str | None:
    """Markdown as words: emphasis, code marks, links and headings' hashes removed."""
    if not markdown.strip() or markdown.lstrip().startswith("|"):
        return None
    lines = [line for line in markdown.splitlines() if line.strip()]
    if all(_LIST_ITEM.match(line) for line in lines):  # a vector as IRkernel's Markdown lists it: 1. 12, 2. 13
        items = [_LIST_ITEM.sub("", line).strip() for line in lines]
        return ", ".join(items[:MAX_LIST_ITEMS] + (["…"] if len(items) > MAX_LIST_ITEMS else []))
    text = re.sub(r"<!--.*?-->|<[^>]+>", "", markdown, flags=re.S)
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"\*\*|__|`|^\s{0,3}#{1,6}\s*|^\s*[-*]\s+", "", text, flags=re.M)
    return words(text)


def html_words(markup: str) -> str | None:
    """The words of an HTML output without a table (``display(HTML("<b>RMSE</b>: 0.5"))``); none
    for a widget or chart's scripts and styles."""
    if not markup.strip() or _ACTIVE_HTML.search(markup):
        return None
    text = re.sub(r"<(style|script)\b.*?</\1\s*>|<!--.*?-->", "", markup, flags=re.S | re.I)
    return words(html.unescape(re.sub(r"<[^>]+>", " ", text)))


def words(text: str) -> str | None:
    text = " ".join(text.split())
    return text if text and len(text) <= MAX_TEXT_CHARS else None


_LIST_ITEM = re.compile(r"^\s*(?:\d+\.|[-*])\s+")
# a widget, a chart or a progress bar: its words ("100.00% [60000/60000 ...]") are no value
_ACTIVE_HTML = re.compile(
    r"<(?:script|iframe|svg|canvas|object|embed|video|audio|progress|input|button|form|select)\b", re.I
)
