"""The agent's side of experience memory: warn a run at its start, capture from it at its end.

``ExperienceSection`` is a prompt contributor: the run's stage and the datasets in play go to
``ExperienceMemory.match``; each match becomes one line of the system prompt, and the matches are
recorded with the run as an ``experience_matched`` event (why the agent warned). No match adds
nothing. ``ExperienceCaptureHook`` is a stop hook: with a model configured, the run's user message
(and the answer it reacts to) goes through capture and stage 1; what survives waits in the pending
file, and the run's note is one line saying how many. Both get the memory (and the router) from
the runtime that wires them into its runner (``Runtime.new_agent``): the agent never reaches for them.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from nini.errors import NiniError
from nini.memory.experience.match import prompt_section

if TYPE_CHECKING:
    from nini.agent.llm import ModelRouter
    from nini.agent.runner import StopContext
    from nini.config import Settings
    from nini.memory.experience import ExperienceMemory
    from nini.memory.experience.curate import Judge
    from nini.memory.experience.model import Candidate, IndexRow
    from nini.session import Session

log = logging.getLogger("nini.agent.experience")


class ExperienceSection:
    """The prompt contributor of experience memory; ``memory`` gives it (created on first use)."""

    __name__ = "experience_section"

    def __init__(self, memory: Callable[[], ExperienceMemory]) -> None:
        self._memory = memory

    async def __call__(self, session: Session, message: str) -> str | None:
        return await _matched_section(self._memory(), session, message)


async def _matched_section(memory: ExperienceMemory, session: Session, message: str) -> str | None:
    """One warning line per matching experience (or None), recorded as an event of this run."""
    from nini.agent.runner import CURRENT_TURN

    if not memory.settings.experience.enabled:
        return None
    stage = await _stage(session, None)
    datasets = await session.store.call(session.store.list_datasets, session.id)
    in_play = "\n".join(f"{row['name']}: {', '.join((row.get('columns') or [])[:40])}" for row in datasets)
    matches = await asyncio.to_thread(memory.match, message, stage, in_play)
    if not matches:
        return None
    turn = CURRENT_TURN.get()
    data = {"stage": stage, "matches": [match.to_dict() for match in matches]}
    await session.store.call(
        session.events.publish, session.id, "experience_matched", data, turn_id=turn.turn_id if turn else None
    )
    return prompt_section(matches, memory.language)


class ExperienceCaptureHook:
    """After a normal end: candidates from what the user said in this run, kept pending for ``nini remember``."""

    __name__ = "experience_capture"

    def __init__(self, memory: Callable[[], ExperienceMemory], router: Callable[[], ModelRouter]) -> None:
        self._memory, self._router = memory, router

    async def __call__(self, context: StopContext) -> str | None:
        session = context.session
        memory = self._memory()
        if not memory.settings.experience.enabled:
            return None
        router = self._router()  # the runtime's current one: a reload of the models may have replaced it
        try:
            router.chain("fast")
        except NiniError:
            return None  # no model: only what the user states with `nini remember --add` is captured
        turn_messages = await session.store.call(_this_turn, session, context.result.turn_id)
        datasets = [row["name"] for row in await session.store.call(session.store.list_datasets, session.id)]
        stage = await _stage(session, context.result.turn_id)
        owner = await session.store.call(lambda: session.owner)  # kept pending for the session's owner only
        try:
            result = await memory.capture_conversation(
                router, turn_messages, session_id=session.id, stage=stage, datasets=datasets, owner=owner
            )
        except (
            NiniError
        ) as exc:  # the model failed (or the pending file could not be written): nothing kept, said in the log
            log.warning("experience capture skipped: %s: %s", exc.code, exc.message)
            return None
        if result.kept or result.dropped:
            data = {"stage": stage, "kept": [c.title for c in result.kept], "dropped": result.dropped}
            await session.store.call(
                session.events.publish, session.id, "experience_captured", data, turn_id=context.result.turn_id
            )
        return result.line(memory.language)


def _this_turn(session: Session, turn_id: str) -> list[dict[str, Any]]:
    """This turn's user message, after the last answer of the turn before it (what a correction
    reacts to): two indexed reads, not the session's history. Blocking: the store's thread."""
    mine = session.store.turn_messages(session.id, turn_id)
    first = mine[0]["id"] if mine else None
    answers = session.store.last_messages(session.id, "assistant", ANSWER_LOOKBACK, before_id=first)
    before = [m for m in answers if m.get("content")][-1:]
    users = [m for m in mine if m.get("role") == "user"]
    return [{"role": m["role"], "content": m["content"]} for m in [*before, *users]]


async def _stage(session: Session, turn_id: str | None) -> str:
    """The client's stage if it gave one; else report for a run that wrote a report, review for a run
    in a session that already had one, analysis otherwise."""
    if session.stage:
        return session.stage
    reports = await session.store.call(session.store.list_events, session.id, 0, ["report_ready"])
    if turn_id is not None and any(e.get("turn_id") == turn_id for e in reports):
        return "report"
    return "review" if any(e.get("turn_id") != turn_id for e in reports) else "analysis"


ANSWER_LOOKBACK = 20  # assistant messages read back for the last answer (those calling tools have no text)

JUDGE_PROMPT = """Two experiences of a data-analysis team. Is the NEW one the same judgement as the OLD one \
(merge them into one), a different decision for the same situation that replaces it (supersede), or about \
something else (keep both)? When unsure, keep. Answer with JSON only: \
{"action": "merge|supersede|keep", "reason": "<short>"}."""


def model_judge(settings: Settings) -> Judge | None:
    """The curator's judge through the model for purpose ``fast`` (None without a model): called from a
    worker thread or the CLI, so each question gets its own event loop and router."""
    from nini.agent.llm import ModelRouter

    if not settings.llm.providers:
        return None

    def judge(candidate: Candidate, row: IndexRow) -> tuple[str, str] | None:
        new = (
            f"NEW: {candidate.title}. When: {candidate.trigger}. Decision: {candidate.decision}. "
            f"Signal: {candidate.signal}."
        )
        old = f"OLD: {row.title}. When: {row.trigger}. Signal: {row.surface_signal}."

        async def ask() -> str:
            router = ModelRouter.from_settings(settings)
            try:
                messages = [{"role": "system", "content": JUDGE_PROMPT}, {"role": "user", "content": f"{old}\n{new}"}]
                return (await router.complete("fast", messages, temperature=0, max_tokens=120, timeout_s=30)).text or ""
            finally:
                await router.aclose()

        try:
            answer = json.loads(re.sub(r"^```(?:json)?\s*|\s*```$", "", asyncio.run(ask()).strip()))
        except Exception as exc:  # no answer, or not the JSON asked for: the rules stand
            log.info("curator judge gave no usable answer (%s); the similarity rules decide", type(exc).__name__)
            return None
        action = answer.get("action") if isinstance(answer, dict) else None
        return (action, str(answer.get("reason", ""))[:200]) if action in ("merge", "supersede", "keep") else None

    return judge
