"""分析摘要 and 结论与建议 written by a model from the findings only, with a guard on its numbers.

A model writes better prose than a template, and it also invents figures. So the model is shown
only what the report itself states (the findings and their tables, the datasets' sizes, the
charts' names), and a section it wrote is used only when every number in it is one of those: as
the report prints it, a coarser rounding of it, or it as a percentage. Otherwise the report keeps
its deterministic text and its appendix says why. The model is reached through a ``Complete``
callable, so this module never depends on the agent: the CLI and the ``generate_report`` skill
pass one that asks the model router for purpose ``report``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any

from nini.errors import NiniError
from nini.report.charts import chart_title, group_charts
from nini.report.findings import Finding, key_findings
from nini.report.model import ReportInput

# messages -> (the model's text, the model's name as "provider/model")
Complete = Callable[[list[dict[str, str]]], Awaitable[tuple[str, str]]]

SECTIONS = ("summary", "conclusions")
MAX_SECTION_CHARS = 3_000  # a section longer than this is not a summary: refused
MAX_REPLY_TOKENS = 1_200
_LANGUAGE = {"zh": "Simplified Chinese", "en": "English"}

SYSTEM_PROMPT = """You write two sections of a data-analysis report: "summary" (the main results in \
2-4 sentences, or up to 5 short bullets) and "conclusions" (2-4 bullets: what the results mean and \
what to check before acting on them). Use only the facts the user gives; never guess beyond them.
Every number you write must be copied from the facts as written there (you may round it, or write a \
proportion as a percentage). Do not compute new numbers (no differences, ratios, sums or counts) and \
write no dates or years that are not in the facts. No headings, tables, code or links.
Write in {language}. Answer with one JSON object and nothing else: {{"summary": "...", "conclusions": "..."}}"""


@dataclass(frozen=True)
class Refusal:
    """Why a section's model text was not used: ``kind`` is stable (``unknown_number``,
    ``not_json``, ``empty``, ``too_long``, ``model_failed``), ``detail`` the number or error code."""

    kind: str
    detail: str = ""


@dataclass(frozen=True)
class Narrative:
    """What the model wrote: accepted sections as Markdown, and why any other was refused."""

    model: str
    sections: dict[str, str] = field(default_factory=dict)
    refused: dict[str, Refusal] = field(default_factory=dict)


async def narrate(
    data: ReportInput, *, lang: str, digits: int, complete: Complete, style: str | None = None
) -> Narrative:
    """Ask the model for both sections and keep each whose numbers all come from the facts;
    ``style`` (the user's preferences block) says how they like their reports written.

    A failed model call is a refusal of both sections (``model_failed``), never an error: the
    report is written either way, with its deterministic text.
    """
    facts = report_facts(data, digits)
    messages = [
        {
            "role": "system",
            "content": SYSTEM_PROMPT.format(language=_LANGUAGE.get(lang, "English"))
            + (f"\n\n{style}" if style else ""),
        },
        {"role": "user", "content": facts},
    ]
    try:
        reply, model = await complete(messages)
    except NiniError as exc:
        return Narrative(model="", refused={s: Refusal("model_failed", exc.code.value) for s in SECTIONS})
    return check_reply(reply, model, allowed_numbers(facts))


def router_completer(router: Any) -> Complete | None:
    """A ``Complete`` asking ``router`` (an ``agent.llm.ModelRouter``) for purpose ``report``;
    None when no model is configured at all (then no model is asked and the appendix says nothing)."""
    if not router.settings.providers:
        return None

    async def complete(messages: list[dict[str, str]]) -> tuple[str, str]:
        answer = await router.complete("report", messages, temperature=0.2, max_tokens=MAX_REPLY_TOKENS)
        return answer.text, answer.model or answer.provider

    return complete


def report_facts(data: ReportInput, digits: int) -> str:
    """The facts the model may use, as plain text: exactly what the report's body states."""
    lines = [f"Title: {data.title}"] if data.title else []
    for dataset in data.datasets:
        size = [f"{dataset.rows} rows"] if dataset.rows is not None else []
        size += [f"{len(dataset.columns)} columns: {', '.join(dataset.columns[:12])}"] if dataset.columns else []
        lines.append(f"Dataset {dataset.name}" + (f" ({'; '.join(size)})" if size else ""))
    findings = key_findings(data.steps, digits=digits, notes=data.notes)
    lines += ["", "Key findings, in the order of the analysis:"] if findings else ["", "No key findings."]
    lines += [_finding_text(finding) for finding in findings]
    charts = [chart_title(group, data.steps) for group in group_charts(data.charts)]
    if charts:
        lines += ["", "Charts drawn: " + "; ".join(dict.fromkeys(charts))]
    return "\n".join(lines)


def _finding_text(finding: Finding) -> str:
    text = "- " + finding.text.replace("\n", "\n  ")
    if finding.table:
        text += "\n" + "\n".join("  | " + " | ".join(row) + " |" for row in finding.table)
    return text


def check_reply(reply: str, model: str, allowed: set[Decimal]) -> Narrative:
    """Each section of the model's JSON reply, kept or refused with its reason."""
    parsed = _json_object(reply)
    if parsed is None:
        return Narrative(model=model, refused={s: Refusal("not_json") for s in SECTIONS})
    sections, refused = {}, {}
    for section in SECTIONS:
        text = parsed.get(section)
        text = text.strip() if isinstance(text, str) else ""
        if not text:
            refused[section] = Refusal("empty")
        elif len(text) > MAX_SECTION_CHARS:
            refused[section] = Refusal("too_long")
        elif (unknown := unknown_number(text, allowed)) is not None:
            refused[section] = Refusal("unknown_number", unknown)
        else:
            sections[section] = text
    return Narrative(model=model, sections=sections, refused=refused)


def _json_object(reply: str) -> dict | None:
    """The JSON object in ``reply`` (a model may wrap it in a code fence or a sentence)."""
    start, end = reply.find("{"), reply.rfind("}")
    if start < 0 or end < start:
        return None
    try:
        parsed = json.loads(reply[start : end + 1])
    except json.JSONDecodeError:
        return None
    return parsed if isinstance(parsed, dict) else None


# A number as people write it: 1,234.5 or 0.56 or 3e-05, maybe a percentage. Not part of a name
# (R2, PM2.5, x1), so a digit after an ASCII letter, "_" or another digit does not start one.
_NUMBER = re.compile(r"(?<![A-Za-z_\d.])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?([eE][-+]?\d+)?\s?([%％])?")
_LIST_MARKER = re.compile(r"^\s*\d+[.)]\s", re.M)  # "1. " numbering a list says nothing


def numbers(text: str) -> list[tuple[str, Decimal, bool]]:
    """Each number in ``text``: (as written, its value, whether it is a percentage)."""
    found = []
    for match in _NUMBER.finditer(_LIST_MARKER.sub(" ", text)):
        literal = match.group(1).replace(",", "") + (match.group(2) or "") + (match.group(3) or "")
        try:
            found.append((match.group(0).strip(), Decimal(literal), bool(match.group(4))))
        except InvalidOperation:  # pragma: no cover - the pattern only matches decimal literals
            continue
    return found


def allowed_numbers(facts: str) -> set[Decimal]:
    """The values of every number the facts state."""
    return {value for _, value, _ in numbers(facts)}


def unknown_number(text: str, allowed: Iterable[Decimal]) -> str | None:
    """The first number of ``text`` that no fact states (as written); None when all are known.

    A number is known when it equals a fact, is a fact rounded to as many decimals as it shows
    (``0.56`` for ``0.5624``, ``3`` for ``2.9``), or, written as a percentage, is a fact times 100
    so rounded (``56.2%`` for ``0.5624``) or a fact itself (``12%`` where a fact says ``12``).
    """
    facts = list(allowed)
    for written, value, percent in numbers(text):
        scales = (Decimal(1), Decimal(100)) if percent else (Decimal(1),)
        if not any(_rounds_to(fact * scale, value) for fact in facts for scale in scales):
            return written
    return None


def _rounds_to(fact: Decimal, written: Decimal) -> bool:
    """Whether ``written`` is ``fact`` or ``fact`` rounded to the decimals ``written`` shows."""
    if fact == written:
        return True
    exponent = written.as_tuple().exponent
    if not isinstance(exponent, int) or exponent > 0:
        return False
    try:
        return fact.quantize(Decimal(1).scaleb(exponent), rounding=ROUND_HALF_UP) == written
    except InvalidOperation:  # a fact too large for the precision asked
        return False
