"""``PreferenceMemory``: the one entry point for preferences (the agent's prompt, feedback from the
CLI, REST, the magic and the sidebar, and the user's own controls).

A run is named by its turn id (an answer), ``report:<artifact id>`` (a report), or a proposal's id
(a proposed cell); the feedback on it learns from the preferences that run was given (its
``preferences_injected`` event). Signals come from the user's ``--signal``, their comment (a model
for purpose ``fast`` when one is configured, else keyword rules), or their edit of the text.

Preferences are their owner's (``owner=``: a Jupyter user's name, None for the unnamed single
user): a turn is given its session owner's (``select_for``), feedback teaches the judged run's
session owner's, and a run in a session the caller may not see is NOT_FOUND, word for word as one
that does not exist.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from nini.errors import ErrorCode, NiniError
from nini.history.schema import artifacts, events, sessions, tool_calls
from nini.memory.preferences.inject import Selection, select_memory_for_injection
from nini.memory.preferences.learning import Feedback, Learned, ingest
from nini.memory.preferences.rules import SIGNALS, signals_from_comment, signals_from_edit
from nini.memory.preferences.store import ACTIONS, PreferenceStore

if TYPE_CHECKING:
    from nini.config import Settings
    from nini.history.store import HistoryStore
    from nini.owners import Viewer
    from nini.session import Session

log = logging.getLogger("nini.memory.preferences")

INJECTED_EVENT = "preferences_injected"
EXTRACT_PROMPT = (
    "The user gave feedback on a data-analysis assistant's output. Which of these preferences does their "
    "comment ask for? " + ", ".join(SIGNALS) + ". Add a short snake_case name for any other clear "
    'style preference. Answer with JSON only: {"signals": ["..."]}; none: {"signals": []}.'
)


def project_id_for(project_dir: Path) -> str:
    """A stable, path-free name of a project: its folder's name and a short hash of where it is."""
    resolved = str(project_dir.resolve())
    return f"{project_dir.name or 'root'}-{hashlib.sha1(resolved.encode()).hexdigest()[:8]}"


class PreferenceMemory:
    def __init__(self, settings: Settings, store: HistoryStore, project_dir: Path) -> None:
        self.settings = settings
        self.store = store
        self.table = PreferenceStore(store)
        self.project_id = project_id_for(project_dir)

    @property
    def options(self) -> Any:
        return self.settings.preferences

    def select(
        self, skill_type: str = "answer", project_id: str | None = None, *, owner: str | None = None
    ) -> Selection:
        """What ``owner``'s next run of ``skill_type`` would be given (``preview`` prints exactly this block)."""
        options = self.options
        return select_memory_for_injection(
            self.store,
            project_id or self.project_id,
            skill_type,
            options.max_items,
            options.token_budget,
            floor=options.confidence_floor,
            language=self.settings.ui.current_language,
            enabled=options.injection,
            owner=owner,
        )

    def select_for(self, session: Session, skill_type: str = "answer") -> Selection:
        """What a run of ``session`` is given: its owner's preferences. Blocking: the store's thread."""
        return self.select(skill_type, owner=session.owner)

    async def feedback(
        self,
        run_id: str,
        action: str,
        *,
        signals: list[str] | None = None,
        comment: str | None = None,
        original: str | None = None,
        edited: str | None = None,
        llm: Any = None,
        evidence: dict[str, Any] | None = None,
        viewer: Viewer | None = None,
    ) -> Learned:
        """Record the user's feedback on a run and learn from it (within ``preferences.timeout_s``):
        the run's session owner's preferences learn. ``viewer``: who gives it (None: the CLI, anyone's
        run); a run in a session they may not see is NOT_FOUND, as one that does not exist."""
        if action not in ACTIONS:
            raise NiniError(ErrorCode.INVALID_ARGUMENT, f"action must be accept, reject or partial, not {action!r}")
        if evidence is not None:
            try:
                json.dumps(evidence, allow_nan=False)
            except (TypeError, ValueError) as exc:
                raise NiniError(ErrorCode.INVALID_ARGUMENT, f"evidence must be JSON: {exc}") from None
        try:
            async with asyncio.timeout(self.options.timeout_s):
                skill_id, injected, owner = await self.store.call(self.resolve, run_id, viewer)
                found = [s.strip() for s in signals or [] if s.strip()]
                if comment:
                    found += await self._comment_signals(comment, llm)
                if original is not None and edited is not None:
                    found += signals_from_edit(original, edited)
                    evidence = {
                        **(evidence or {}),
                        "diff_id": hashlib.sha1(f"{original}\0{edited}".encode()).hexdigest()[:12],
                    }
                record = Feedback(
                    run_id, action, skill_id, self.project_id, list(dict.fromkeys(found)), evidence, injected, owner
                )
                return await self.store.call(ingest, self.store, record, learning=self.options.learning)
        except TimeoutError:
            raise NiniError(
                ErrorCode.TIMEOUT, f"the feedback took longer than {self.options.timeout_s} s; nothing was recorded"
            ) from None

    def resolve(self, run_id: str, viewer: Viewer | None = None) -> tuple[str, list[int], str | None]:
        """(the skill that made the run's output, the preference ids the run was given, its session's
        owner); NOT_FOUND for an unknown run and for one in a session ``viewer`` may not see."""
        with self.store.reading() as conn:
            report = re.fullmatch(r"report:(\d+)", run_id)
            if report:
                return "generate_report", [], _report(conn, report.group(1), viewer).owner
            call = conn.execute(
                sa.select(tool_calls.c.turn_id, tool_calls.c.tool_name, tool_calls.c.session_id).where(
                    tool_calls.c.id == run_id
                )
            ).first()
            turn_id, skill = (call.turn_id, call.tool_name) if call is not None else (run_id, "answer")
            query = sa.select(events.c.type, events.c.data, events.c.session_id).where(events.c.turn_id == turn_id)
            found = [(row.type, row.data, row.session_id) for row in conn.execute(query)]
            session_id = call.session_id if call is not None else found[0][2] if found else None
            owner = (
                conn.execute(sa.select(sessions.c.owner).where(sessions.c.id == session_id)).scalar()
                if session_id
                else None
            )
        if session_id is None or (viewer is not None and not viewer.sees(owner)):
            raise NiniError(
                ErrorCode.NOT_FOUND, f"no run {run_id}: give a turn id, report:<artifact id> or a proposal id"
            )
        injected = [
            i
            for kind, data, where in found
            if kind == INJECTED_EVENT and where == session_id
            for i in (data or {}).get("ids", [])
        ]
        return skill, injected, owner

    def report_text(self, runtime: Any, run_id: str, viewer: Viewer | None = None) -> str:
        """The Markdown of a report run (``report:<artifact id>``), read through its session's workspace
        (NOT_FOUND for a report in a session ``viewer`` may not see, as for a missing one)."""
        found = re.fullmatch(r"report:(\d+)", run_id)
        if found is None:
            raise NiniError(
                ErrorCode.INVALID_ARGUMENT, "an edit is compared with a report: name it report:<artifact id>"
            )
        with self.store.reading() as conn:
            row = _report(conn, found.group(1), viewer)
        return (
            runtime.workspace(row.session_id).fs.read_bytes(row.path, limit=5_000_000).decode("utf-8", errors="replace")
        )

    async def _comment_signals(self, comment: str, llm: Any) -> list[str]:
        if llm is None:
            return signals_from_comment(comment)
        messages = [{"role": "system", "content": EXTRACT_PROMPT}, {"role": "user", "content": comment[:2000]}]
        try:
            completion = await llm.complete("fast", messages, temperature=0, max_tokens=200)
            data = json.loads(re.sub(r"^```(?:json)?\s*|\s*```$", "", (completion.text or "").strip()))
            names = data.get("signals") if isinstance(data, dict) else None
            if isinstance(names, list):
                return [str(name)[:60] for name in names if str(name).strip()][:10]
        except NiniError as exc:
            if exc.code is ErrorCode.CANCELED:
                raise
            log.warning("signal extraction failed (%s); keyword rules used", exc.code)
        except ValueError:
            log.warning("signal extraction answered no JSON; keyword rules used")
        return signals_from_comment(comment)


def _report(conn: Any, number: str, viewer: Viewer | None) -> Any:
    """Report artifact ``number`` (its session id, path and session owner); NOT_FOUND for a missing
    one and, in the same words, for one in a session ``viewer`` may not see."""
    query = sa.select(artifacts.c.session_id, artifacts.c.path, sessions.c.owner)
    query = query.select_from(artifacts.join(sessions, sessions.c.id == artifacts.c.session_id))
    row = conn.execute(query.where((artifacts.c.id == int(number)) & (artifacts.c.kind == "report"))).first()
    if row is None or (viewer is not None and not viewer.sees(row.owner)):
        raise NiniError(ErrorCode.NOT_FOUND, f"no report artifact {number}")
    return row
