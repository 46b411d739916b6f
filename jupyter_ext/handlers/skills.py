"""Tornado handlers for skills: the unified list, one record, create, refresh, enable/disable, the
problems ``nini skills doctor`` reports, and a Markdown skill's SKILL.md to read and edit.

Creating and editing write into the caller's own skills folder only, through ``nini.skills.editing``,
the same path as the agent's ``save_skill``: validated, atomic, the previous file kept as ``.bak``.
Each caller sees the skills of their own registry (``Runtime.registry_for``): on a server that names
its users, a user's skills live in their own folder and shadow nothing for anyone else. Which skills
are enabled is the server's setting (NINI_HOME/skills_state.json): its administrators change it.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from jupyter_server.auth.decorator import authorized
from tornado import web

from jupyter_ext.handlers.base import NiniHandler
from jupyter_ext.handlers.bodies import EnabledBody, NoBody, SkillBody, SkillSourceBody, check_name
from nini.errors import ErrorCode, NiniError
from nini.owners import check_configure
from nini.redact import redact_paths
from nini.skills.editing import check_editable, create_user_skill, save_markdown_skill, skill_source

if TYPE_CHECKING:
    from nini.skills.registry import SkillRegistry

SKILL_TYPES = ("function", "markdown")
BOOLEANS = {"true": True, "false": False}


class SkillsHandler(NiniHandler):
    @web.authenticated
    @authorized
    async def get(self) -> None:
        """The unified list of skill records; ``?type=function|markdown`` and ``?enabled=true|false`` filter."""
        enabled = self.choice("enabled", tuple(BOOLEANS))
        records = self.registry.list(self.choice("type", SKILL_TYPES))
        self.reply([r for r in records if enabled is None or r["enabled"] is BOOLEANS[enabled]])

    @web.authenticated
    @authorized
    async def post(self) -> None:
        """Body ``{"name", "description", "category"?, "type"?}``: a new skill from the scaffold (as
        ``nini skills create``) in the caller's skills folder; 201 with its record. CONFLICT when a
        skill of that name exists among the caller's skills."""
        body = self.parse(SkillBody)
        record = await asyncio.to_thread(
            create_user_skill,
            self.registry,
            body.name,
            body.description,
            category=body.category or "other",
            type=body.type or "markdown",
            language=self.runtime.settings.ui.current_language,
        )
        self.reply(record.to_dict(), status=201)


class SkillHandler(NiniHandler):
    @web.authenticated
    @authorized
    async def get(self, name: str) -> None:
        """One skill record; ``?type=`` picks the Markdown skill that shares a function skill's name."""
        self.reply(self.registry.get_record(check_name("name", name), self.choice("type", SKILL_TYPES)).to_dict())

    @web.authenticated
    @authorized
    async def post(self, action: str) -> None:
        """``POST skills/refresh``: re-read the skill roots (the one action on the collection).

        It shares this URL pattern with the records, so a skill named "refresh" stays readable by GET.
        """
        if action != "refresh":
            raise NiniError(
                ErrorCode.NOT_FOUND, f"no action {action[:80]!r} on skills; POST skills/refresh re-reads them"
            )
        self.parse(NoBody)
        registry = self.registry
        changed = await asyncio.to_thread(registry.refresh)  # a stat per skill file, parses the changed ones
        self.reply({"changed": changed, "count": len(registry.list()), "problems": registry.problems})


class SkillEnabledHandler(NiniHandler):
    @web.authenticated
    @authorized
    async def put(self, name: str) -> None:
        """Body ``{"enabled": bool}``; persisted in NINI_HOME/skills_state.json (an administrator's
        change: it holds for every user). The updated record."""
        check_configure(self.viewer, "skills_state", self.runtime.settings.ui.current_language)
        enabled = self.parse(EnabledBody).enabled
        check_name("name", name)
        record = await asyncio.to_thread(self.registry.set_enabled, name, enabled, self.choice("type", SKILL_TYPES))
        await asyncio.to_thread(self.runtime.refresh_skills)  # every user's skills, not only the caller's
        self.reply(record)


class SkillProblemsHandler(NiniHandler):
    @web.authenticated
    @authorized
    async def get(self) -> None:
        """What ``nini skills doctor`` reports, after re-reading the skill folders: ``{problems:
        [{severity, kind, name, source, location, message}], skipped, warnings}``; ``skipped``
        counts the files not loaded at all (severity error). Locations are relative to their root."""
        runtime, registry = self.runtime, self.registry
        await asyncio.to_thread(registry.refresh)
        problems = [
            {**p, "message": redact_paths(p["message"], nini_home=runtime.settings.home, workspace=runtime.project_dir)}
            for p in registry.problems
        ]
        skipped = sum(1 for p in problems if p["severity"] == "error")
        self.reply({"problems": problems, "skipped": skipped, "warnings": len(problems) - skipped})


class SkillSourceHandler(NiniHandler):
    @web.authenticated
    @authorized
    async def get(self, name: str) -> None:
        """``{name, type, source, location, content, editable, reason}``: the SKILL.md of a Markdown
        skill as it is on disk. A function skill is INVALID_ARGUMENT (its source is Python)."""
        self.reply(await asyncio.to_thread(skill_source, self.registry, check_name("name", name)))

    @web.authenticated
    @authorized
    async def put(self, name: str) -> None:
        """Body ``{"content"}``: the whole SKILL.md, validated like ``save_skill`` and saved as your own
        skill (the previous file kept as .bak); the record plus ``warnings``, ``backup`` and, for a
        bundled or extra-dir skill now hidden by your copy (for you only), ``shadows`` and a ``note``
        saying so."""
        content = self.parse(SkillSourceBody).content
        self.reply(await asyncio.to_thread(_save_source, self.registry, check_name("name", name), content))


def _save_source(registry: SkillRegistry, name: str, content: str) -> dict[str, Any]:
    check_editable(registry, name)
    saved = save_markdown_skill(registry, name, content)
    record = registry.get_record(name, "markdown").to_dict()
    note = None
    if saved["shadows"]:
        note = (
            f"saved as your own skill ({saved['location']} in your skills folder): for you it now hides the "
            f"{saved['shadows']} skill {name!r}, which is unchanged"
        )
    elif saved["shadowed_by"]:
        note = f"saved, but the {saved['shadowed_by']} skill {name!r} ranks above your own and is the one used"
    return {
        **record,
        "warnings": saved["warnings"],
        "backup": saved["backup"],
        "shadows": saved["shadows"],
        "note": note,
    }


handlers = [
    (r"/nini/api/skills", SkillsHandler),
    (r"/nini/api/skill-problems", SkillProblemsHandler),
    (r"/nini/api/skills/([^/]+)/source", SkillSourceHandler),
    (r"/nini/api/skills/([^/]+)/enabled", SkillEnabledHandler),
    (r"/nini/api/skills/([^/]+)", SkillHandler),
]
