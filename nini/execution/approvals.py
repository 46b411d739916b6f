"""Approval of steps that run in the user's own kernel, where no sandbox stands between the code
and the user's files (``execution.approve_in_user_kernel``, on by default).

Every path into the user's kernel asks here, whichever client started the turn: ``run_code``
calls ``Approvals.ask`` before a step runs there. The question is put to the person by the
client's ``asker`` when it has one (``%%nini`` asks in the notebook cell, where the user is), else
by an ``approval_required`` event carrying the code, answered by ``decide`` (``POST
.../approvals/ID``: the sidebar's card) or refused by the timeout. ``approval_resolved`` says how
it ended (the runtime gives ``Approvals`` the way its events are published: the store and the
event bus are not execution's to know). A person answers one of three things:

- ``once``: this step runs;
- ``session``: this step and every later step of the session run without asking, until the
  session's allowance is withdrawn (``revoke``) or this process ends; ``approval_scope`` events
  tell clients, which show it as a badge;
- ``reject``: the step ends CANCELED without running.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from nini.config import Settings
from nini.execution.isolation import notice_of

Decision = Literal["once", "session", "reject"]
DECISIONS: tuple[Decision, ...] = ("once", "session", "reject")
# How a client asks its person directly (``%%nini``): the step's code and language -> the answer.
Asker = Callable[[str, str], Awaitable[Decision]]
# How an event of a session reaches its clients: (session id, event type, data), recorded and published.
Publish = Callable[[str, str, dict[str, Any]], Awaitable[None]]


# What a person is asked where nini asks in text (``%%nini``'s cell), by ``ui.language``.
QUESTION = {
    "zh": {
        "intro": "nini 想在你的内核中运行这一步（不在沙盒中）：",
        "ask": "允许一次 [o] · 本会话内允许 [s] · 拒绝 [N]：",
        "session": "nini：本会话的步骤将在你的内核中直接运行，不再询问（%nini approvals --reset 恢复询问）",
        "allowed": "nini：本会话已允许（本会话内允许）：步骤在你的内核中运行，不再询问",
        "reset": "nini：本会话的步骤在你的内核中运行前将再次询问",
        "off": "nini：步骤在你的内核中运行，不会询问（execution.approve_in_user_kernel 已关闭）",
        "asks": "nini：每一步在你的内核中运行前都会询问（允许一次、本会话内允许或拒绝）",
    },
    "en": {
        "intro": "nini wants to run this step; it runs in your kernel, not sandboxed:",
        "ask": "Allow once [o] · Allow for this session [s] · Reject [N]: ",
        "session": "nini: this session's steps now run in your kernel without asking (%nini "
        "approvals --reset asks again)",
        "allowed": "nini: allowed for this session: steps run in your kernel without asking",
        "reset": "nini: steps of this session ask again before they run in this kernel",
        "off": "nini: steps run in this kernel without asking (execution.approve_in_user_kernel is off)",
        "asks": "nini: each step asks before it runs in this kernel (allow once, for this session, or reject)",
    },
}


def decision_of(answer: str) -> Decision:
    """A typed answer to ``QUESTION[...]["ask"]``: o/once/y/yes, s/session, anything else rejects."""
    word = answer.strip().lower()
    if word in ("o", "once", "y", "yes", "允许一次"):
        return "once"
    if word in ("s", "session", "本会话内允许"):
        return "session"
    return "reject"


@dataclass
class _Pending:
    id: str
    session_id: str
    language: str
    code: str
    created_at: float
    future: asyncio.Future[Decision] = field(repr=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "approval_id": self.id,
            "language": self.language,
            "code": self.code,
            **notice_of("user_kernel"),
            "waiting_s": round(time.monotonic() - self.created_at, 1),
        }


class Approvals:
    """The steps of all sessions of one Runtime that wait for a person's OK, and the sessions
    whose steps a person allowed for the whole session."""

    def __init__(self, settings: Settings, publish: Publish) -> None:
        self.settings = settings  # execution.approval_timeout_s, read at each question
        self._publish = publish
        self._pending: dict[str, _Pending] = {}
        self._allowed: set[str] = set()

    def allowed_for_session(self, session_id: str) -> bool:
        return session_id in self._allowed

    async def ask(self, session_id: str, code: str, language: str = "python", *, asker: Asker | None = None) -> bool:
        """Whether the step may run: at once when the session is allowed, else a person's answer
        (False when rejected or after ``execution.approval_timeout_s``)."""
        if session_id in self._allowed:
            return True
        timeout_s = self.settings.execution.approval_timeout_s
        pending = _Pending(
            "a" + uuid.uuid4().hex[:12],
            session_id,
            language,
            code,
            time.monotonic(),
            asyncio.get_running_loop().create_future(),
        )
        self._pending[pending.id] = pending
        try:
            await self._publish(session_id, "approval_required", {**pending.to_dict(), "timeout_s": timeout_s})
            decision: Decision | Literal["timed_out"]
            if asker is not None:  # the person is where the client asks (no timeout: the cell waits for them)
                decision = await asker(code, language)
            else:
                try:
                    decision = await asyncio.wait_for(asyncio.shield(pending.future), timeout_s)
                except TimeoutError:
                    decision = "timed_out"
        finally:
            self._pending.pop(pending.id, None)
        approved = decision in ("once", "session")
        await self._publish(
            session_id, "approval_resolved", {"approval_id": pending.id, "approved": approved, "how": decision}
        )
        if decision == "session" and session_id not in self._allowed:
            self._allowed.add(session_id)
            await self._publish(session_id, "approval_scope", {"allowed_for_session": True})
        return approved

    def decide(self, session_id: str, approval_id: str, decision: Decision) -> bool:
        """Answer a waiting step; False when there is none by that id in that session."""
        if decision not in DECISIONS:
            raise ValueError(f"decision must be one of {', '.join(DECISIONS)}")
        pending = self._pending.get(approval_id)
        if pending is None or pending.session_id != session_id or pending.future.done():
            return False
        pending.future.set_result(decision)
        return True

    async def revoke(self, session_id: str) -> bool:
        """Ask again before each step of session ``session_id``; whether it had been allowed."""
        if session_id not in self._allowed:
            return False
        self._allowed.discard(session_id)
        await self._publish(session_id, "approval_scope", {"allowed_for_session": False})
        return True

    def waiting(self, session_id: str) -> list[dict[str, Any]]:
        """The steps of ``session_id`` waiting now, oldest first."""
        return [p.to_dict() for p in self._pending.values() if p.session_id == session_id]
