"""Tornado handlers that run the agent: ask (start a turn) and cancel, per session.

A turn runs in the background on the server's loop: ``ask`` answers 202 with its ``turn_id`` at
once, and the turn's events (``user_message``, ``assistant_delta``, tool calls, ``done``) stream on
the session's WebSocket. Subscribe before asking, or resume with ``?since=``, to miss none. One
turn per session at a time (CONFLICT). Turns still going when the server stops are canceled
by ``Runtime.aclose``.
"""

from __future__ import annotations

import ast
import asyncio
import logging

from jupyter_server.auth.decorator import authorized
from tornado import web

from jupyter_ext.handlers.base import NiniHandler
from jupyter_ext.handlers.bodies import AskBody, NoBody
from nini.execution.isolation import notice_of
from nini.execution.namespace import namespace_expression
from nini.execution.variables import NotebookVariables
from nini.notebook import NotebookContext
from nini.session import Session

log = logging.getLogger("nini.jupyter")
NAMESPACE_TIMEOUT_S = 3.0  # a kernel busy with the user's code answers later: the turn goes on without


class AskHandler(NiniHandler):
    @web.authenticated
    @authorized
    async def post(self, session_id: str | None = None) -> None:
        """Body ``{"message": str, "kernel_id"?: str, "notebook_kernel_id"?: str, "notebook"?: {...},
        "stage"?: str}``: start a turn; 202 ``{"turn_id"}``.
        ``POST /nini/api/ask`` (no session in the URL) starts the turn in a new session, made only
        once every check has passed (body ``"title"?``, else the question's start): 202 ``{"turn_id",
        "session_id"}``, and a refused ask (no model, a bad body) leaves no empty session behind.
        ``stage`` (init, analysis, report, review) is the project stage experience matching and capture use.
        ``notebook`` is the notebook asked from (``NotebookContext.from_json``).
        NO_MODEL_AVAILABLE (503) up front when no model is usable, CONFLICT (409) while the session
        runs another turn. Where the turn's Python runs (each a notebook kernel of this server,
        checked as run-code checks it; the prompt describes that kernel's variables):
        - ``notebook_kernel_id`` (the sidebar's default): in the session's sandboxed kernel, with
          copies of the notebook's variables the agent asks for (run_code's ``variables``);
        - ``kernel_id``: in that kernel, not sandboxed, each step asking first
          (``execution.approve_in_user_kernel``); the reply's ``notice`` says so; cancelling the
          turn interrupts that kernel's code and keeps its variables."""
        body = self.parse(AskBody)
        message, stage, title = body.message, body.stage, body.title
        kernel_id = self.server_kernel(body.kernel_id)
        variables_kernel_id = self.server_kernel(body.notebook_kernel_id) if kernel_id is None else None
        notebook = NotebookContext.from_json(body.notebook) if body.notebook is not None else None
        runtime = self.runtime
        made = session_id is None
        session = None if session_id is None else await self.session(session_id)
        runtime.router.chain("chat")  # fail now, not as an event after a 202 (nor after making a session)
        if session is None:
            viewer = self.viewer
            session = await self.read(
                runtime.create_session, title=title or message.strip()[:80], owner=viewer.name, viewer=viewer
            )
        session_id = session.id
        variables = None
        if variables_kernel_id is not None and runtime.kernels.backend == "local":
            execution = runtime.settings.execution
            variables = NotebookVariables(
                runtime.kernels,
                variables_kernel_id,
                session_id,
                session.workspace,
                limit_mb=execution.variable_copy_max_mb,
                prefetch_mb=execution.variable_prefetch_mb,
            )
        described = kernel_id or variables_kernel_id
        if described is not None:
            notebook = notebook or NotebookContext()
            notebook.namespace = await self._namespace(described)
        if described is not None or notebook is not None or stage is not None:
            session = Session(
                session_id, runtime, kernel_id=kernel_id, variables=variables, notebook=notebook, stage=stage
            )
        if variables is not None:
            variables.prefetch()  # while the model thinks: the copies, and the sandboxed kernel's start
        turn_id, task = runtime.agent.start(session, message)
        task.add_done_callback(_log_failure)
        if variables is not None:
            task.add_done_callback(lambda _: variables.close())
        self.reply(
            {
                "turn_id": turn_id,
                **({"session_id": session_id} if made else {}),
                **notice_of("user_kernel" if kernel_id else None),
            },
            status=202,
        )

    async def _namespace(self, kernel_id: str) -> str | None:
        """The notebook kernel's variables, described in that kernel (``describe_namespace``);
        None, and the turn goes on without them, when it is busy or slow or lacks nini."""
        budget = self.runtime.settings.agent.notebook_context_tokens
        text = await self.runtime.kernels.evaluate(kernel_id, namespace_expression(budget), NAMESPACE_TIMEOUT_S)
        try:
            return ast.literal_eval(text) if text else None
        except (ValueError, SyntaxError):
            return None


class CancelHandler(NiniHandler):
    @web.authenticated
    @authorized
    async def post(self, session_id: str) -> None:
        """Cancel the session's turn: ``{"canceled": bool}``, false when none was going. The turn
        ends with a ``done`` event whose ``ended_by`` is "canceled"."""
        await self.session(session_id)  # NOT_FOUND first, as for every verb on a session
        self.parse(NoBody)
        self.reply({"canceled": self.runtime.agent.cancel(session_id)})


def _log_failure(task: asyncio.Task) -> None:
    """A turn ends with a ``done`` event whatever happens; an exception here is a bug, for the log."""
    if not task.cancelled() and task.exception() is not None:
        log.error("agent turn %s failed", task.get_name(), exc_info=task.exception())


SESSION = r"/nini/api/sessions/([^/]+)"
handlers = [
    (r"/nini/api/ask", AskHandler),
    (SESSION + r"/ask", AskHandler),
    (SESSION + r"/cancel", CancelHandler),
]
