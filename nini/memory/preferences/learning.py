"""Learning from feedback: counts and documented steps, no model training.

For one feedback (accept, reject or partial on an output, with the signals it carries):
- each signal names a preference the user wants; its preference rises by ``SIGNAL_STEP`` (half for
  partial), or is created as an implicit one at ``NEW_CONFIDENCE`` (half for partial). A reject that
  names ``no_exclamation`` three times makes the rule 0.3 -> 0.5 -> 0.7, past the injection floor;
- the preferences that were injected into the judged output (recorded with its run) rise by
  ``INJECTED_STEP`` when it was accepted and fall by it when it was rejected (partial: unchanged),
  unless a signal named them;
- a signal the same output got with the opposite action before (accepted, then rejected) cancels
  out: that earlier change is undone and the new one not made;
- confidence stays in 0..1; explicit preferences (the user's own, 1.0) are never changed; with
  learning switched off the feedback is recorded and nothing else changes;
- only the feedback's ``owner``'s preferences change (the judged run's session owner's), and only
  their earlier feedback on the run cancels out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from nini.errors import ErrorCode, NiniError
from nini.history.schema import skill_run_feedback as feedback_table
from nini.history.schema import user_preferences as table
from nini.memory.preferences.rules import signal_for
from nini.memory.preferences.store import ACTIONS, find, now_ms, owner_filter

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

    from nini.history.store import HistoryStore

NEW_CONFIDENCE = 0.3
SIGNAL_STEP = 0.2
INJECTED_STEP = 0.1
PARTIAL_FACTOR = 0.5
OPPOSITE = {"accept": "reject", "reject": "accept"}


@dataclass
class Feedback:
    run_id: str
    action: str
    skill_id: str
    project_id: str | None = None
    signals: list[str] = field(default_factory=list)
    evidence_ref: dict[str, Any] | None = None
    injected_ids: list[int] = field(default_factory=list)  # what the judged run was given
    owner: str | None = None  # whose preferences it teaches: the judged run's session owner


@dataclass
class Learned:
    feedback_id: int
    changes: list[dict[str, Any]] = field(default_factory=list)  # {id, key, before, after, why}
    canceled: list[str] = field(default_factory=list)  # signals that cancelled out

    def to_dict(self) -> dict[str, Any]:
        return {"feedback_id": self.feedback_id, "changes": self.changes, "canceled": self.canceled}


def ingest(store: HistoryStore, feedback: Feedback, *, learning: bool = True) -> Learned:
    """Record one feedback and apply its rules, in one transaction."""
    if feedback.action not in ACTIONS:
        raise NiniError(
            ErrorCode.INVALID_ARGUMENT, f"action must be accept, reject or partial, not {feedback.action!r}"
        )
    if not isinstance(feedback.run_id, str) or not feedback.run_id.strip():
        raise NiniError(
            ErrorCode.INVALID_ARGUMENT, "a feedback names the run it judges (a turn id or report:<artifact id>)"
        )
    factor = PARTIAL_FACTOR if feedback.action == "partial" else 1.0
    with store.writing() as conn:
        mine = owner_filter(feedback.owner, feedback_table.c.owner)
        earlier = [
            dict(r._mapping)
            for r in conn.execute(sa.select(feedback_table).where((feedback_table.c.run_id == feedback.run_id) & mine))
        ]
        applied: list[dict[str, Any]] = []
        learned = Learned(0)
        for name in dict.fromkeys(feedback.signals):
            if not learning:
                applied.append({"signal": name, "delta": 0.0})
                continue
            undone = _cancel(conn, feedback.owner, earlier, feedback.action, name)
            if undone is not None:
                learned.canceled.append(name)
                learned.changes += undone
                applied.append({"signal": name, "delta": 0.0, "canceled": True})
                continue
            change = _signal(conn, feedback.owner, feedback.project_id, name, factor)
            if change is not None:
                learned.changes.append(change)
            applied.append(
                {
                    "signal": name,
                    "delta": change["after"] - change["before"] if change else 0.0,
                    "id": change["id"] if change else None,
                }
            )
        if learning and feedback.action != "partial":
            named = {change["id"] for change in learned.changes}
            step = INJECTED_STEP if feedback.action == "accept" else -INJECTED_STEP
            for preference_id in dict.fromkeys(feedback.injected_ids):
                if preference_id not in named:
                    change = _move(
                        conn, feedback.owner, preference_id, step, f"injected into a run the user {feedback.action}ed"
                    )
                    if change is not None:
                        learned.changes.append(change)
        row = {
            "run_id": feedback.run_id,
            "project_id": feedback.project_id,
            "skill_id": feedback.skill_id,
            "action": feedback.action,
            "signals": applied,
            "evidence_ref": feedback.evidence_ref,
            "created_at": now_ms(),
            "owner": feedback.owner,
        }
        learned.feedback_id = conn.execute(feedback_table.insert().returning(feedback_table.c.id), row).scalar_one()
    return learned


def _signal(
    conn: Connection, owner: str | None, project_id: str | None, name: str, factor: float
) -> dict[str, Any] | None:
    """``owner``'s named preference up (created when missing), learned globally unless the project has its own."""
    signal = signal_for(name)
    found = find(conn, project_id, signal.key, owner) if project_id is not None else None
    found = found or find(conn, None, signal.key, owner)
    if found is None:
        confidence = round(NEW_CONFIDENCE * factor, 6)
        values = {
            "project_id": None,
            "key": signal.key,
            "value": signal.value,
            "source": "implicit",
            "confidence": confidence,
            "evidence_count": 1,
            "updated_at": now_ms(),
            "owner": owner,
        }
        new_id = conn.execute(table.insert().returning(table.c.id), values).scalar_one()
        return {"id": new_id, "key": signal.key, "before": 0.0, "after": confidence, "why": f"new from signal {name}"}
    if found["source"] == "explicit":
        return None  # the user's own word stands
    if found["value"] != signal.value:  # the signal now asks for another value of this key: it starts over
        return _set(conn, found, NEW_CONFIDENCE * factor, f"signal {name} changed its value", value=signal.value)
    return _move(conn, owner, found["id"], SIGNAL_STEP * factor, f"signal {name}", row=found)


def _move(
    conn: Connection, owner: str | None, preference_id: int, step: float, why: str, row: dict[str, Any] | None = None
) -> dict[str, Any] | None:
    if row is None:
        found = conn.execute(sa.select(table).where((table.c.id == preference_id) & owner_filter(owner))).first()
        if found is None:
            return None  # deleted since the run (or never the owner's)
        row = dict(found._mapping)
    if row["source"] == "explicit":
        return None
    return _set(conn, row, row["confidence"] + step, why)


def _set(conn: Connection, row: dict[str, Any], confidence: float, why: str, value: Any = None) -> dict[str, Any]:
    after = round(min(1.0, max(0.0, confidence)), 6)
    values: dict[str, Any] = {"confidence": after, "evidence_count": row["evidence_count"] + 1, "updated_at": now_ms()}
    if value is not None:
        values["value"] = value
    conn.execute(table.update().where(table.c.id == row["id"]), values)
    return {"id": row["id"], "key": row["key"], "before": row["confidence"], "after": after, "why": why}


def _cancel(
    conn: Connection, owner: str | None, earlier: list[dict[str, Any]], action: str, name: str
) -> list[dict[str, Any]] | None:
    """Undo the change an opposite feedback on the same run made for ``name``; None when there is none."""
    opposite = OPPOSITE.get(action)
    for row in reversed(earlier):
        if row["action"] != opposite:
            continue
        for item in row["signals"] or []:
            if item.get("signal") == name and not item.get("canceled") and item.get("id") is not None:
                item["canceled"] = True
                conn.execute(
                    feedback_table.update().where(feedback_table.c.id == row["id"]), {"signals": row["signals"]}
                )
                change = _move(
                    conn, owner, item["id"], -float(item.get("delta") or 0.0), f"signal {name} cancelled out"
                )
                return [change] if change is not None else []
    return None
