"""Tornado handlers for skills: the unified list, one record, refresh, enable/disable."""

from __future__ import annotations

import asyncio

from jupyter_server.auth.decorator import authorized
from tornado import web

from jupyter_ext.handlers.base import NiniHandler
from nini.errors import ErrorCode, NiniError

SKILL_TYPES = ("function", "markdown")


class SkillsHandler(NiniHandler):
    @web.authenticated
    @authorized
    async def get(self) -> None:
        """The unified list of skill records, ``?type=function|markdown`` to filter."""
        self.reply(self.runtime.registry.list(self.choice("type", SKILL_TYPES)))


class SkillHandler(NiniHandler):
    @web.authenticated
    @authorized
    async def get(self, name: str) -> None:
        """One skill record; ``?type=`` picks the Markdown skill that shares a function skill's name."""
        self.reply(self.runtime.registry.get_record(name, self.choice("type", SKILL_TYPES)).to_dict())

    @web.authenticated
    @authorized
    async def post(self, action: str) -> None:
        """``POST skills/refresh``: re-read the skill roots (the one action on the collection).

        It shares this URL pattern with the records, so a skill named "refresh" stays readable by GET.
        """
        if action != "refresh":
            raise NiniError(ErrorCode.NOT_FOUND, f"no action {action!r} on skills; POST skills/refresh re-reads them")
        registry = self.runtime.registry
        changed = await asyncio.to_thread(registry.refresh)  # a stat per skill file, parses the changed ones
        self.reply({"changed": changed, "count": len(registry.list()), "problems": registry.problems})


class SkillEnabledHandler(NiniHandler):
    @web.authenticated
    @authorized
    async def put(self, name: str) -> None:
        """Body ``{"enabled": bool}``; persisted in NINI_HOME/skills_state.json. The updated record."""
        enabled = self.body_object().get("enabled")
        if not isinstance(enabled, bool):
            raise NiniError(ErrorCode.INVALID_ARGUMENT, 'the body must be {"enabled": true} or {"enabled": false}')
        registry = self.runtime.registry
        self.reply(await asyncio.to_thread(registry.set_enabled, name, enabled, self.choice("type", SKILL_TYPES)))


handlers = [
    (r"/nini/api/skills", SkillsHandler),
    (r"/nini/api/skills/([^/]+)/enabled", SkillEnabledHandler),
    (r"/nini/api/skills/([^/]+)", SkillHandler),
]
