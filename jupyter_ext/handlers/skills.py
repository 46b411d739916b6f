"""Tornado handlers for skills: the unified list, one record, create, refresh, enable/disable, the
problems ``nini skills doctor`` reports, and a Markdown skill's SKILL.md to read and edit.

Creating and editing write into the user skills folder only, through ``nini.skills.editing``,
the same path as the agent's ``save_skill``: validated, atomic, the previous file kept as ``.bak``.
"""

from __future__ import annotations

import asyncio
from typing import Any

from jupyter_server.auth.decorator import authorized
from tornado import web

from jupyter_ext.handlers.base import NiniHandler
from nini.errors import ErrorCode, NiniError
from nini.redact import redact_paths
from nini.skills.editing import check_editable, create_user_skill, save_markdown_skill, skill_source

SKILL_TYPES = ("function", "markdown")
BOOLEANS = {"true": True, "false": False}


class SkillsHandler(NiniHandler):
    @web.authenticated
    @authorized
    async def get(self) -> None:
        """The unified list of skill records; ``?type=function|markdown`` and ``?enabled=true|false`` filter."""
        enabled = self.choice("enabled", tuple(BOOLEANS))
        records = self.runtime.registry.list(self.choice("type", SKILL_TYPES))
        self.reply([r for r in records if enabled is None or r["enabled"] is BOOLEANS[enabled]])

    @web.authenticated
    @authorized
    async def post(self) -> None:
        """Body ``{"name", "description", "category"?, "type"?}``: a new skill from the scaffold (as
        ``nini skills create``) in the user skills folder; 201 with its record. CONFLICT when a
        skill of that name exists anywhere."""
        body = self.body_object()
        fields = {key: body.get(key) for key in ("name", "description", "category", "type")}
        for key, value in fields.items():
            if value is not None and not isinstance(value, str):
                raise NiniError(ErrorCode.INVALID_ARGUMENT, f"{key} must be a string")
        if not fields["name"] or fields["description"] is None:
            raise NiniError(ErrorCode.INVALID_ARGUMENT, 'the body must be {"name", "description", "category"?, "type"?}')
        kind = fields["type"] or "markdown"
        if kind not in SKILL_TYPES:
            raise NiniError(ErrorCode.INVALID_ARGUMENT, f"type must be one of {', '.join(SKILL_TYPES)}, not {kind!r}")
        runtime = self.runtime
        record = await asyncio.to_thread(create_user_skill, runtime.registry, runtime.settings, fields["name"],
                                         fields["description"], category=fields["category"] or "other", type=kind)  # fmt: skip
        self.reply(record.to_dict(), status=201)


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


class SkillProblemsHandler(NiniHandler):
    @web.authenticated
    @authorized
    async def get(self) -> None:
        """What ``nini skills doctor`` reports, after re-reading the skill folders: ``{problems:
        [{severity, kind, name, source, location, message}], skipped, warnings}``; ``skipped``
        counts the files not loaded at all (severity error). Locations are relative to their root."""
        runtime = self.runtime
        await asyncio.to_thread(runtime.registry.refresh)
        problems = [{**p, "message": redact_paths(p["message"], nini_home=runtime.settings.home,
                                                  workspace=runtime.project_dir)}
                    for p in runtime.registry.problems]  # fmt: skip
        skipped = sum(1 for p in problems if p["severity"] == "error")
        self.reply({"problems": problems, "skipped": skipped, "warnings": len(problems) - skipped})


class SkillSourceHandler(NiniHandler):
    @web.authenticated
    @authorized
    async def get(self, name: str) -> None:
        """``{name, type, source, location, content, editable, reason}``: the SKILL.md of a Markdown
        skill as it is on disk. A function skill is INVALID_ARGUMENT (its source is Python)."""
        runtime = self.runtime
        self.reply(await asyncio.to_thread(skill_source, runtime.registry, runtime.settings, name))

    @web.authenticated
    @authorized
    async def put(self, name: str) -> None:
        """Body ``{"content"}``: the whole SKILL.md, validated like ``save_skill`` and saved as your own
        skill (the previous file kept as .bak); the record plus ``warnings``, ``backup`` and, for a
        bundled or extra-dir skill now hidden by your copy, ``shadows`` and a ``note`` saying so."""
        content = self.body_object().get("content")
        if not isinstance(content, str):
            raise NiniError(ErrorCode.INVALID_ARGUMENT, 'the body must be {"content": "<the whole SKILL.md>"}')
        runtime = self.runtime
        self.reply(await asyncio.to_thread(_save_source, runtime, name, content))


def _save_source(runtime: Any, name: str, content: str) -> dict[str, Any]:
    registry, settings = runtime.registry, runtime.settings
    check_editable(registry, settings, name)
    saved = save_markdown_skill(registry, settings, name, content)
    record = registry.get_record(name, "markdown").to_dict()
    note = None
    if saved["shadows"]:
        note = (f"saved as your own skill in NINI_HOME/skills/{saved['location']}: it now hides the "
                f"{saved['shadows']} skill {name!r}, which is unchanged")  # fmt: skip
    elif saved["shadowed_by"]:
        note = f"saved, but the {saved['shadowed_by']} skill {name!r} ranks above your own and is the one used"
    return {**record, "warnings": saved["warnings"], "backup": saved["backup"], "shadows": saved["shadows"], "note": note}


handlers = [
    (r"/nini/api/skills", SkillsHandler),
    (r"/nini/api/skill-problems", SkillProblemsHandler),
    (r"/nini/api/skills/([^/]+)/source", SkillSourceHandler),
    (r"/nini/api/skills/([^/]+)/enabled", SkillEnabledHandler),
    (r"/nini/api/skills/([^/]+)", SkillHandler),
]
