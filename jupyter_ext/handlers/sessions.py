"""Tornado handlers for recorded sessions: create, list (and search), show, rename, delete, tool
calls, executions, export."""

from __future__ import annotations

from typing import Any

from jupyter_server.auth.decorator import authorized
from tornado import web

from jupyter_ext.handlers.base import NiniHandler
from jupyter_ext.handlers.bodies import NewSessionBody, RenameBody, check_id
from nini.errors import ErrorCode, NiniError
from nini.execution.policy import find_violations
from nini.history.export import FORMATS, export_session
from nini.owners import Viewer

EXPORT_TYPES = {
    "ipynb": "application/x-ipynb+json",
    "md": "text/markdown; charset=utf-8",
    "json": "application/json; charset=utf-8",
}
MAX_LIST = 1000
MAX_QUERY = 200  # characters of a search (?q=)


class SessionsHandler(NiniHandler):
    @web.authenticated
    @authorized
    async def get(self) -> None:
        """The caller's sessions (an admin's: everyone's), newest first, each with its tool call and
        execution counts (``?limit=``, 100); ``?q=`` keeps those whose title or conversation holds it."""
        text = self.get_query_argument("q", "").strip()[:MAX_QUERY] or None
        limit = self.whole_number("limit", 100, 1, MAX_LIST)
        self.reply(await self.read(self.runtime.list_sessions, limit, self.viewer, text))

    @web.authenticated
    @authorized
    async def post(self) -> None:
        """Body ``{"title"?, "id"?}``: a new session owned by the caller (201); CONFLICT if the id is
        taken by a session the caller sees, else NOT_FOUND exactly as for a missing session (no answer
        tells anyone that another user's session exists)."""
        body = self.parse(NewSessionBody)
        runtime = self.runtime
        viewer = self.viewer
        session = await self.read(
            runtime.create_session, title=body.title, session_id=body.id, owner=viewer.name, viewer=viewer
        )
        self.reply(await self.read(session.info), status=201)


class SessionHandler(NiniHandler):
    @web.authenticated
    @authorized
    async def get(self, session_id: str) -> None:
        """The session row with its artifacts and datasets (what a client fetches files by)."""
        self.reply(await self.read(_session_view, self.runtime, check_id("session id", session_id), self.viewer))

    @web.authenticated
    @authorized
    async def patch(self, session_id: str) -> None:
        """Body ``{"title": str}``: rename the session (its owner only; an admin is refused another
        user's with POLICY_VIOLATION); the session row."""
        await self.session(session_id)  # NOT_FOUND first: a body check must not tell a session exists
        title = self.parse(RenameBody).title
        self.reply(await self.read(self.runtime.rename_session, session_id, title, self.viewer))

    @web.authenticated
    @authorized
    async def delete(self, session_id: str) -> None:
        """Delete the session, its record and its workspace for good (its owner only): ``{"deleted":
        id}``; CONFLICT (409) while a turn or a step of it runs."""
        await self.runtime.delete_session(check_id("session id", session_id), self.viewer)
        self.reply({"deleted": session_id})


class ToolCallsHandler(NiniHandler):
    @web.authenticated
    @authorized
    async def get(self, session_id: str) -> None:
        """The session's tool calls in the order they started."""
        await self.session(session_id)
        self.reply(await self.read(self.runtime.store.list_tool_calls, session_id))


class ToolCallHandler(NiniHandler):
    @web.authenticated
    @authorized
    async def get(self, session_id: str, call_id: str) -> None:
        """One tool call of the session, its arguments whole: the code of a step whose ``tool_call``
        event carried only its start (``code_chars``: ``invoke.event_arguments``)."""
        await self.session(session_id)
        call = await self.read(self.runtime.store.get_tool_call, check_id("call_id", call_id))
        if call["session_id"] != session_id:  # word for word as a missing call: no id of another session leaks
            raise NiniError(ErrorCode.NOT_FOUND, f"no tool call {call_id}", {"id": call_id})
        self.reply(call)


class ExecutionsHandler(NiniHandler):
    @web.authenticated
    @authorized
    async def get(self, session_id: str) -> None:
        """The session's code executions in order; ``?language=python|r`` to filter."""
        language = self.choice("language", ("python", "r"))
        await self.session(session_id)
        self.reply(await self.read(self.runtime.store.list_executions, session_id, language))


class ExportHandler(NiniHandler):
    @web.authenticated
    @authorized
    async def get(self, session_id: str) -> None:
        """The session as a download: ``?format=ipynb`` (default, re-runs the analysis), md or json;
        ``&sandboxed=1``: a notebook whose steps re-run in nini's sandbox (``%%nini_run``)."""
        fmt = self.choice("format", FORMATS, "ipynb")
        sandboxed = self.choice("sandboxed", ("0", "1", "false", "true"), "0") in ("1", "true")
        session = await self.session(session_id)
        text = await self.read(
            export_session,
            self.runtime.store,
            session_id,
            session.workspace.root,
            fmt,
            check=find_violations,
            sandboxed=sandboxed,
            language=self.runtime.settings.ui.current_language,
        )
        self.set_header("Content-Disposition", f'attachment; filename="nini-session-{session_id}.{fmt}"')
        self.finish(text, set_content_type=EXPORT_TYPES[fmt])


def _session_view(runtime: Any, session_id: str, viewer: Viewer) -> dict[str, Any]:
    store = runtime.store
    row = runtime.session(session_id, viewer).info()
    return {**row, "artifacts": store.list_artifacts(session_id), "datasets": store.list_datasets(session_id)}


SESSION = r"/nini/api/sessions/([^/]+)"
handlers = [
    (r"/nini/api/sessions", SessionsHandler),
    (SESSION, SessionHandler),
    (SESSION + r"/tool-calls", ToolCallsHandler),
    (SESSION + r"/tool-calls/([^/]+)", ToolCallHandler),
    (SESSION + r"/executions", ExecutionsHandler),
    (SESSION + r"/export", ExportHandler),
]
