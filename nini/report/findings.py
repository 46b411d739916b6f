"""Key findings: what the relevant steps produced, the few that matter, with noise removed.

A finding comes from a step's structured ``result``, the values it showed (``Step.values``) and
its cleaned stdout, never from chat text. Failed, rolled-back and superseded steps give none: when
a later successful step corrects an earlier one (same label, same ``save_as`` dataset re-run, or
``retry_of`` pointing at it) only the correction speaks.

Every finding says what it measures: a value is kept only with a label (the step's label, a
value's name, a dict key, a cell's last expression, the ``print(name)`` that printed it, the
words printed with it); bare numbers are dropped, and noise (``noise.py``) never counts. When
there are more than ``limit``, ranking (``ranking.py``) decides which are kept; they are listed in
the order of the analysis, each naming its step and cell. Numbers are rounded
(``values.format_number``), object reprs summarised and DataFrames stay tables (``Finding.table``).
"""

from __future__ import annotations

import ast
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from nini.report import pycode
from nini.report.model import Step, Value
from nini.report.noise import (
    ENVIRONMENT_CODE,
    VERSION_CODE,
    clean_output,
    noise_table,
    noise_value,
    numpy_vector,
    plain_output,
    strip_reprs,
    version_line,
)
from nini.report.ranking import Prose, is_metric, score
from nini.report.values import (
    DEFAULT_DIGITS,
    Table,
    format_number,
    is_bare_value,
    last_expression,
    printed_values,
    round_numbers,
    split_text_tables,
    summarise_reprs,
)

MAX_FINDINGS = 12
MAX_LINES = 8  # lines of one finding; a printed DataFrame is not a finding
MAX_CHARS = 600
SCAN_CHARS = 64_000  # of a step's output, head and tail, looked through for findings (a log may be 25 MB)
MAX_ITEMS = 10  # items of a list or pairs of a dict rendered from a result


@dataclass(frozen=True)
class Finding:
    text: str  # plain text (may span lines), label prefix included; escape before rendering
    step_id: str
    label: str | None
    table: Table | None = None  # a DataFrame the step showed, header row first; cells are plain text
    cell: int | None = None  # the notebook cell it came from (1-based among all cells): "cell 12"
    order: int = 0  # the step's 0-based order: a session's "step N" is order + 1
    rank: int = 1  # 1 = the one that matters most; the list itself is in the order of the analysis


def relevant_steps(steps: Iterable[Step]) -> list[Step]:
    """The steps whose outcome stands, in creation order.

    Skipped: failed steps, rolled-back steps, and a step superseded by a later successful one
    with the same label, the same ``save_as`` dataset, or a ``retry_of`` that names it.
    """
    ordered = sorted(steps, key=lambda step: step.order)
    standing = [step for step in ordered if step.status == "succeeded" and not step.rolled_back]
    seen_labels: set[str] = set()
    seen_datasets: set[str] = set()
    retried: set[str] = set()
    kept = []
    for step in reversed(standing):  # newest first: a step is superseded by what came after it
        label = (step.label or "").strip()
        if step.id in retried or (label and label in seen_labels) or (step.save_as and step.save_as in seen_datasets):
            continue
        kept.append(step)
        # Only a step that stands can supersede: a superseded step does not hide older ones twice.
        if label:
            seen_labels.add(label)
        if step.save_as:
            seen_datasets.add(step.save_as)
        if step.retry_of:
            retried.add(step.retry_of)
    return kept[::-1]


def key_findings(
    steps: list[Step], *, limit: int = MAX_FINDINGS, digits: int = DEFAULT_DIGITS, notes: Sequence[str] = ()
) -> list[Finding]:
    """The ``limit`` findings that matter most, in the order of the analysis, deduplicated by
    normalised text.

    Candidates are ranked (``ranking.score``: named metrics and estimates, a section's final
    result and values the ``notes``, the notebook's Markdown, quote come first; set-up and exercise
    sections last; a tie goes to the later step, nearer the conclusion); the rank only decides
    which are kept.
    """
    standing = relevant_steps(steps)
    prose = Prose.of(notes)
    paths = prose.section_paths(standing)
    candidates = [(step, found) for step in standing if (found := candidate(step, digits=digits))]
    scored = []
    for index, (step, found) in enumerate(candidates):
        following = candidates[index + 1][0] if index + 1 < len(candidates) else None
        last_in_section = bool(step.section) and (following is None or following.section != step.section)
        value = score(
            step,
            found.names,
            found.text,
            headers=found.headers,
            path=paths.get(step.id, ()),
            last_in_section=last_in_section,
            quoted=prose.quotes(found.variables, found.values),
            has_table=found.table is not None,
        )
        scored.append((value, step.order, step, found))
    kept: list[tuple[int, Step, Candidate]] = []
    seen: set[str] = set()
    for _, _, step, found in sorted(scored, key=lambda item: (item[0], item[1]), reverse=True):
        if len(kept) >= limit:
            break
        key = _normalise(found.text) + (repr(found.table) if found.table else "")
        if key not in seen:
            seen.add(key)
            kept.append((len(kept) + 1, step, found))
    return [_finding(step, found, rank) for rank, step, found in sorted(kept, key=lambda item: item[1].order)]


def _finding(step: Step, found: Candidate, rank: int) -> Finding:
    label = (step.label or "").strip() or None
    text = found.text
    # a printed line that already names its value ("total: 3" in a step labelled total) keeps its own
    labelled = label and text and not re.match(rf"{re.escape(label)}\s*[:=：]", text, re.IGNORECASE)
    prefixed = f"{label}: {text}" if labelled else (text or label or "")
    return Finding(
        text=prefixed, step_id=step.id, label=label, table=found.table, cell=step.cell, order=step.order, rank=rank
    )


@dataclass(frozen=True)
class Candidate:
    """What one step could say as a finding, with what ranking looks at."""

    text: str  # its labelled values, rounded, one per line
    table: Table | None
    names: tuple[str, ...]  # what its values are called: expressions, printed labels, keys
    values: str  # its values as shown, before rounding (numbers the prose may quote)
    headers: tuple[str, ...] = ()  # its table's header row and row names ("Estimate", "(Intercept)")
    variables: tuple[
        str, ...
    ] = ()  # the variables it shows (``final_rmse``, ``grid.best_params_``): what prose may name


def candidate(step: Step, *, digits: int = DEFAULT_DIGITS) -> Candidate | None:
    """A step's result rendered readably, then the values it showed (``Step.values``), then its
    meaningful printed lines, and a table it showed; None when all it showed is noise
    (``noise.py``) or values nothing names.

    Without a step label, a value needs its own: a scalar result is labelled by the code's last
    expression, a printed value by the ``print(name)`` that printed it, and printed lines that are
    only values (``7``, ``(1035, 6)``) are dropped.
    """
    if ENVIRONMENT_CODE.search(step.code):
        return None  # sessionInfo(), %watermark, pip list: the machine, not the analysis
    expression = last_expression(step.code, step.language)
    got = _Gathered(step, expression, digits)
    # what stdout printed as tables and named statistics (R's summaries); the rest is read as lines
    rest, printed = (
        printed_values(plain_output(scan_window(step.stdout)), step.language) if step.stdout.strip() else ("", [])
    )
    shown = [*step.values, *(value for value in printed if value not in step.values)]
    for value in shown:
        if value.table is not None:
            got.table(value.table)
    if step.table is not None and not any(value.table is not None for value in shown):
        got.table(step.table)
    got.result(None if any(value.origin == "result" for value in shown) else step.result)
    for value in shown:
        if value.table is None:
            got.value(value)
    got.printed(rest)
    return got.candidate()


class _Gathered:
    """What one step showed, gathered into its finding's lines, its table and what ranking reads."""

    def __init__(self, step: Step, expression: str | None, digits: int) -> None:
        self.step, self.expression, self.digits = step, expression, digits
        self.labelled = bool((step.label or "").strip())
        self.versions = bool(VERSION_CODE.search(step.code))  # its bare numbers are versions
        self.lines: list[str] = []
        self.known: set[str] = set()
        self.names: list[str] = [expression] if expression else []
        self.variables: list[str] = list(self.names)
        self.raw: list[str] = []
        self.tables: list[Table] = []

    def table(self, table: Table) -> None:
        if table not in self.tables and not noise_table(table):
            self.tables.append(table)

    def line(self, text: str, raw: str, name: str | None = None) -> None:
        """One line of the finding, unless it repeats one (``n: 10`` of a result and of stdout)."""
        if name:
            self.names.append(name)
            self.variables.append(name)
        self.raw.append(raw)
        if _normalise(text) not in self.known:
            self.lines.append(text)
            self.known.update(_normalise(part) for part in (text, *text.split("; ")))
            self.names += [label.group(1)] if (label := _LINE_LABEL.match(text)) else []

    def result(self, result: Any) -> None:
        """A session's JSON ``result``, or a notebook's last expression as text (when its
        structured value was not there)."""
        if isinstance(result, str):
            result = strip_reprs(summarise_reprs(result))  # pandas' and numpy's reprs summarised, the others gone
            if noise_value(result):
                return
            result, found = split_text_tables(result)
            for table in found:
                self.table(table)
            if noise_value(result) or (self.versions and is_bare_value(result)):
                return
        if result is None or result == "":
            return
        keyed = isinstance(result, dict)
        rendered = [line.strip() for line in render_value(result, digits=self.digits).splitlines() if line.strip()]
        if not keyed and not self.labelled and not self.expression:
            return  # a value with nothing saying what it is
        for index, line in enumerate(rendered):
            named = not keyed and not self.labelled and index == 0
            self.line(
                f"{self.expression}: {round_numbers(line, self.digits)}" if named else round_numbers(line, self.digits),
                str(result),
                self.expression if named else None,
            )
        if keyed:
            self.names += [str(key) for key in list(result)[:MAX_ITEMS]]
            self.variables += [str(key) for key in list(result)[:MAX_ITEMS]]

    def value(self, value: Value) -> None:
        """A text value the step showed, named by its own name, else by the last expression."""
        text = strip_reprs(summarise_reprs(value.text or "")).strip()
        if noise_value(text) or numpy_vector(text, self.step.language) or (self.versions and is_bare_value(text)):
            return
        name = value.name or (self.expression if value.origin == "result" else None)
        if self.labelled and name == self.expression:
            name = None  # the step's label says what its last expression's value is ("Stores: 42")
        if not name and not self.labelled:
            return  # a value with nothing saying what it is
        shown = round_numbers(" ".join(text.split()), self.digits)
        self.line(f"{name}: {shown}" if name and not shown.startswith(name) else shown, text, name)

    def printed(self, text: str) -> None:
        """Printed lines, noise removed; a bare value only with a name (a step label, ``print(name)``)."""
        lines = [line.strip() for line in strip_reprs(summarise_reprs(clean_output(text))).splitlines() if line.strip()]
        bare = [is_bare_value(line) for line in lines]
        printers = print_names(self.step.code, self.step.language, len(lines)) if any(bare) else []
        literals = (
            {match.group(2) for match in _STRING_LITERAL.finditer(self.step.code)}
            if "print" in self.step.code
            else set()
        )
        for index, line in enumerate(lines):
            if literals and _R_INDEX.sub("", line).strip("'\"") in literals:
                continue  # print("Welcome to Machine Learning!"): a message the code wrote, not a result
            if (
                noise_value(line)
                or numpy_vector(line, self.step.language)
                or (self.versions and (bare[index] or version_line(line)))
            ):
                continue
            name = printers[index] if printers and bare[index] else None
            if bare[index] and not name and not self.labelled:
                continue
            self.line(round_numbers(f"{name}: {line}" if name else line, self.digits), line, name)

    def candidate(self) -> Candidate | None:
        table = self.tables[0] if self.tables else None
        lines = self.lines
        headers: tuple[str, ...] = ()
        if table:
            headers = tuple(
                dict.fromkeys([cell for cell in table[0] if cell] + [row[0] for row in table[1:] if row and row[0]])
            )
            self.raw += [cell for row in table[1:] for cell in row]
            if not lines and not self.labelled:
                if self.expression is None:
                    return None  # a table nothing names
                lines = [self.expression]
        text = "\n".join(line for line in (business_text(line) for line in lines[:MAX_LINES]) if line.strip())
        text = text if len(text) <= MAX_CHARS else text[: MAX_CHARS - 1].rstrip() + "…"
        if not (text or table):
            return None
        variables = tuple(name for name in dict.fromkeys(self.variables) if _SIMPLE_NAME.match(name))
        return Candidate(
            text=text,
            table=table,
            names=tuple(dict.fromkeys(self.names)),
            values="\n".join(self.raw),
            variables=variables,
            headers=headers,
        )


_STRING_LITERAL = re.compile(r"""(['"])((?:\\.|(?!\1)[^\\\n])*)\1""")
_R_INDEX = re.compile(r"^\[\d+\]\s+")  # R's "[1] " before a printed vector


_SIMPLE_NAME = re.compile(r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*|\[[^\[\]\n]{1,30}\])*$")


def print_names(code: str, language: str, lines: int) -> list[str]:
    """What each of ``lines`` printed lines is, when the code printed them one ``print(name)`` each
    (``print(final_rmse)``): the printed expressions in order; [] when that is not sure (another
    print, a loop, a print of several values, a language other than Python)."""
    if language != "python" or not lines or "print" not in code:
        return []
    tree = pycode.parse(code)
    if tree is None:
        return []
    calls = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print"
    ]
    top = [
        statement.value
        for statement in tree.body
        if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call) and statement.value in calls
    ]
    if len(top) != len(calls) or len(top) != lines:
        return []
    names = []
    for call in top:
        if len(call.args) != 1 or call.keywords or isinstance(call.args[0], (ast.Constant, ast.JoinedStr)):
            return []
        name = ast.get_source_segment(code, call.args[0]) or ""
        if not _SIMPLE_NAME.match(name) or (len(name) < 3 and not is_metric(name)):
            return []  # print(a + b), print(x): an expression or a letter names nothing a reader knows
        names.append(name)
    return names


_LINE_LABEL = re.compile(r"^([^:=：\d][^:=：]{0,60}?)\s*[:=：]")  # "Test RMSE: 41424" names its value "Test RMSE"


def scan_window(text: str, limit: int = SCAN_CHARS) -> str:
    """What of a step's output findings are looked for in: all of it, or for a long log its first
    and last ``limit / 2`` characters, whole lines (a 25 MB training log ends with its metrics)."""
    if len(text) <= limit:
        return text
    head, tail = text[: limit // 2], text[-(limit // 2) :]
    return head[: head.rfind("\n") + 1] + tail[tail.find("\n") + 1 :]


def render_value(value: Any, *, nested: bool = False, digits: int = DEFAULT_DIGITS) -> str:
    """A JSON value as text a reader follows: ``key: value`` pairs, plain scalars, short lists."""
    if isinstance(value, dict):
        pairs = [
            f"{key}: {render_value(item, nested=True, digits=digits)}" for key, item in list(value.items())[:MAX_ITEMS]
        ]
        if len(value) > MAX_ITEMS:
            pairs.append("…")
        return f"({', '.join(pairs)})" if nested else "; ".join(pairs)
    if isinstance(value, (list, tuple)):
        items = [render_value(item, nested=True, digits=digits) for item in value[:MAX_ITEMS]]
        if len(value) > MAX_ITEMS:
            items.append(f"… ({len(value)})")
        return ", ".join(items)
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "—"
    if isinstance(value, float):
        return format_number(value, digits)
    text = str(value)
    return " ".join(text.split()) if nested else text


def _normalise(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).casefold()
    return " ".join(text.split()).strip(" .。;；:：,，")


# Absolute paths (POSIX and Windows) and ~ paths: the report names files, never where they live.
_PATH = re.compile(r"(?<![\w:/.~<])(?:~|[A-Za-z]:)?(?:[/\\][^\s/\\'\"<>|,;:()\[\]{}]+)+[/\\]?")


def redact_paths(text: str) -> str:
    """``text`` with every absolute path replaced by its last part (the file name)."""
    return _PATH.sub(lambda match: re.split(r"[/\\]", match.group(0).rstrip("/\\"))[-1], text)


# Tool names are system vocabulary; the two that run code read as their language in a report.
_TOOL_NAMES = re.compile(
    r"( ?)(\b(?:run_r_code|run_code|generate_report|load_dataset|list_datasets|describe_dataset|read_file"
    r"|image_analysis|search_skills|save_skill)\b|\btask:[\w-]+)"
)
_TOOL_WORDS = {"run_code": "Python", "run_r_code": "R"}


def business_text(text: str) -> str:
    """``text`` fit for the business sections: absolute paths cut to file names, tool names removed."""

    def replace(match: re.Match[str]) -> str:
        word = _TOOL_WORDS.get(match.group(2))
        return match.group(1) + word if word else ""  # a removed name takes one space with it

    return _TOOL_NAMES.sub(replace, redact_paths(text))
