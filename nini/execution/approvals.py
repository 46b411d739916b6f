"""Approval of steps that run in the user's own kernel, where no sandbox stands between the code
and the user's files (``execution.approve_in_user_kernel``).

A step asked for over REST (run-code with ``kernel_id``) waits here: ``ask`` publishes an
``approval_required`` event carrying the code, and ``decide`` (``POST .../approvals/ID``) or the
timeout ends the wait; ``approval_resolved`` says how. ``%%nini`` asks in the notebook instead
(``InProcessExecutor.ask``), where the user is. Either way ``run_code`` refuses an unapproved
step with CANCELED before anything runs.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nini.session import Session

USER_KERNEL_NOTICE = "runs in your kernel, not sandboxed"


@dataclass
class _Pending:
    id: str
    session_id: str
    language: str
    code: str
    created_at: float
    future: asyncio.Future[bool] = field(repr=False)

    def to_dict(self) -> dict[str, Any]:
        return {"approval_id": self.id, "language": self.language, "code": self.code,
                "notice": USER_KERNEL_NOTICE, "waiting_s": round(time.monotonic() - self.created_at, 1)}  # fmt: skip


class Approvals:
    """The steps of all sessions of one Runtime that wait for the user's OK."""

    def __init__(self) -> None:
        self._pending: dict[str, _Pending] = {}

    async def ask(self, session: Session, code: str, language: str = "python") -> bool:
        """Publish the step and wait for ``decide``; False when refused or after the timeout."""
        timeout_s = session.settings.execution.approval_timeout_s
        pending = _Pending("a" + uuid.uuid4().hex[:12], session.id, language, code, time.monotonic(),
                           asyncio.get_running_loop().create_future())  # fmt: skip
        self._pending[pending.id] = pending
        try:
            await _publish(session, "approval_required", {**pending.to_dict(), "timeout_s": timeout_s})
            try:
                approved = await asyncio.wait_for(asyncio.shield(pending.future), timeout_s)
                how = "approved" if approved else "refused"
            except TimeoutError:
                approved, how = False, "timed_out"
        finally:
            self._pending.pop(pending.id, None)
        await _publish(session, "approval_resolved", {"approval_id": pending.id, "approved": approved, "how": how})
        return approved

    def decide(self, session_id: str, approval_id: str, approved: bool) -> bool:
        """Answer a waiting step; False when there is none by that id in that session."""
        pending = self._pending.get(approval_id)
        if pending is None or pending.session_id != session_id or pending.future.done():
            return False
        pending.future.set_result(bool(approved))
        return True

    def waiting(self, session_id: str) -> list[dict[str, Any]]:
        """The steps of ``session_id`` waiting now, oldest first."""
        return [p.to_dict() for p in self._pending.values() if p.session_id == session_id]


async def _publish(session: Session, type_: str, data: dict[str, Any]) -> None:
    await session.store.call(session.events.publish, session.id, type_, data)
