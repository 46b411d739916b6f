"""The model's view of a session: the newest turns that fit, in OpenAI chat format, after a running
summary of the older ones; tool outputs capped.

The store keeps every message whole. A turn's context is the session's messages after its summary
as the last turn left them in memory (``context_cache``) and the few written since; in a process
that has not read the session yet, they are read from the newest backwards
(``HistoryStore.messages_newest_first``, pages of ``PAGE_ROWS``) until ``agent.context_max_tokens``
is full (counted with tiktoken: a character budget would let a Chinese conversation, about a token
per character, run far past a model's window) or the messages the summary covers are reached: a
turn's cost follows the budget, never the session's length. Turns that no longer fit are not dropped:
they are folded into the session's summary (``session_summary``) once, keeping the newest turns to
``KEEP_SHARE`` of the room so that the next folds come turns later, and the summary goes ahead of
the recent turns. Any tool call left without an answer (a cancelled run) is answered, since every
provider rejects a conversation with a dangling tool call.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from nini.agent import context_cache
from nini.agent.context_cache import Row, SessionRows
from nini.agent.session_summary import Summary, narrative, turn_notes
from nini.errors import ErrorCode, error_dict
from nini.skills.output import cap_json, cap_text
from nini.tokens import count_repeated, count_tokens

if TYPE_CHECKING:
    from nini.agent.llm import ModelRouter
    from nini.session import Session

log = logging.getLogger("nini.agent.context")

UNANSWERED = json.dumps(
    {"success": False, "error": error_dict(ErrorCode.CANCELED, "the run ended before this call finished")},
    separators=(",", ":"),
)
PAGE_ROWS = 64  # messages per read, newest first
FOLD_PAGE_ROWS = 500  # messages per read while folding, oldest first
SUMMARY_SHARE = 8  # the summary takes at most 1/8 of the budget
KEEP_SHARE = 0.75  # after a fold the recent turns fill at most this share of their room
NARRATIVE_INPUT_CHARS = 24_000  # the newest notes of what is folded, shown to the model for its narrative


@dataclass
class ContextReport:
    """What a turn's context held: shown in the run footer and ``nini ask --json``.

    ``tokens`` is the prompt as last sent in the turn (system prompt, summary and messages);
    ``window`` the chat model's context window where its provider declares one, else the budget.
    """

    budget: int
    turns: int = 0  # turns sent whole
    summarized_turns: int = 0  # turns folded into the summary
    tokens: int = 0
    window: int = 0
    rows_read: int = 0  # messages read from the store to build it (bounded by the budget)

    def to_dict(self) -> dict[str, Any]:
        window = self.window or self.budget
        return {
            "tokens": self.tokens,
            "window": window,
            "percent": round(100 * self.tokens / window, 1) if window else 0.0,
            "budget": self.budget,
            "turns": self.turns,
            "summarized_turns": self.summarized_turns,
        }


@dataclass
class SessionContext:
    """The messages to send after the system prompt, the summary to put ahead of them, and the report."""

    messages: list[dict[str, Any]]
    summary: str | None
    report: ContextReport
    tokens: int = 0  # of ``messages``, as the report counts them (the runner goes on from here)
    folded: bool = False  # this turn folded turns into the summary (the runner announces it)


@dataclass
class _Window:
    """The newest turns of a session, the summary ahead of them, and what reading them took."""

    state: dict[str, Any] | None  # the stored summary row
    rows: list[Row] = field(default_factory=list)  # oldest first
    newest_id: int = 0  # the newest message read, whether the model takes it or not
    backlog: bool = False  # turns between the summary and ``rows`` no longer fit: they must be folded
    rows_read: int = 0
    summary: str | None = None  # the summary's text, as the model is given it
    room: int = 0  # the tokens the recent turns may take beside the summary
    cap: int = 0  # the tool outputs' cap ``rows`` were converted with

    @property
    def through_id(self) -> int:
        return int(self.state["through_id"]) if self.state else 0

    @property
    def summarized_turns(self) -> int:
        return int(self.state["turns"]) if self.state else 0

    def kept(self) -> SessionRows:
        """The window as the session's cache entry: ``rows`` are all its messages after the summary."""
        return SessionRows(self.through_id, self.state, self.cap, self.rows, self.newest_id)


async def build_context(session: Session, router: ModelRouter | None = None) -> SessionContext:
    """The session's context for a turn: its recent turns after the summary of the older ones,
    folding the turns that no longer fit into the summary first (the model's narrative through
    ``router``, purpose ``summarize``, where one is routed)."""
    store = session.store
    window = await store.call(read_window, session)
    folded = window.backlog
    if folded:
        await _fold(session, window, router)
        context_cache.keep(session.id, window.kept())
    messages, tokens = _sendable(window.rows)
    report = ContextReport(
        budget=session.settings.agent.context_max_tokens,
        turns=sum(message["role"] == "user" for message in messages),
        summarized_turns=window.summarized_turns,
        rows_read=window.rows_read,
    )
    return SessionContext(messages, window.summary, report, tokens, folded)


def load_context(session: Session) -> list[dict[str, Any]]:
    """The recent turns as chat messages (blocking; no fold): what fits after the summary as stored."""
    return _sendable(read_window(session).rows)[0]


def read_window(session: Session) -> _Window:
    """The newest whole turns that fit the room the summary leaves (blocking: run it on the store's
    thread): the session's cached rows and the messages written since, else read from the store
    backwards in pages down to the messages the summary covers. A window that fits is kept for the
    next turn; one with a backlog is kept once it is folded."""
    cap = session.settings.execution.output_cap_chars
    entry = context_cache.take(session.id)
    window = _extended(session, entry) if entry is not None and entry.cap == cap else None
    if window is None:
        window = _read_backwards(session, cap)
    _fit(window)
    if not window.backlog:
        context_cache.keep(session.id, window.kept())
    return window


def _extended(session: Session, entry: SessionRows) -> _Window | None:
    """The window of ``entry`` and the messages written after it; None when the store no longer
    agrees with it (a summary gone, a message committed below one read) or many were written since."""
    store = session.store
    changes = store.context_changes(
        session.id, after_id=entry.newest_id, counted_from=entry.through_id, limit=PAGE_ROWS
    )
    if changes.through_id < entry.through_id or len(changes.rows) == PAGE_ROWS:
        return None
    rows = entry.rows + [_converted(row, entry.cap) for row in changes.rows]
    if changes.count != len(rows):
        return None
    newest = changes.rows[-1]["id"] if changes.rows else entry.newest_id
    entry = SessionRows(entry.through_id, entry.state, entry.cap, rows, newest)
    if changes.through_id > entry.through_id:  # another process folded: its summary, and what it leaves
        state = store.context_summary(session.id)
        if state is None or int(state["through_id"]) < entry.through_id:
            return None
        entry = entry.after(int(state["through_id"]), state)
    window = _Window(entry.state, entry.rows, entry.newest_id, rows_read=len(changes.rows), cap=entry.cap)
    _measure(session, window)
    return window


def _read_backwards(session: Session, cap: int) -> _Window:
    """The newest messages after the summary, read backwards in pages until they pass the room the
    summary leaves with a user message among them, or reach the summary."""
    store = session.store
    window = _Window(store.context_summary(session.id), cap=cap)
    _measure(session, window)
    newest_first: list[Row] = []
    total, user, before = 0, False, None
    while True:
        rows = store.messages_newest_first(session.id, limit=PAGE_ROWS, before_id=before, after_id=window.through_id)
        window.rows_read += len(rows)
        for row in rows:
            newest_first.append(_converted(row, cap))
            total += newest_first[-1][2]
            user = user or row["role"] == "user"
        if len(rows) < PAGE_ROWS:
            break
        if total > window.room and user:
            window.backlog = True  # older turns remain between these and the summary
            break
        before = rows[-1]["id"]
    window.rows = newest_first[::-1]
    window.newest_id = window.rows[-1][0] if window.rows else 0
    return window


def _fit(window: _Window) -> None:
    """Keep in ``window.rows`` the newest whole turns within its room (all of them when they fit
    and nothing older remains, the newest turn always); ``backlog`` when turns were left out."""
    start, left_out = _newest_turns(window.rows, window.room)
    # a backlog is a read that stopped short of the summary: what precedes its oldest user message
    # is part of a turn
    if left_out or window.backlog:
        window.rows, window.backlog = window.rows[start or 0 :], True


def _newest_turns(rows: list[Row], room: int) -> tuple[int | None, bool]:
    """Where in ``rows`` (oldest first) the newest whole turns within ``room`` tokens start (the
    newest turn always; None without a user message), and whether older turns were left out."""
    total, start = 0, None
    for index in range(len(rows) - 1, -1, -1):
        _, message, tokens = rows[index]
        if total + tokens > room and start is not None:
            return start, True
        total += tokens
        if message is not None and message["role"] == "user":
            start = index
    return start, False


def _measure(session: Session, window: _Window) -> None:
    """Set the window's summary text (made once a turn: the model is given it, and its length sets
    the room) and its room, the tokens the recent turns may take: the budget less the summary's."""
    budget = session.settings.agent.context_max_tokens
    if not window.state:
        window.summary, window.room = None, budget
        return
    summary = Summary.of(window.state["summary"])
    window.summary = summary.text(window.summarized_turns, session.settings.ui.current_language)
    window.room = max(budget - count_repeated(window.summary), budget // 2)


async def _fold(session: Session, window: _Window, router: ModelRouter | None) -> None:
    """Fold the turns older than the newest ``KEEP_SHARE`` of the room into the summary, store it,
    and leave ``window`` holding the summary and the turns kept."""
    keep = _newest_turns(window.rows, int(window.room * KEEP_SHARE))[0] or 0
    first_kept = window.rows[keep][0] if keep < len(window.rows) else window.rows[-1][0] + 1
    store, language = session.store, session.settings.ui.current_language
    previous = Summary.of(window.state["summary"]) if window.state else Summary()
    notes, turns, read, shown = await store.call(
        _folded_notes, session, window.through_id, first_kept, window.summarized_turns, language
    )
    window.rows_read += read
    budget = session.settings.agent.context_max_tokens
    previous_text = previous.narrative or "\n".join(note["text"] for note in previous.notes[-50:])
    told = await narrative(router, previous_text, shown, timeout_s=session.settings.agent.summary_timeout_s)
    merged = Summary(previous.notes + notes, previous.left_out, told or previous.narrative)
    total_turns = window.summarized_turns + turns
    merged = merged.bounded(budget // SUMMARY_SHARE, total_turns, language)
    through = first_kept - 1
    saved = await store.call(
        store.save_context_summary,
        session.id,
        merged.to_dict(),
        through_id=through,
        turns=total_turns,
        replaces=window.through_id,
    )
    if not saved:
        log.info("session %s: another process folded its turns first; this turn uses its own fold", session.id)
    window.state = {"through_id": through, "turns": total_turns, "summary": merged.to_dict()}
    window.rows = window.rows[keep:]
    window.backlog = False
    _measure(session, window)


def _folded_notes(
    session: Session, after_id: int, before_id: int, first_turn: int, language: str
) -> tuple[list[dict[str, Any]], int, int, str]:
    """The ledger notes of the messages between ``after_id`` and ``before_id`` read forwards in pages,
    how many turns they hold, how many rows were read, and their text as the model is shown it
    (the newest ``NARRATIVE_INPUT_CHARS``). Blocking."""
    store = session.store
    notes: list[dict[str, Any]] = []
    turn_rows: list[dict[str, Any]] = []
    turns, read, cursor = 0, 0, after_id

    def close_turn() -> None:
        nonlocal turns
        if turn_rows:
            turns += any(row["role"] == "user" for row in turn_rows)
            notes.extend(turn_notes(turn_rows, first_turn + max(turns, 1), language))
            turn_rows.clear()

    while True:
        rows = store.messages_oldest_first(session.id, after_id=cursor, before_id=before_id, limit=FOLD_PAGE_ROWS)
        read += len(rows)
        for row in rows:
            if row["role"] == "user":
                close_turn()
            turn_rows.append(row)
        if len(rows) < FOLD_PAGE_ROWS:
            break
        cursor = rows[-1]["id"]
    close_turn()
    shown = "\n".join(note["text"] for note in notes)
    return notes, turns, read, shown[-NARRATIVE_INPUT_CHARS:]


def _converted(row: dict[str, Any], cap: int) -> Row:
    """``row`` as the model sees it (None for roles it does not take) and its tokens."""
    message = to_chat_message(row, cap)
    return int(row["id"]), message, message_tokens(message) if message is not None else 0


def message_tokens(message: dict[str, Any]) -> int:
    """A chat message's tokens as the context counts them: its JSON (roles, ids and calls cost tokens too)."""
    return count_tokens(json.dumps(message, ensure_ascii=False))


def to_chat_message(row: dict[str, Any], cap: int) -> dict[str, Any] | None:
    """One stored message as the model sees it (None for roles the model does not take)."""
    role, content, meta = row["role"], row.get("content"), row.get("metadata") or {}
    if role == "user":
        return {"role": "user", "content": content or ""}
    if role == "assistant":
        message: dict[str, Any] = {"role": "assistant", "content": content or None}
        calls = meta.get("tool_calls") or []
        if calls:
            message["tool_calls"] = [
                {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
                for c in calls
            ]
        elif not content:
            return None
        return message
    if role == "tool":
        return {
            "role": "tool",
            "tool_call_id": row.get("tool_call_id") or "",
            "content": cap_tool_text(content or "", cap, row),
        }
    return None


def cap_tool_text(text: str, cap: int, row: dict[str, Any] | None = None) -> str:
    call_id = ((row or {}).get("metadata") or {}).get("call_id", "?")
    where = f"tool call {call_id} in the session history"
    try:
        return cap_json(json.loads(text), cap, where)
    except ValueError:
        return cap_text(text, cap, where)


def _sendable(rows: list[Row]) -> tuple[list[dict[str, Any]], int]:
    """The messages of ``rows`` the model takes, and their tokens, with every tool call answered:
    a call left without its answer (a cancelled run) gets ``UNANSWERED``, since every provider
    rejects a conversation with a dangling call, and an answer whose call was cut off with its turn
    is dropped. The messages are the cached ones, not copies (a turn only appends to the list):
    copying a full window each turn cost more than everything else the turn did with it."""
    fixed: list[dict[str, Any]] = []
    tokens = 0
    pending: list[str] = []

    def answer_pending() -> None:
        nonlocal tokens
        for call_id in pending:
            fixed.append({"role": "tool", "tool_call_id": call_id, "content": UNANSWERED})
            tokens += message_tokens(fixed[-1])
        pending.clear()

    for _, message, count in rows:
        if message is None:
            continue
        role = message["role"]
        if role != "tool" and pending:
            answer_pending()
        if role == "tool":
            if message["tool_call_id"] not in pending:
                continue
            pending.remove(message["tool_call_id"])
        fixed.append(message)
        tokens += count
        if role == "assistant":
            pending.extend(call["id"] for call in message.get("tool_calls", ()))
    answer_pending()
    return fixed, tokens
