"""Skills on the user's notebook: ``read_notebook`` (read-only) and ``propose_cell``, and the
record of the user's answer to each proposal.

The notebook is what the user's client sent with the turn (``session.notebook``); nini never
opens the notebook file for the model. A proposal changes nothing: it is a recorded
``propose_cell`` call (its id is the proposal's) that the client shows with Accept / Reject; the
user's answer is a ``proposal_decided`` event on that call, one per proposal, kept for preference
learning.
"""

from __future__ import annotations

import difflib
from typing import TYPE_CHECKING, Any

from nini.errors import ErrorCode, NiniError
from nini.skills.function import skill

if TYPE_CHECKING:
    from nini.history.events import EventBus
    from nini.history.store import HistoryStore
    from nini.notebook import NotebookContext
    from nini.session import Session

MAX_CELLS_PER_READ = 30
OUTPUT_CHARS = 2000
FULL_OUTPUT_CHARS = 20_000
LANGUAGES = {"python": "code", "r": "code", "markdown": "markdown"}
R_MAGIC = "%%nini_r"
DECIDED = "proposal_decided"
DECISIONS = {"accept": "accepted", "reject": "rejected"}


@skill("read_notebook", category="data", read_only=True)
def read_notebook(
    session: Session, start: int = 0, end: int | None = None, cell: int | None = None, full_output: bool = False
) -> dict[str, Any]:
    """Read cells of the user's notebook (as it was when they asked): a range, or one cell with its whole output.

    Args:
        start: First cell of the range (0-based).
        end: End of the range (exclusive); default start + 30.
        cell: Read only this cell (overrides start/end).
        full_output: With cell: its output up to 20000 characters instead of 2000.
    """
    notebook = _notebook(session)
    total = len(notebook.cells)
    first, last = (cell, cell + 1) if cell is not None else (start, min(end if end is not None else start + 30, total))
    if not (0 <= first < total) or last <= first:
        raise NiniError(
            ErrorCode.INVALID_ARGUMENT, f"no such cell range: the notebook has {total} cells (0 to {total - 1})"
        )
    last = min(last, first + MAX_CELLS_PER_READ)
    limit = FULL_OUTPUT_CHARS if cell is not None and full_output else OUTPUT_CHARS
    cells = []
    for item in notebook.cells[first:last]:
        outputs = (
            item.outputs
            if len(item.outputs) <= limit
            else item.outputs[:limit] + f"… ({len(item.outputs) - limit:,} more characters)"
        )
        cells.append({"index": item.index, "cell_type": item.cell_type, "source": item.source, "outputs": outputs})
    return {"name": notebook.name, "cells": cells, "total_cells": total}


@skill("propose_cell", category="data", read_only=True)
def propose_cell(
    session: Session, source: str, language: str = "python", position: int | None = None, replaces: int | None = None
) -> dict[str, Any]:
    """Propose a cell for the user's notebook; nothing changes until the user accepts it (they may reject it).

    Use it for code the user should keep in their notebook. The answer says where it would go.

    Args:
        source: The cell's content (code, or Markdown text).
        language: python, r (runs through %%nini_r) or markdown.
        position: Index the new cell would take; default after the active cell (or at the end).
        replaces: Index of a cell this one would replace (its source is shown as a diff).
    """
    if language not in LANGUAGES:
        raise NiniError(ErrorCode.INVALID_ARGUMENT, f"language must be one of {', '.join(LANGUAGES)}, not {language!r}")
    if language == "r" and not source.lstrip().startswith(R_MAGIC):
        source = f"{R_MAGIC}\n{source}"
    notebook: NotebookContext | None = session.notebook
    diff = None
    if replaces is not None:
        old = notebook.cell(replaces) if notebook is not None else None
        if notebook is not None and old is None:
            raise NiniError(
                ErrorCode.INVALID_ARGUMENT,
                f"replaces: no cell {replaces}; the notebook has {len(notebook.cells)} cells",
            )
        if old is not None:
            diff = "".join(
                difflib.unified_diff(
                    _ended(old.source).splitlines(keepends=True),
                    _ended(source).splitlines(keepends=True),
                    f"cell {replaces}",
                    "proposed",
                )
            )
        position = replaces
    elif position is None:
        position = _default_position(notebook)
    return {
        "cell_type": LANGUAGES[language],
        "language": language,
        "source": source,
        "position": position,
        "replaces": replaces,
        "diff": diff,
        "status": "pending",
    }


def list_proposals(store: HistoryStore, session_id: str) -> list[dict[str, Any]]:
    """The session's proposals (succeeded propose_cell calls), oldest first, each with the user's answer."""
    decided = {e["tool_call_id"]: e for e in store.list_events(session_id, types=[DECIDED])}
    proposals = []
    for call in store.tool_calls_named(session_id, "propose_cell"):
        if call["status"] == "succeeded" and isinstance(call.get("result"), dict):
            proposals.append(_proposal(call, decided.get(call["id"])))
    return proposals


def decide_proposal(
    events: EventBus, session_id: str, proposal_id: str, decision: str, ran: bool = False
) -> dict[str, Any]:
    """Record the user's ``decision`` ("accept" or "reject") on a proposal, once; returns the proposal.

    NOT_FOUND for an id that is not a proposal of this session, CONFLICT when it was answered already.
    """
    if decision not in DECISIONS:
        raise NiniError(ErrorCode.INVALID_ARGUMENT, f"decision must be accept or reject, not {decision!r}")
    found = next((p for p in list_proposals(events.store, session_id) if p["proposal_id"] == proposal_id), None)
    if found is None:
        raise NiniError(ErrorCode.NOT_FOUND, f"no proposal {proposal_id} in session {session_id}")
    if found["status"] != "pending":
        raise NiniError(ErrorCode.CONFLICT, f"proposal {proposal_id} was {found['status']} already")
    event = events.publish(
        session_id,
        DECIDED,
        {"decision": DECISIONS[decision], "ran": bool(ran and decision == "accept")},
        tool_call_id=proposal_id,
    )
    return {**found, "status": event["data"]["decision"], "ran": event["data"]["ran"], "decided_at": event["ts"]}


def _proposal(call: dict[str, Any], decided: dict[str, Any] | None) -> dict[str, Any]:
    result = call["result"]
    answer = (decided or {}).get("data") or {}
    return {
        "proposal_id": call["id"],
        **{k: result.get(k) for k in ("cell_type", "language", "source", "position", "replaces", "diff")},
        "status": answer.get("decision", "pending"),
        "ran": answer.get("ran"),
        "decided_at": (decided or {}).get("ts"),
    }


def _notebook(session: Session) -> NotebookContext:
    if session.notebook is None or not session.notebook.cells:
        raise NiniError(
            ErrorCode.INVALID_ARGUMENT, "no notebook is attached to this conversation: ask from a notebook to read it"
        )
    return session.notebook


def _default_position(notebook: NotebookContext | None) -> int:
    if notebook is None:
        return -1  # the end of whatever notebook the user pastes it into
    return notebook.active + 1 if notebook.active is not None else len(notebook.cells)


def _ended(text: str) -> str:
    return text if text.endswith("\n") else text + "\n"
