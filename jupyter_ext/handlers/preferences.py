"""REST for preferences (``/nini/api/preferences``) and feedback (``/nini/api/feedback``): list, add,
edit, delete, preview exactly what the next run is given, switch learning and injection, judge an
output. The rules are in ``nini.memory.preferences``; database work runs on the store's thread.

Preferences are the caller's own (``Viewer.name``): another user's preference is NOT_FOUND word for
word as a missing one, and feedback on another user's run as on a run that does not exist. The
learning and injection switches are nini's settings (settings.json): its administrators change them.
"""

from __future__ import annotations

import asyncio

from jupyter_server.auth.decorator import authorized
from tornado import web

from jupyter_ext.handlers.base import NiniHandler
from jupyter_ext.handlers.bodies import FeedbackBody, PreferenceBody, PreferenceEditBody, SwitchesBody, whole_number
from nini.agent.preferences import comment_reader
from nini.config import save_setting
from nini.errors import ErrorCode, NiniError
from nini.owners import check_configure


class PreferencesHandler(NiniHandler):
    @web.authenticated
    @authorized
    async def get(self) -> None:
        """Your preferences of this project and your global ones (``?project=ID`` for another project's)."""
        memory = self.runtime.preferences
        project = self.get_argument("project", memory.project_id)
        rows = await self.read(memory.table.list, project, owner=self.viewer.name)
        self.reply({"project_id": memory.project_id, "preferences": rows})

    @web.authenticated
    @authorized
    async def post(self) -> None:
        """Body ``{"key", "value", "project"?: "."|ID}``: your own preference (global without ``project``); 201."""
        body = self.parse(PreferenceBody)
        memory = self.runtime.preferences
        project = _project(body.project, memory.project_id)
        self.reply(
            await self.read(memory.table.put_explicit, project, body.key, body.value, owner=self.viewer.name),
            status=201,
        )


class PreferenceHandler(NiniHandler):
    @web.authenticated
    @authorized
    async def get(self, preference_id: str) -> None:
        self.reply(await self.read(self.runtime.preferences.table.get, _id(preference_id), owner=self.viewer.name))

    @web.authenticated
    @authorized
    async def put(self, preference_id: str) -> None:
        """Body ``{"value"?, "confidence"?}``: your edit, which makes the preference explicit."""
        body = self.parse(PreferenceEditBody)
        table = self.runtime.preferences.table
        self.reply(
            await self.read(
                table.edit, _id(preference_id), value=body.value, confidence=body.confidence, owner=self.viewer.name
            )
        )

    @web.authenticated
    @authorized
    async def delete(self, preference_id: str) -> None:
        """Delete it: the very next run is given the rest."""
        self.reply(await self.read(self.runtime.preferences.table.delete, _id(preference_id), owner=self.viewer.name))


class PreviewHandler(NiniHandler):
    @web.authenticated
    @authorized
    async def get(self) -> None:
        """``?skill_type=answer|report|chart&project=ID``: exactly the block the next such run is given."""
        memory = self.runtime.preferences
        skill_type = self.choice("skill_type", ("answer", "report", "chart"), "answer") or "answer"
        selection = await self.read(
            memory.select, skill_type, self.get_argument("project", memory.project_id), owner=self.viewer.name
        )
        self.reply(selection.to_dict())


class SwitchesHandler(NiniHandler):
    @web.authenticated
    @authorized
    async def get(self) -> None:
        options = self.runtime.settings.preferences
        self.reply({"learning": options.learning, "injection": options.injection})

    @web.authenticated
    @authorized
    async def put(self) -> None:
        """Body ``{"learning"?: bool, "injection"?: bool}``: saved in settings.json and in force at once
        (an administrator's change: they are nini's settings, for every user)."""
        check_configure(self.viewer, "settings", self.runtime.settings.ui.current_language)
        body = self.parse(SwitchesBody)
        options = self.runtime.settings.preferences
        for name, value in body.model_dump(exclude_none=True).items():
            await asyncio.to_thread(save_setting, self.runtime.settings.home, f"preferences.{name}", value)
            setattr(options, name, value)
        self.reply({"learning": options.learning, "injection": options.injection})


class FeedbackHandler(NiniHandler):
    @web.authenticated
    @authorized
    async def post(self) -> None:
        """Body ``{"run_id", "action": "accept"|"reject"|"partial", "signals"?: [..], "comment"?, "evidence"?}``:
        recorded and learned from; 201 with ``{feedback_id, changes, canceled}``."""
        body = self.parse(FeedbackBody)
        runtime = self.runtime
        llm = comment_reader(runtime.router) if body.comment else None
        try:
            learned = await runtime.client_call(
                runtime.preferences.feedback(
                    body.run_id,
                    body.action,
                    signals=body.signals or [],
                    comment=body.comment,
                    llm=llm,
                    evidence=body.evidence,
                    viewer=self.viewer,
                )
            )
        except asyncio.CancelledError:
            raise NiniError(ErrorCode.CANCELED, "the server is shutting down; the feedback was not recorded") from None
        self.reply(learned.to_dict(), status=201)


class SessionPreferencesHandler(NiniHandler):
    @web.authenticated
    @authorized
    async def get(self, session_id: str) -> None:
        """What each run of the session was given: its ``preferences_injected`` events, oldest first."""
        await self.session(session_id)
        found = await self.read(self.runtime.store.list_events, session_id, 0, ["preferences_injected"])
        self.reply([{"turn_id": e["turn_id"], "seq": e["seq"], "ts": e["ts"], **(e["data"] or {})} for e in found])


class SessionFeedbackHandler(NiniHandler):
    @web.authenticated
    @authorized
    async def get(self, session_id: str) -> None:
        """``{run_id: "accept"|"reject"|"partial"}``: the latest feedback on each of the session's
        outputs (turns, reports, proposals), so its thumbs show pressed when the session is reopened."""
        await self.session(session_id)
        self.reply(await self.read(self.runtime.preferences.table.feedback_of_session, session_id))


def _project(value: str | None, current: str) -> str | None:
    """A body's ``project``: None (global), "." (this project) or a project id."""
    return current if value == "." else value


def _id(preference_id: str) -> int:
    """The URL's preference id (digits, by the route), within the database's integers."""
    return whole_number("preference id", preference_id)


BASE = r"/nini/api/preferences"
handlers = [
    (BASE, PreferencesHandler),
    (BASE + r"/preview", PreviewHandler),
    (BASE + r"/switches", SwitchesHandler),
    (BASE + r"/(\d+)", PreferenceHandler),
    (r"/nini/api/feedback", FeedbackHandler),
    (r"/nini/api/sessions/([^/]+)/preferences", SessionPreferencesHandler),
    (r"/nini/api/sessions/([^/]+)/feedback", SessionFeedbackHandler),
]
