"""The durable record: sessions, messages, tool calls, executions, artifacts, datasets, events."""

from nini.history.events import EventBus, Subscription
from nini.history.store import HistoryStore

__all__ = ["EventBus", "HistoryStore", "Subscription"]
