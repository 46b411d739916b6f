"""Each session's context rows kept in memory between its turns, so that a turn reads only the
messages written since the last one.

Reading the window again each turn cost a turn the whole window: up to ``agent.context_max_tokens``
of messages fetched, decoded and turned into dicts (the largest share of an ask's server time in a
session of a few hundred turns). A stored message never changes, so an entry keeps every message of
the session after its summary, converted and counted, and each turn extends it by the new ones.

An entry is checked out for the length of one turn's read and fold (``take``) and put back after
(``keep``): two turns of one session reading at once cannot change the same entry; the second reads
from the store, as a cold turn does. It is valid only while the store agrees with it: its summary
covers up to ``through_id`` (another process's fold moves that: the entry drops what the new summary
covers), and the session holds exactly its rows up to ``newest_id`` (PostgreSQL can commit a lower
id after a higher one was read: the count the store gives with the new rows tells, and a turn that
finds a difference reads from the store again).

Entries are kept least recently used first, bounded by their tokens (``CACHE_TOKENS``: about 60
full windows of the default budget, a few tens of MB whatever the tool outputs' cap).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

CACHE_TOKENS = 4_000_000

Row = tuple[int, dict[str, Any] | None, int]  # (message id, chat message or None, its tokens)


@dataclass
class SessionRows:
    """A session's messages after its summary, oldest first, as the model sees them."""

    through_id: int  # the last message the summary covers (0: no summary)
    state: dict[str, Any] | None  # the stored summary row it goes with
    cap: int  # the tool outputs' cap they were converted with
    rows: list[Row] = field(default_factory=list)
    newest_id: int = 0  # the newest message seen, whether the model takes it or not

    @property
    def weight(self) -> int:
        """What the entry counts against ``CACHE_TOKENS``: its tokens, and one per row."""
        return sum(tokens for _, _, tokens in self.rows) + len(self.rows)

    def after(self, through_id: int, state: dict[str, Any] | None) -> SessionRows:
        """The entry once a summary covers up to ``through_id`` (a later fold, maybe another process's)."""
        rows = [row for row in self.rows if row[0] > through_id]
        return SessionRows(through_id, state, self.cap, rows, max(self.newest_id, through_id))


_entries: OrderedDict[str, tuple[SessionRows, int]] = OrderedDict()  # session id: (entry, its weight)
_lock = threading.Lock()
_total = 0  # the weights of the entries held


def take(session_id: str) -> SessionRows | None:
    """The session's entry, out of the cache until ``keep`` puts it (or a newer one) back."""
    global _total
    with _lock:
        found = _entries.pop(session_id, None)
        if found is None:
            return None
        _total -= found[1]
        return found[0]


def keep(session_id: str, entry: SessionRows) -> None:
    """Put ``entry`` back as the session's newest; the least recently used go past the bound."""
    global _total
    weight = entry.weight
    with _lock:
        replaced = _entries.pop(session_id, None)
        _total += weight - (replaced[1] if replaced else 0)
        _entries[session_id] = (entry, weight)
        while _total > CACHE_TOKENS and len(_entries) > 1:
            _total -= _entries.popitem(last=False)[1][1]


def forget(session_id: str | None = None) -> None:
    """Drop one session's entry, or all (tests; a settings change that alters every conversion)."""
    if session_id is None:
        with _lock:
            global _total
            _entries.clear()
            _total = 0
    else:
        take(session_id)


def held() -> tuple[int, int]:
    """How many sessions the cache holds and their weight."""
    with _lock:
        return len(_entries), _total
