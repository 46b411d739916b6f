"""The model's view of a session: stored messages in OpenAI chat format, tool outputs capped.

The store keeps every message whole; what the model gets is rebuilt from it with each tool
output cut to ``execution.output_cap_chars`` (``cap_json``), older turns dropped past
``agent.context_max_tokens`` (counted with tiktoken: a character budget would let a Chinese
conversation, about a token per character, run far past a model's window),
and any tool call left without an answer (a cancelled run) answered, since every provider
rejects a conversation with a dangling tool call.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from nini.errors import ErrorCode, error_dict
from nini.skills.output import cap_json, cap_text

if TYPE_CHECKING:
    from nini.session import Session

UNANSWERED = json.dumps(
    {"success": False, "error": error_dict(ErrorCode.CANCELED, "the run ended before this call finished")},
    separators=(",", ":"),
)


def load_context(session: Session) -> list[dict[str, Any]]:
    """The session's conversation as chat messages, ready to follow a system prompt."""
    cap = session.settings.execution.output_cap_chars
    messages: list[dict[str, Any]] = []
    for row in session.store.list_messages(session.id):
        message = to_chat_message(row, cap)
        if message is not None:
            messages.append(message)
    return within_budget(_answer_dangling_calls(messages), session.settings.agent.context_max_tokens)


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


def _answer_dangling_calls(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    fixed: list[dict[str, Any]] = []
    pending: list[str] = []
    for message in messages:
        if message["role"] != "tool" and pending:
            fixed += [{"role": "tool", "tool_call_id": call_id, "content": UNANSWERED} for call_id in pending]
            pending = []
        if message["role"] == "tool":
            if message["tool_call_id"] not in pending:
                continue  # an answer without its call (the call was cut with its turn): drop it
            pending.remove(message["tool_call_id"])
        fixed.append(message)
        if message["role"] == "assistant":
            pending = [c["id"] for c in message.get("tool_calls", [])]
    fixed += [{"role": "tool", "tool_call_id": call_id, "content": UNANSWERED} for call_id in pending]
    return fixed


def within_budget(messages: list[dict[str, Any]], max_tokens: int) -> list[dict[str, Any]]:
    """The newest whole turns (each starting at a user message) that fit ``max_tokens``; the
    newest turn always, even alone over the budget (its tool outputs are capped already)."""
    from nini.tokens import count_tokens

    total, start = 0, len(messages)
    for index in range(len(messages) - 1, -1, -1):
        total += count_tokens(json.dumps(messages[index], ensure_ascii=False))
        if total > max_tokens and start < len(messages):
            break
        if messages[index]["role"] == "user":
            start = index
    return messages[start:]
