"""Key findings: what the relevant steps produced, with the noise of their output removed.

A finding comes from a step's structured ``result`` and its cleaned stdout, never from chat text.
Failed, rolled-back and superseded steps give none: when a later successful step corrects an
earlier one (same label, same ``save_as`` dataset re-run, or ``retry_of`` pointing at it) only
the correction speaks.

Every finding says what it measures: a value is kept only with a label (the step's label, a
dict key, a cell's last expression, the words printed with it); bare numbers are dropped.
Findings follow the analysis order, numbers are rounded (``values.format_number``), object
reprs are summarised and DataFrames stay tables (``Finding.table``).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from nini.report.model import Step
from nini.report.values import (
    DEFAULT_DIGITS,
    Table,
    format_number,
    is_bare_value,
    last_expression,
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


def key_findings(steps: list[Step], *, limit: int = MAX_FINDINGS, digits: int = DEFAULT_DIGITS) -> list[Finding]:
    """Findings of the relevant steps in the order of the analysis, deduplicated by normalised
    text, at most ``limit`` (the newest ones: a later step is closer to the conclusion)."""
    findings: list[Finding] = []
    seen: set[str] = set()
    for step in reversed(relevant_steps(steps)):
        if len(findings) >= limit:
            break
        text, table = step_finding(step, digits=digits)
        key = _normalise(text) + (repr(table) if table else "")
        if not (text or table) or key in seen:
            continue
        seen.add(key)
        label = (step.label or "").strip() or None
        # a printed line that already names its value ("total: 3" in a step labelled total) keeps its own
        labelled = label and text and not re.match(rf"{re.escape(label)}\s*[:=：]", text, re.IGNORECASE)
        prefixed = f"{label}: {text}" if labelled else (text or label)
        findings.append(Finding(text=prefixed, step_id=step.id, label=label, table=table))
    return findings[::-1]


def step_text(step: Step, *, digits: int = DEFAULT_DIGITS) -> str:
    """A step's labelled values as text (its table left out); "" when it said nothing labelled."""
    return step_finding(step, digits=digits)[0]


def step_finding(step: Step, *, digits: int = DEFAULT_DIGITS) -> tuple[str, Table | None]:
    """A step's result rendered readably, then its meaningful stdout lines, and a table it showed.

    Without a step label, a value needs its own: a scalar result is labelled by the code's last
    expression, and printed lines that are only values (``7``, ``(1035, 6)``) are dropped.
    """
    labelled = bool((step.label or "").strip())
    lines: list[str] = []
    tables: list[Table] = [step.table] if step.table else []
    result = step.result
    if isinstance(result, str):
        result, found = split_text_tables(summarise_reprs(result))
        tables += found
    if result is not None and result != "":
        rendered = [line.strip() for line in render_value(result, digits=digits).splitlines() if line.strip()]
        rendered = [round_numbers(line, digits) for line in rendered]
        expression = None if isinstance(step.result, dict) else last_expression(step.code, step.language)
        if expression and not labelled and rendered:
            rendered[0] = f"{expression}: {rendered[0]}"
        elif not labelled and not isinstance(step.result, dict):
            rendered = []  # a value with nothing saying what it is
        lines += rendered
    known = {_normalise(part) for line in lines for part in (line, *line.split("; "))}
    printed, found = split_text_tables(summarise_reprs(clean_output(scan_window(step.stdout))))
    tables += found
    for line in printed.splitlines():
        line = round_numbers(line.strip(), digits)
        if not line or (not labelled and is_bare_value(line)) or _normalise(line) in known:
            continue
        lines.append(line)
        known.add(_normalise(line))
    table = tables[0] if tables else None
    if table and not lines and not labelled:
        expression = last_expression(step.code, step.language)
        if expression is None:
            return "", None  # a table nothing names
        lines = [expression]
    lines = [business_text(line) for line in lines[:MAX_LINES]]
    text = "\n".join(line for line in lines if line.strip())
    text = text if len(text) <= MAX_CHARS else text[: MAX_CHARS - 1].rstrip() + "…"
    return text, table


def scan_window(text: str, limit: int = SCAN_CHARS) -> str:
    """What of a step's output findings are looked for in: all of it, or for a long log its first
    and last ``limit / 2`` characters, whole lines (a 25 MB training log ends with its metrics)."""
    if len(text) <= limit:
        return text
    head, tail = text[: limit // 2], text[-(limit // 2):]
    return head[: head.rfind("\n") + 1] + tail[tail.find("\n") + 1:]


def render_value(value: Any, *, nested: bool = False, digits: int = DEFAULT_DIGITS) -> str:
    """A JSON value as text a reader follows: ``key: value`` pairs, plain scalars, short lists."""
    if isinstance(value, dict):
        pairs = [f"{key}: {render_value(item, nested=True, digits=digits)}" for key, item in list(value.items())[:MAX_ITEMS]]
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


_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])")
_PREFIX = re.compile(r"^\s*(?:\[(?:stdout|stderr|out|err)\]|(?:stdout|stderr)\s*:|(?:stdout|stderr)\s*>)\s?", re.I)
_TRACEBACK_START = re.compile(r"^\s*(?:\S+\s+)?Traceback \(most recent call last\)")
_EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning)\b\s*(?::|$)")
# Ends a traceback: the exception line, ``Name: message`` or a bare ``Name`` at the start of a line.
_TRACEBACK_END = re.compile(r"^[A-Za-z_][\w.]*(?::\s.*|:?)$")
_R_ERROR = re.compile(r"^\s*(?:Error(?: in .*?)?\s*:|Error in )")
_R_WARNING_BLOCK = re.compile(r"^\s*Warning messages?:\s*$")
_CONTINUATION = re.compile(r"^(?:\s+\S|\d+: |In |Calls: )")
_WARNING_WITH_SOURCE = re.compile(r"^\S.*:\d+: \w*Warning\b")  # warnings.warn format; source line follows
_NOISE = re.compile(
    "|".join(
        [
            # warnings and deprecation notices (Python and R)
            r"(?-i:\b\w*Warning\b)", r"warnings\.warn", r"\bdeprecat",
            r"^\s*There (?:were|was) \d+ (?:or more )?warnings?",
            # errors and what R prints around them
            r"^\s*(?:Calls|In addition|Execution halted)\b", r"^\s*During handling of the above exception",
            r"^\s*The above exception was the direct cause",
            # progress bars
            r"\d{1,3}%\|", r"\|[█▉▊▋▌▍▎▏#▓▒░ ]*[█▉▊▋▌▍▎▏#▓▒░]{2,}[█▉▊▋▌▍▎▏#▓▒░ ]*\|",
            r"\[[=#>.\- ]*[=#]{2,}[=#>.\- ]*\]", r"\b\d+(?:\.\d+)?\s*(?:it/s|s/it)\b", r"\bETA:? ?\d",
            # package installation (pip, conda, R)
            r"^\s*(?:Collecting|Downloading|Installing collected packages|Successfully (?:installed|built|uninstalled)"
            r"|Requirement already satisfied|Using cached|Building wheels?|Created wheel|Stored in directory"
            r"|Preparing metadata|Attempting uninstall|Found existing installation|Uninstalling|Looking in indexes"
            r"|Installing build dependencies|Getting requirements|\[notice\])",
            r"installing \*(?:source|binary)\* package", r"^\s*trying URL", r"^\s*Content type '",
            r"^\s*downloaded \d", r"^\s*\*\* (?:libs|R|inst|byte-compile|help|building|testing)", r"^\s*\* DONE \(",
            r"The downloaded (?:source|binary) packages are in", r"Installing packages? into", r"also installing the dependenc",
            # headless browsers (kaleido, Chromium)
            r"kaleido", r"chromium", r"\bchrome\b", r"DevTools listening", r"^\s*\[\d+/\d+\.\d+:[A-Z]+:", r"Fontconfig",
            r"\bchoreographer\b", r"\bheadless\b",
            # timeouts
            r"TimeoutError", r"\btimed out\b", r"\btimeout\b",
            # log records
            r"(?-i:^\s*(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)(?::|\s+[-:\[]))",
            r"^\s*\d{4}-\d{2}-\d{2}[ T][\d:.,]+\s*(?:[-|]\s*)?\[?(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)\b",
        ]
    ),
    re.I,
)
_MEANINGLESS = re.compile(r"^[\W_]*$")  # blank, or only separators such as ----- or ====


def clean_output(text: str) -> str:
    """The meaningful lines of captured output, noise removed, one per line.

    Removed: stdout/stderr prefixes (the rest of the line stays), ANSI escapes, lines rewritten
    in place with carriage returns, warnings and deprecation notices (with the source line Python
    prints under them), Python tracebacks (plain and IPython style) and R errors, progress bars,
    pip/conda/R package installation logs, headless-browser and kaleido chatter, timeouts, log
    records, and lines with nothing but separators.
    """
    if not text:
        return ""
    text = _ANSI.sub("", text).replace("\r\n", "\n")
    kept: list[str] = []
    skipping = None  # "traceback" | "block" while inside a multi-line noise block
    for raw in text.split("\n"):
        if "\r" in raw.rstrip("\r"):
            continue  # a progress display that redraws itself
        line = _PREFIX.sub("", raw.rstrip("\r")).rstrip()
        if skipping == "traceback":
            if _TRACEBACK_END.match(line):
                skipping = None
            continue
        if skipping == "block":
            if line and _CONTINUATION.match(line):
                continue
            skipping = None
        if _TRACEBACK_START.match(line):
            skipping = "traceback"
        elif _R_ERROR.match(line) or _R_WARNING_BLOCK.match(line) or _WARNING_WITH_SOURCE.match(line):
            skipping = "block"
        elif _EXCEPTION_LINE.match(line) or _NOISE.search(line) or _MEANINGLESS.match(line):
            continue
        else:
            kept.append(line)
    return "\n".join(kept)


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
