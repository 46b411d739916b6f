"""Tornado handlers for steps waiting for the user's OK (``execution.approve_in_user_kernel``).

A run-code call with ``kernel_id`` runs in the user's own kernel, not sandboxed; with approval on,
it waits until a client shows its code and answers here (or ``execution.approval_timeout_s``
passes). ``approval_required`` and ``approval_resolved`` events tell watchers the same.
"""

from __future__ import annotations

from jupyter_server.auth.decorator import authorized
from tornado import web

from jupyter_ext.handlers.base import NiniHandler
from nini.errors import ErrorCode, NiniError


class ApprovalsHandler(NiniHandler):
    @web.authenticated
    @authorized
    async def get(self, session_id: str) -> None:
        """The session's steps waiting now: ``[{approval_id, language, code, notice, waiting_s}]``."""
        await self.session(session_id)
        self.reply(self.runtime.approvals.waiting(session_id))


class ApprovalHandler(NiniHandler):
    @web.authenticated
    @authorized
    async def post(self, session_id: str, approval_id: str) -> None:
        """Body ``{"approve": true|false}``: the step runs, or ends CANCELED without running."""
        approve = self.body_object().get("approve")
        if not isinstance(approve, bool):
            raise NiniError(ErrorCode.INVALID_ARGUMENT, 'the body must be {"approve": true} or {"approve": false}')
        await self.session(session_id)
        if not self.runtime.approvals.decide(session_id, approval_id, approve):
            raise NiniError(ErrorCode.NOT_FOUND, f"no step {approval_id!r} is waiting for approval in this session",
                            {"approval_id": approval_id})  # fmt: skip
        self.reply({"approval_id": approval_id, "approved": approve})


SESSION = r"/nini/api/sessions/([^/]+)"
handlers = [
    (SESSION + r"/approvals", ApprovalsHandler),
    (SESSION + r"/approvals/([^/]+)", ApprovalHandler),
]
