"""Key findings: what the relevant steps produced, with the noise of their output removed.

A finding comes from a step's structured ``result`` and its cleaned stdout, never from chat text.
Failed, rolled-back and superseded steps give none: when a later successful step corrects an
earlier one (same label, same ``save_as`` dataset re-run, or ``retry_of`` pointing at it) only
the correction speaks.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from nini.report.model import Step

MAX_FINDINGS = 12
MAX_LINES = 8  # lines of one finding; a printed DataFrame is not a finding
MAX_CHARS = 600
MAX_ITEMS = 10  # items of a list or pairs of a dict rendered from a result


@dataclass(frozen=True)
class Finding:
    text: str  # plain text (may span lines), label prefix included; escape before rendering
    step_id: str
    label: str | None


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


def key_findings(steps: list[Step], *, limit: int = MAX_FINDINGS) -> list[Finding]:
    """Findings of the relevant steps, newest first, deduplicated by normalised text, at most ``limit``."""
    findings: list[Finding] = []
    seen: set[str] = set()
    for step in reversed(relevant_steps(steps)):
        if len(findings) >= limit:
            break
        text = step_text(step)
        key = _normalise(text)
        if not key or key in seen:
            continue
        seen.add(key)
        label = (step.label or "").strip() or None
        findings.append(Finding(text=f"{label}: {text}" if label else text, step_id=step.id, label=label))
    return findings


def step_text(step: Step) -> str:
    """A step's result rendered readably, then its meaningful stdout lines; "" when it said nothing."""
    lines: list[str] = []
    if step.result is not None:
        lines += [line.strip() for line in render_value(step.result).splitlines() if line.strip()]
    known = {_normalise(part) for line in lines for part in (line, *line.split("; "))}
    for line in clean_output(step.stdout).splitlines():
        if _normalise(line) not in known:
            lines.append(line)
            known.add(_normalise(line))
    lines = [business_text(line) for line in lines[:MAX_LINES]]
    text = "\n".join(line for line in lines if line.strip())
    return text if len(text) <= MAX_CHARS else text[: MAX_CHARS - 1].rstrip() + "…"


def render_value(value: Any, *, nested: bool = False) -> str:
    """A JSON value as text a reader follows: ``key: value`` pairs, plain scalars, short lists."""
    if isinstance(value, dict):
        pairs = [f"{key}: {render_value(item, nested=True)}" for key, item in list(value.items())[:MAX_ITEMS]]
        if len(value) > MAX_ITEMS:
            pairs.append("…")
        return f"({', '.join(pairs)})" if nested else "; ".join(pairs)
    if isinstance(value, (list, tuple)):
        items = [render_value(item, nested=True) for item in value[:MAX_ITEMS]]
        if len(value) > MAX_ITEMS:
            items.append(f"… ({len(value)})")
        return ", ".join(items)
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "—"
    if isinstance(value, float):
        return format(value, ".6g")
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
