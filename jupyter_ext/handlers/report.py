"""Tornado handlers for a session's reports: write one through the ``generate_report`` skill (so it
is recorded), and list those written, from the record."""

from __future__ import annotations

from jupyter_server.auth.decorator import authorized
from tornado import web

from jupyter_ext.handlers.base import NiniHandler
from jupyter_ext.handlers.bodies import SkillArguments
from nini.errors import NiniError
from nini.report.listing import list_reports
from nini.skills.invoke import invoke


class ReportHandler(NiniHandler):
    @web.authenticated
    @authorized
    async def post(self, session_id: str) -> None:
        """Body: generate_report's arguments (title, methods, conclusions, lang, formats, ...).

        ``{title, paths: {format: workspace-relative path}, tool_call_id}``; the files are then
        served by ``GET .../artifacts/PATH``. A report that could not be written is ``ok: false``
        with the skill's error (a bad argument, no PDF converter), still recorded as a failed call.
        """
        arguments = self.parse(SkillArguments).fields
        session = await self.session(session_id)  # NOT_FOUND before anything is recorded
        result = await invoke(session, "generate_report", arguments)
        if not result.success:
            error = result.error or {}
            details = {**(error.get("details") or {}), "tool_call_id": result.tool_call_id}
            raise NiniError(error.get("code", "INTERNAL"), error.get("message", "the report failed"), details)
        self.reply({**result.result, "tool_call_id": result.tool_call_id})


class ReportsHandler(NiniHandler):
    @web.authenticated
    @authorized
    async def get(self, session_id: str) -> None:
        """The session's reports, newest first: ``[{title, created_at, tool_call_id, files: {md, html,
        ...}, charts: [{name, formats: {png, svg, ...}}]}]``; each path is served by ``.../artifacts/PATH``."""
        session = await self.session(session_id)
        self.reply(await self.read(list_reports, self.runtime.store, session_id, session.workspace))


handlers = [
    (r"/nini/api/sessions/([^/]+)/report", ReportHandler),
    (r"/nini/api/sessions/([^/]+)/reports", ReportsHandler),
]
