"""Tornado handlers for steps waiting for a person's OK (``execution.approve_in_user_kernel``).

A step that is to run in the user's own kernel (the sidebar's notebook kernel, run-code with
``kernel_id``) is not sandboxed; with approval on (the default) it waits until a client shows its
code and a person answers here, or ``execution.approval_timeout_s`` passes. ``approval_required``,
``approval_resolved`` and ``approval_scope`` events tell watchers the same.
"""

from __future__ import annotations

from jupyter_server.auth.decorator import authorized
from tornado import web

from jupyter_ext.handlers.base import NiniHandler
from jupyter_ext.handlers.bodies import ApprovalBody, check_id
from nini.errors import ErrorCode, NiniError


class ApprovalPolicyHandler(NiniHandler):
    @web.authenticated
    @authorized
    async def get(self) -> None:
        """``{required, timeout_s}``: whether steps in the user's own kernel ask first on this server
        (``execution.approve_in_user_kernel``), so a client can say so before any session exists."""
        execution = self.runtime.settings.execution
        self.reply({"required": execution.approve_in_user_kernel, "timeout_s": execution.approval_timeout_s})


class ApprovalsHandler(NiniHandler):
    @web.authenticated
    @authorized
    async def get(self, session_id: str) -> None:
        """``{required, allowed_for_session, waiting: [{approval_id, language, code, notice, waiting_s}]}``:
        whether steps in the user's kernel ask at all (the setting), whether a person allowed this
        session's, and the steps waiting now."""
        await self.session(session_id)
        approvals = self.runtime.approvals
        self.reply(
            {
                "required": self.runtime.settings.execution.approve_in_user_kernel,
                "allowed_for_session": approvals.allowed_for_session(session_id),
                "waiting": approvals.waiting(session_id),
            }
        )


class ApprovalHandler(NiniHandler):
    @web.authenticated
    @authorized
    async def post(self, session_id: str, approval_id: str) -> None:
        """Body ``{"decision": "once"|"session"|"reject"}`` (or ``{"approve": bool}``, once or reject):
        the step runs; this one and every later step of the session run; or it ends CANCELED."""
        decision = self.parse(ApprovalBody).chosen
        check_id("approval_id", approval_id)
        await self.session(session_id)
        if not self.runtime.approvals.decide(session_id, approval_id, decision):
            raise NiniError(
                ErrorCode.NOT_FOUND,
                f"no step {approval_id!r} is waiting for approval in this session",
                {"approval_id": approval_id},
            )
        self.reply({"approval_id": approval_id, "decision": decision, "approved": decision != "reject"})


class SessionAllowanceHandler(NiniHandler):
    @web.authenticated
    @authorized
    async def delete(self, session_id: str) -> None:
        """Withdraw "allow for this session": the session's next step in the user's kernel asks
        again. ``{"allowed_for_session": false, "revoked": bool}``."""
        session = await self.session(session_id)
        revoked = await self.runtime.approvals.revoke(session.id)
        self.reply({"allowed_for_session": False, "revoked": revoked})


SESSION = r"/nini/api/sessions/([^/]+)"
handlers = [
    (r"/nini/api/approvals", ApprovalPolicyHandler),
    (SESSION + r"/approvals", ApprovalsHandler),
    (SESSION + r"/approvals/session", SessionAllowanceHandler),
    (SESSION + r"/approvals/([^/]+)", ApprovalHandler),
]
