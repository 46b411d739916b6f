"""What a skill hands back to ``invoke``, and the capped text of it that goes to the model.

A skill returns either a plain JSON value or a ``ToolOutput`` when it has more to record (an
execution, artifacts, datasets). The model only ever sees ``text_for_llm``: long strings are cut
there with a marker that says how much was cut and where the full text is; the store keeps it all.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from nini.execution.isolation import notice_of

STRING_FIELDS_CUT_FIRST = ("stdout", "stderr", "result")


@dataclass(kw_only=True)
class ToolOutput:
    result: Any
    success: bool = True
    error: dict[str, Any] | None = None  # {code, message, ...} when success is False
    execution: dict[str, Any] | None = None  # an executions row (code skills)
    artifacts: list[dict[str, Any]] = field(default_factory=list)
    datasets: list[dict[str, Any]] = field(default_factory=list)
    summary: str | None = None
    full_text_at: str | None = None  # where the model can find what text_for_llm cuts
    # (type, data) events ``invoke`` publishes once the call and its rows are recorded, before
    # tool_result, so a client reacting to one (``report_ready``) finds the rows it names
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    # where a code skill's code ran: "sandbox", "unsandboxed", "gateway" (the gateway's sandbox)
    # or "user_kernel" (not sandboxed)
    isolation: str | None = None
    gateway: str | None = None  # host:port of that gateway (no credentials), when isolation is "gateway"
    # a code run's list of the chart files it wrote (``CodeRequest.pending_file``): ``invoke``
    # removes it once they are recorded, and removes the files too if the record cannot be written
    pending_file: str | None = None


@dataclass(frozen=True, kw_only=True)
class ToolResult:
    """The outcome of one ``invoke``: what callers (agent, REST, CLI) get back."""

    tool_call_id: str
    name: str
    success: bool
    result: Any
    error: dict[str, Any] | None
    execution_id: str | None = None
    full_text_at: str | None = None
    isolation: str | None = None
    gateway: str | None = None

    def to_dict(self) -> dict[str, Any]:
        body = {
            "tool_call_id": self.tool_call_id,
            "name": self.name,
            "success": self.success,
            "result": self.result,
            "error": self.error,
            "execution_id": self.execution_id,
        }
        if self.isolation is not None:
            body["isolation"] = self.isolation
            body.update(notice_of(self.isolation))
        if self.gateway is not None:
            body["gateway"] = self.gateway
        return body

    def text_for_llm(self, limit: int) -> str:
        """JSON of the result (or error) in at most about ``limit`` characters."""
        payload = self.result if self.result is not None else {"success": self.success, "error": self.error}
        where = self.full_text_at or f"tool call {self.tool_call_id} in the session history"
        return cap_json(payload, limit, where)


def cut_marker(cut: int, total: int, where: str) -> str:
    return f"\n[... {cut:,} of {total:,} characters cut; full text: {where}]"


def cap_text(text: str, limit: int, where: str) -> str:
    """``text`` if it fits in ``limit``, else its head plus a marker saying what was cut and where."""
    if len(text) <= limit:
        return text
    marker = cut_marker(len(text) - limit, len(text), where)
    return text[:limit] + marker


def cap_json(payload: Any, limit: int, where: str) -> str:
    """Compact JSON of ``payload`` within about ``limit`` characters.

    Output streams are cut first (they are where the bulk is); a payload that is still too long
    is cut as a whole, so the model always gets a bounded message.
    """
    text = _dumps(payload)
    if len(text) <= limit:
        return text
    if isinstance(payload, dict):
        trimmed = dict(payload)
        for key in STRING_FIELDS_CUT_FIRST:
            value = trimmed.get(key)
            if not isinstance(value, str):
                continue
            overflow = len(_dumps(trimmed)) - limit
            if overflow <= 0:
                break
            keep = max(200, len(value) - overflow - 200)
            trimmed[key] = cap_text(value, keep, where)
        text = _dumps(trimmed)
        if len(text) <= limit + 400:
            return text
    return cap_text(text, limit, where)


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str, separators=(",", ":"))
