"""REST for experience memory (``/nini/api/experience``): pending candidates to confirm, the
curator's plan, the deposit (only with ``"confirm": true``), the libraries, and what each run of a
session was warned about. Every rule is in ``nini.memory.experience``; file work runs off the loop.

Pending candidates are the caller's own (``ExperienceMemory.pending_for``): another user's candidate
is NOT_FOUND as one that does not exist. The libraries are shared and read by everyone; deprecating
an entry changes them for everyone, so on a server that names its users it is an administrator's.
"""

from __future__ import annotations

import asyncio
from typing import Any

from jupyter_server.auth.decorator import authorized
from tornado import web

from jupyter_ext.handlers.base import NiniHandler
from jupyter_ext.handlers.bodies import (
    CandidateBody,
    DepositBody,
    DeprecateBody,
    PlanBody,
    StatementBody,
    check_id,
    whole_number,
)
from nini.errors import ErrorCode, NiniError
from nini.memory.experience.curate import Plan, deprecate
from nini.memory.experience.model import LEVELS
from nini.owners import check_configure

EVENTS = ("experience_matched", "experience_captured")
OPTIONS = {"level": "level", "type": "type_", "trigger": "trigger", "signal": "signal"}


class PendingHandler(NiniHandler):
    @web.authenticated
    @authorized
    async def get(self) -> None:
        """``{candidates: [{number, candidate, evaluation}], asked, problems}``: what waits for the caller."""
        state, shown = await asyncio.to_thread(self.runtime.experience.pending_view, self.viewer.name)
        self.reply({"candidates": shown, "asked": state.asked, "problems": state.problems})

    @web.authenticated
    @authorized
    async def post(self) -> None:
        """Body ``{"text", "level"?, "type"?, "trigger"?, "signal"?, "alternatives"?: [..], "stage"?, "session_id"?}``:
        an explicit statement as a candidate (stage 1 applies); 201 with ``{kept, dropped, problems}``."""
        body = self.parse(StatementBody)
        options = {name: getattr(body, key) for key, name in OPTIONS.items() if getattr(body, key) is not None}
        session_id = body.session_id
        datasets: list[str] = []
        if session_id is not None:
            session = await self.session(session_id)
            datasets = [row["name"] for row in await self.read(self.runtime.store.list_datasets, session.id)]
        memory = self.runtime.experience
        result = await asyncio.to_thread(
            memory.capture_statement,
            body.text,
            stage=body.stage,
            session_id=session_id,
            datasets=datasets,
            alternatives=body.alternatives or [],
            owner=self.viewer.name,
            **options,
        )
        self.reply(result.to_dict(), status=201 if result.kept else 200)


class CandidateHandler(NiniHandler):
    @web.authenticated
    @authorized
    async def put(self, candidate_id: str) -> None:
        """Body: the fields to change (title, trigger, decision, alternatives, signal, level, type, ...);
        the edited candidate, which must still pass stage 1."""
        changes = self.parse(CandidateBody).model_dump(exclude_none=True, by_alias=True)
        check_id("candidate id", candidate_id)
        self.reply(
            (await asyncio.to_thread(self.runtime.experience.edit, candidate_id, changes, self.viewer.name)).to_json()
        )

    @web.authenticated
    @authorized
    async def delete(self, candidate_id: str) -> None:
        """Drop one pending candidate (the user does not want it)."""
        await asyncio.to_thread(
            self.runtime.experience.discard, [check_id("candidate id", candidate_id)], self.viewer.name
        )
        self.reply({"discarded": candidate_id})


class PlanHandler(NiniHandler):
    @web.authenticated
    @authorized
    async def post(self) -> None:
        """Body ``{"ids": [...], "targets"?: {id: "team"|"project"}}``: the curator's plan, changing nothing."""
        plan = await self._plan(self.parse(PlanBody))
        self.reply(_plan_json(plan, self.runtime.experience.language))

    async def _plan(self, body: PlanBody) -> Plan:
        return await asyncio.to_thread(self.runtime.experience.plan, body.ids, body.targets or {}, self.viewer.name)


class DepositHandler(PlanHandler):
    @web.authenticated
    @authorized
    async def post(self) -> None:
        """Body ``{"ids", "targets"?, "confirm": true, "plan"?: [lines]}``: carry out the plan. Without
        ``confirm: true`` nothing is written (400). With ``plan`` (the lines the user saw) a library that
        changed since gives CONFLICT instead of a plan the user did not see."""
        body = self.parse(DepositBody)
        memory = self.runtime.experience
        plan = await self._plan(body)
        seen = body.plan
        if seen is not None and seen != plan.describe(memory.language):
            raise NiniError(
                ErrorCode.CONFLICT,
                "the library changed since the plan was shown; look at the new plan",
                {"plan": plan.describe(memory.language)},
            )
        line = await asyncio.to_thread(memory.deposit, plan, confirm=True, owner=self.viewer.name)
        self.reply({"line": line, "plan": plan.describe(memory.language)})


class EntriesHandler(NiniHandler):
    @web.authenticated
    @authorized
    async def get(self) -> None:
        """The libraries' rows (``?level=team|project``, ``?all=1`` for deprecated ones too), with the INDEX
        problems."""
        level = self.choice("level", LEVELS)
        memory = self.runtime.experience
        rows = await asyncio.to_thread(memory.entries, level)
        if self.get_argument("all", "0") not in ("1", "true"):
            rows = [row for row in rows if row["status"] == "active"]
        self.reply({"entries": rows, "problems": await asyncio.to_thread(memory.validate)})


class EntryHandler(NiniHandler):
    @web.authenticated
    @authorized
    async def get(self, level: str, relative: str) -> None:
        """One document, by its reference (``team/knowledge/EXP-0001.md``)."""
        reference = f"{level}/{relative}"
        self.reply({"reference": reference, "text": await asyncio.to_thread(self.runtime.experience.read, reference)})


class DeprecateHandler(NiniHandler):
    @web.authenticated
    @authorized
    async def post(self, level: str, entry_id: str) -> None:
        """Body ``{"confirm": true, "replaced_by"?: "EXP-0004"}``: mark the entry deprecated (its file
        stays); an administrator's change where the server names its users (it hides the entry from everyone)."""
        check_configure(self.viewer, "experience", self.runtime.settings.ui.current_language)
        replaced_by = self.parse(DeprecateBody).replaced_by or ""
        whole_number("the entry's number", entry_id.removeprefix("EXP-"))
        library = self.runtime.experience.library(level)
        self.reply({"line": await asyncio.to_thread(deprecate, library, entry_id, replaced_by)})


class SessionExperienceHandler(NiniHandler):
    @web.authenticated
    @authorized
    async def get(self, session_id: str) -> None:
        """What each run of the session was warned about and captured: its experience events, oldest first."""
        await self.session(session_id)
        found = await self.read(self.runtime.store.list_events, session_id, 0, EVENTS)
        self.reply(
            [
                {"type": e["type"], "turn_id": e["turn_id"], "seq": e["seq"], "ts": e["ts"], "data": e["data"]}
                for e in found
            ]
        )


def _plan_json(plan: Plan, language: str) -> dict[str, Any]:
    actions = [
        {
            "kind": a.kind,
            "level": a.level,
            "candidates": [c.id for c in a.candidates],
            "titles": [c.title for c in a.candidates],
            "replaces": [r.id for r in a.replaces],
            "reason": a.reason,
        }
        for a in plan.actions
    ]
    return {"actions": actions, "plan": plan.describe(language)}


BASE = r"/nini/api/experience"
handlers = [
    (BASE + r"/pending", PendingHandler),
    (BASE + r"/pending/([0-9a-f]+)", CandidateHandler),
    (BASE + r"/plan", PlanHandler),
    (BASE + r"/deposit", DepositHandler),
    (BASE + r"/entries", EntriesHandler),
    (BASE + r"/entries/(team|project)/(EXP-\d+)/deprecate", DeprecateHandler),
    (BASE + r"/entries/(team|project)/((?:standards/|knowledge/)?EXP-[\w-]+\.md)", EntryHandler),
    (r"/nini/api/sessions/([^/]+)/experience", SessionExperienceHandler),
]
