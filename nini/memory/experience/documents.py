"""An experience document (EXP-*.md): the judgement in a shape the next analyst can use.

Sections: the trigger, surface signal and hidden risk (as in the INDEX), the Decision Shape
(decision being made, alternatives rejected, discriminating signal), the Judgment Capsule (I used
to think, now I believe, because the decisive variable is), the solution, how to verify, and
pointers to the datasets, notebooks and files it is about. The INDEX row is derived from the same
candidate (``index_row``), so the two never disagree when nini writes them.
"""

from __future__ import annotations

import datetime as dt

from nini.memory.experience.model import Candidate, IndexRow


def render_document(candidate: Candidate, entry_id: str, level: str, *, replaces: list[str] | None = None) -> str:
    c = candidate
    alternatives = "; ".join(c.alternatives) or "-"
    lines = [
        f"# {c.title or c.decision}",
        "",
        f"- ID: {entry_id}",
        f"- Level: {level} · Type: {c.type} · Stage: {c.stage} · Scope: {c.scope} · Strength: {c.strength}",
        f"- Recorded: {dt.date.today().isoformat()}" + (f" from session {c.task_id}" if c.task_id else ""),
    ]
    if replaces:
        lines.append(f"- Replaces: {', '.join(replaces)}")
    lines += [
        "",
        "## Trigger (when to load)",
        "",
        c.trigger or "-",
        "",
        "## Surface signal",
        "",
        c.surface_signal or "-",
        "",
        "## Hidden risk",
        "",
        c.hidden_risk or "-",
        "",
        "## Decision Shape",
        "",
        f"- Decision being made: {c.decision}",
        f"- Alternatives rejected: {alternatives}",
        f"- Discriminating signal: {c.signal or '-'}",
        "",
        "## Judgment Capsule",
        "",
        f"- I used to think: {c.used_to_think or alternatives}",
        f"- Now I believe: {c.now_believe or c.decision}",
        f"- Because the decisive variable is: {c.because or c.signal or '-'}",
        "",
        "## Solution",
        "",
        c.solution or c.decision,
        "",
        "## How to verify",
        "",
        c.verify or "-",
        "",
        "## Pointers",
        "",
    ]
    lines += [f"- {pointer}" for pointer in c.pointers] or ["-"]
    if c.quote:
        lines += ["", "## In the user's words", "", "> " + c.quote.replace("\n", "\n> ")]
    return "\n".join(lines) + "\n"


def index_row(candidate: Candidate, file: str, *, replaces: list[str] | None = None) -> IndexRow:
    c = candidate
    tags = " ".join(dict.fromkeys([f"#{c.stage}", *(f"#{word}" for word in _topic_words(c))]))
    return IndexRow(
        tag=tags,
        type=c.type,
        title=c.title or c.decision,
        trigger=c.trigger or c.decision,
        surface_signal=c.surface_signal or c.signal or "-",
        hidden_risk=c.hidden_risk or "-",
        status="active",
        scope=c.scope,
        strength=c.strength,
        replaces=", ".join(replaces or []),
        replaced_by="",
        file=file,
    )


def _topic_words(candidate: Candidate) -> list[str]:
    """A few tags from the pointers' names (a dataset, a file): what the experience is about."""
    words = []
    for pointer in candidate.pointers[:3]:
        name = pointer.rsplit("/", 1)[-1].split(".")[0].strip().replace(" ", "-")
        if name and len(name) <= 40:
            words.append(name)
    return words
