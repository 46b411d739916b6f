"""Turning one recorded run into a skill: read the run, read the meta-skills, run task:skill:enhance.

What the user gets is one line, always one of the spec's: ``[Skill] Created: <name>``,
``[Skill] Enhanced: <name>``, ``[Skill] No enhancement needed``, or ``Enhancement failed: ...``.
The sub-agent is asked to answer with such a line; its answer is checked against the record (a
skill it names must have been saved, by this enhancement) and whether the skill existed before
decides between Created and Enhanced. An answer that fits no form gets one retry, then a fixed
fallback. Everything the enhancement does goes through ``invoke`` under a turn of its own, so the
run it learns from keeps its own record.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nini.agent.runner import CURRENT_TURN, Turn, new_turn_id
from nini.skills.invoke import invoke
from nini.skills.meta import META_SKILLS

if TYPE_CHECKING:
    from nini.session import Session

FALLBACK_MESSAGE = "[Skill] Enhancement ended without a clear result; `nini skills list` shows the skills"
MAX_ERROR_CHARS = 200
ELISION = "\n[... the middle of the record is left out ...]\n"
_ANSWER = re.compile(r"\[Skill\]\s*(?:(Created|Enhanced):\s*`?([a-z0-9][a-z0-9-]*)`?|(No enhancement needed))")
TASK_PROMPT = """Below is the record of an analysis run that went well, and the two meta-skills that say how to
write and improve skills. Decide whether the run holds a reusable procedure. If it does, either
create a new Markdown skill or improve the existing user skill that covers it (search_skills finds
them; call a skill by its name to read it), and save the whole SKILL.md with save_skill. Then answer
with exactly one line and nothing else:
[Skill] Created: <name>
[Skill] Enhanced: <name>
[Skill] No enhancement needed

## skill-creator
{creator}

## skill-enhance
{enhance}

## The run
{record}
"""
RETRY_REMINDER = (
    "\n\nYour previous answer did not follow the required form. Answer with exactly one of the three "
    "lines, naming the skill you saved, if any."
)


@dataclass(frozen=True)
class EnhanceOutcome:
    message: str
    status: str  # created, enhanced, none, fallback, failed
    skill: str | None = None


class _Failure(Exception):
    """Ends the enhancement with ``Enhancement failed: <message>``."""


async def enhance_from_run(session: Session, run_turn_id: str) -> EnhanceOutcome:
    """Create or improve a skill from turn ``run_turn_id`` of ``session``; never raises."""
    settings = session.settings.skill_enhance
    turn_id = new_turn_id()  # the enhancement's own calls do not join the run's record
    token = CURRENT_TURN.set(Turn(turn_id))
    try:
        try:
            record = await session.store.call(compact_record, session, run_turn_id, settings.max_enhance_context_chars)
        except Exception as exc:
            raise _Failure(f"failed to read session - {_short(exc)}") from None
        creator, enhance = await _meta_skills(session, turn_id)
        prompt = TASK_PROMPT.format(creator=creator, enhance=enhance, record=record)
        timeout = settings.sub_agent_timeout_ms / 1000
        existing = _user_skills(session)
        for attempt in range(2):
            answer = await _run_task(session, turn_id, prompt + (RETRY_REMINDER if attempt else ""), timeout)
            saved = await session.store.call(_saved_skills, session, turn_id)
            outcome = _outcome(answer, saved, existing)
            if outcome is not None:
                if outcome.skill is not None:
                    await asyncio.to_thread(session.registry.write_snapshot)
                return outcome
        return EnhanceOutcome(FALLBACK_MESSAGE, "fallback")
    except _Failure as failure:
        return EnhanceOutcome(f"Enhancement failed: {_bounded(str(failure))}", "failed")
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # anything else: one bounded line, no stack trace
        return EnhanceOutcome(f"Enhancement failed: {_short(exc)}", "failed")
    finally:
        CURRENT_TURN.reset(token)


async def _meta_skills(session: Session, turn_id: str) -> tuple[str, str]:
    """The instructions of skill-creator and skill-enhance, read through invoke (read before use)."""
    texts = []
    for name in META_SKILLS:
        result = await invoke(session, name, {}, turn_id=turn_id)
        body = (result.result or {}).get("instructions") if result.success and isinstance(result.result, dict) else None
        if not body:
            raise _Failure("meta-skills not found")
        texts.append(body.strip())
    return texts[0], texts[1]


async def _run_task(session: Session, turn_id: str, prompt: str, timeout_s: float) -> str:
    try:
        result = await asyncio.wait_for(
            invoke(session, "task:skill:enhance", {"prompt": prompt}, turn_id=turn_id), timeout_s
        )
    except TimeoutError:
        raise _Failure("execution timeout") from None
    if not result.success:
        raise _Failure((result.error or {}).get("message") or "the enhancing sub-agent failed")
    return str((result.result or {}).get("summary") or "")


def _outcome(answer: str, saved: list[str], existing: set[str]) -> EnhanceOutcome | None:
    """The message for the sub-agent's answer, when it fits a form and the record agrees; else None."""
    match = _ANSWER.search(answer or "")
    if match is None:
        return None
    if match.group(3):
        return EnhanceOutcome("[Skill] No enhancement needed", "none") if not saved else None
    name = match.group(2)
    if name not in saved:
        return None  # it says it saved a skill it did not save
    if name in existing:
        return EnhanceOutcome(f"[Skill] Enhanced: {name}", "enhanced", name)
    return EnhanceOutcome(f"[Skill] Created: {name}", "created", name)


def _saved_skills(session: Session, turn_id: str) -> list[str]:
    calls = session.store.list_tool_calls(session.id, turn_id=turn_id)
    return [
        c["result"]["name"]
        for c in calls
        if c["tool_name"] == "save_skill" and c["status"] == "succeeded" and isinstance(c.get("result"), dict)
    ]


def _user_skills(session: Session) -> set[str]:
    """The skills already in the folder the enhancement saves into: a save there "Enhanced" one."""
    from nini.skills.builtin.skill_tools import skills_folder

    folder = skills_folder(session.registry, session.settings).path
    return {p.parent.name for p in folder.glob("*/SKILL.md")} if folder.is_dir() else set()


def compact_record(session: Session, turn_id: str, max_chars: int) -> str:
    """The run as text for the sub-agent: the request, each step (code cut short), the answer;
    at most ``max_chars`` (its start and its end kept). Blocking: the store's thread."""
    store = session.store
    limit = max_chars if isinstance(max_chars, int) and max_chars >= 1 else 50_000
    messages = store.turn_messages(session.id, turn_id)
    calls = store.list_tool_calls(session.id, turn_id=turn_id)
    executions = {e["tool_call_id"]: e for e in store.executions_of_calls([call["id"] for call in calls])}
    lines = []
    for message in messages:
        if message["role"] == "user":
            lines.append(f"User request: {message['content']}")
    for number, call in enumerate(calls, 1):
        line = f"{number}. {call['tool_name']} ({call['status']})"
        arguments = {k: v for k, v in (call.get("arguments") or {}).items() if k != "code"}
        if arguments:
            line += f" {_clip(str(arguments), 300)}"
        execution = executions.get(call["id"])
        if execution is not None:
            line += f"\n```{execution['language']}\n{_clip(execution['code'], 2000)}\n```"
            if execution.get("error"):
                line += f"\nerror: {_clip(str(execution['error'].get('message')), 300)}"
        elif call.get("result_summary"):
            line += f"\n→ {_clip(call['result_summary'], 300)}"
        lines.append(line)
    answers = [m["content"] for m in messages if m["role"] == "assistant" and m.get("content")]
    if answers:
        lines.append(f"Answer: {answers[-1]}")
    text = "\n\n".join(lines)
    if len(text) <= limit:
        return text
    room = limit - len(ELISION)
    if room < 2:
        return text[:limit]
    head = int(room * 0.6)
    return text[:head] + ELISION + text[-(room - head) :]


def _clip(text: Any, limit: int) -> str:
    text = str(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _short(exc: BaseException) -> str:
    message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    return _bounded(f"{type(exc).__name__}: {message}" if not getattr(exc, "message", None) else message)


def _bounded(text: str) -> str:
    single = " ".join(text.split())
    return single if len(single) <= MAX_ERROR_CHARS else single[: MAX_ERROR_CHARS - 1] + "…"
