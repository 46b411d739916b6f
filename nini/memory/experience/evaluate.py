"""Evaluating candidates: stage 1 decides what is worth asking the user about, stage 2 tells the
user how good each one is before they choose.

Stage 1 (at capture) judges what a model proposed (``source == "model"``): a candidate without a
decision, at least one rejected alternative, or a discriminating signal is dropped, its reason
logged (``DROP_REASONS``). Knowledge that is easy to find elsewhere (nothing in it is about this
team's data: no dataset, column, file, number or name, ``specific.mentions_specifics``) is dropped
when it also carries no reason of its own, and otherwise kept as a narrow hypothesis. What the user
states on purpose (``nini remember --add``, ``%nini remember``, the sidebar's form) is not judged:
it is theirs to keep, dropped only when it says nothing (NO_DECISION); what the judge would have
said of it becomes a note they see.
Type (a checkable rule is a standard) and level (what points at the project's files is project
experience; a rule with no such pointer is the team's) are decided here when not given.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field

from nini.memory.experience.model import LEVELS, SCOPES, STAGES, STRENGTHS, TYPES, Candidate
from nini.memory.experience.specific import mentions_specifics

log = logging.getLogger("nini.memory.experience")

DROP_REASONS = {
    "NO_DECISION": "no decision: what was decided is missing",
    "NO_ALTERNATIVES": "no alternative rejected: say what not to do ('... instead of ...')",
    "NO_SIGNAL": "no discriminating signal: say what tells the two apart ('because ...')",
    "COMMON_KNOWLEDGE": "common knowledge, easy to find elsewhere: nothing in it is about this team's data",
}
RULE = re.compile(r"\b(must|always|never|required|do not|don'?t|only)\b|必须|一律|禁止|不得|统一|只能|不能", re.I)


@dataclass
class Verdict:
    candidate: Candidate | None  # None: dropped
    reason: str | None = None  # a DROP_REASONS key when dropped
    notes: list[str] = field(default_factory=list)


def stage1(candidate: Candidate, datasets: tuple[str, ...] | list[str] = ()) -> Verdict:
    """Keep (with type, level, scope and strength decided) or drop with a reason; logged either way.
    A statement of the user's (``source == "explicit"``) is dropped only without a decision."""
    c = candidate
    reason = None
    if not c.decision.strip():
        reason = "NO_DECISION"
    elif not [a for a in c.alternatives if a.strip()]:
        reason = "NO_ALTERNATIVES"
    elif not c.signal.strip():
        reason = "NO_SIGNAL"
    if c.type not in TYPES:
        c.type = "standard" if RULE.search(f"{c.decision} {c.quote}") else "knowledge"
    specific = is_specific(c, datasets)
    if reason is None and not specific and c.type != "standard" and not (c.because or c.now_believe):
        reason = "COMMON_KNOWLEDGE"
    notes = []
    if reason is not None and c.source == "explicit" and reason != "NO_DECISION":  # the user's own words: kept
        if reason != "COMMON_KNOWLEDGE":  # (that one is the "lowered" note below)
            notes.append(f"kept as you stated it, though: {DROP_REASONS[reason]}")
        reason = None
    if reason is not None:
        log.info("experience candidate dropped: %s (%s)", reason, c.title or c.decision[:80])
        return Verdict(None, reason)
    if c.stage not in STAGES:
        c.stage = "analysis"
    if c.level not in LEVELS:
        c.level = "project" if (c.pointers or c.type == "knowledge") else "team"
    if c.scope not in SCOPES:
        c.scope = "narrow"
    if c.strength not in STRENGTHS:
        c.strength = "hypothesis"
    if not specific and c.type == "knowledge":
        c.scope, c.strength = "narrow", "hypothesis"
        notes.append("lowered: general knowledge, kept as a narrow hypothesis")
    c.title = c.title or c.decision[:80]
    c.trigger = c.trigger or c.decision
    c.notes = [*c.notes, *notes]
    log.info("experience candidate kept: %s (%s, %s)", c.title, c.level, c.type)
    return Verdict(c, None, notes)


def is_specific(candidate: Candidate, datasets: tuple[str, ...] | list[str] = ()) -> bool:
    """Whether the candidate is about particular data (a pointer, a dataset's name, a column, a number, a file)."""
    parts = [candidate.decision, candidate.signal, candidate.trigger, candidate.quote, *candidate.alternatives]
    lowered = " ".join(parts).lower()
    return (
        bool(candidate.pointers)
        or any(name.lower() in lowered for name in datasets if name)
        or any(mentions_specifics(part) for part in parts if part)
    )


def stage2(candidate: Candidate, target_level: str | None = None) -> dict[str, object]:
    """Scores in [0, 1] the user sees before choosing: structure, judgement quality, reusability,
    fit of the target library, with a note for any that is low."""
    c = candidate
    level = target_level or c.level
    filled = [c.title, c.trigger, c.decision, c.alternatives, c.signal, c.solution, c.verify, c.pointers]
    structure = sum(1 for item in filled if item) / len(filled)
    judgement = (
        (0.4 if c.alternatives else 0)
        + (0.3 if is_specific(c) else 0)
        + (0.3 if (c.because or c.now_believe or c.signal) else 0)
    )
    trigger_words = len((c.trigger or "").split()) + len(re.findall(r"[\u3400-\u9fff]", c.trigger or "")) // 2
    reusability = min(1.0, 0.4 + 0.1 * trigger_words) * {"broad": 1.0, "medium": 0.9, "narrow": 0.8}.get(c.scope, 0.8)
    notes = []
    fit = 1.0
    if level == "team" and c.pointers:
        fit = 0.6
        notes.append("points at this project's data: the project library may fit better")
    elif level == "project" and c.type == "standard" and not c.pointers:
        fit = 0.8
        notes.append("a rule with no project pointer: it could be a team standard")
    if structure < 0.5:
        notes.append("little structure: consider editing it (solution, how to verify, pointers)")
    scores = {
        "structure": round(structure, 2),
        "judgement": round(judgement, 2),
        "reusability": round(reusability, 2),
        "fit": round(fit, 2),
    }
    return {**scores, "overall": round(sum(scores.values()) / 4, 2), "notes": notes}
