"""Tornado handlers that run code in a session: run-code (Python) and run-r-code (R), via ``invoke``.

A run whose code failed (CODE_ERROR, TIMEOUT, POLICY_VIOLATION, ...) is a completed, recorded call:
200 with ``ok: true`` and the ToolResult, whose ``success`` is false. Only a request that was itself
wrong is ``ok: false``: a body that is not a JSON object, an unknown session or kernel, and the
arguments ``invoke`` rejects (INVALID_ARGUMENT, NOT_FOUND, e.g. a dataset the session lacks).
"""

from __future__ import annotations

import asyncio

from jupyter_server.auth.decorator import authorized
from tornado import web

from jupyter_ext.handlers.base import NiniHandler
from jupyter_ext.handlers.bodies import RunCodeBody
from nini.errors import ErrorCode, NiniError
from nini.session import Session
from nini.skills.invoke import invoke

# Failures of a call that mean the request was wrong, not the code.
REQUEST_ERRORS = frozenset({ErrorCode.INVALID_ARGUMENT.value, ErrorCode.NOT_FOUND.value})


class RunCodeHandler(NiniHandler):
    skill = "run_code"

    @web.authenticated
    @authorized
    async def post(self, session_id: str) -> None:
        """Body: run_code's arguments, plus ``kernel_id`` to run in a kernel of this server."""
        body = self.parse(RunCodeBody)
        arguments, kernel_id = body.fields, body.kernel_id
        await self.session(session_id)  # NOT_FOUND before anything is recorded
        self.check_runnable(kernel_id)
        try:
            result = await self.runtime.client_call(
                invoke(Session(session_id, self.runtime, kernel_id=kernel_id), self.skill, arguments)
            )
        except asyncio.CancelledError:  # the server is stopping: the call is recorded CANCELED
            raise NiniError(ErrorCode.CANCELED, "the server is shutting down; the call was cancelled") from None
        error = result.error or {}
        if not result.success and error.get("code") in REQUEST_ERRORS:
            details = {**(error.get("details") or {}), "tool_call_id": result.tool_call_id}
            raise NiniError(error["code"], error.get("message", ""), details)
        self.reply(result.to_dict())

    def check_runnable(self, kernel_id: str | None) -> None:
        self.server_kernel(kernel_id)


class RunRCodeHandler(RunCodeHandler):
    skill = "run_r_code"

    def check_runnable(self, kernel_id: str | None) -> None:
        if kernel_id is not None:
            raise NiniError(
                ErrorCode.INVALID_ARGUMENT, "kernel_id applies to run-code only: R runs in the session's R worker"
            )
        registry = self.runtime.registry
        if not any(record["name"] == self.skill for record in registry.list("function")):
            from nini.skills.builtin.run_r import r_status

            raise NiniError(
                ErrorCode.R_UNAVAILABLE,
                r_unavailable(r_status(self.runtime.settings)[1], self.runtime.kernels.gateway_host),
            )


def r_unavailable(reason: str, gateway: str | None) -> str:
    """Why run_r_code cannot run: R workers are always this server's, also when Python runs on a gateway."""
    where = f" (not on the gateway at {gateway}, where Python kernels run)" if gateway else ""
    return f"R cannot be used here: R runs on this Jupyter server itself{where}, and on this server {reason}"


handlers = [
    (r"/nini/api/sessions/([^/]+)/run-code", RunCodeHandler),
    (r"/nini/api/sessions/([^/]+)/run-r-code", RunRCodeHandler),
]
