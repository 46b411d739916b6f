"""task:* commands: a sub-agent with its own context and tool allow-list, summarised for the parent.

A task runs the same loop as a turn (``AgentRunner.loop``) but keeps its conversation in memory:
only its tool calls are recorded (through ``invoke``, like every call). Whatever it ends with,
success or failure, goes through ``summarize_task_result`` and only that one sentence reaches
the parent, as this skill's result; the raw answer is never stored. A task cannot start a task:
no task offers task:* tools, and a task:* call made inside a task is refused.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nini.agent.prompts import build_system_prompt
from nini.agent.runner import CURRENT_TURN, Conversation, LoopEnd, Turn, new_turn_id
from nini.errors import ErrorCode, NiniError, error_dict
from nini.skills.function import FunctionSkill, skill
from nini.skills.output import ToolOutput
from nini.skills.services import services_of
from nini.skills.toolset import build_toolset, is_task

if TYPE_CHECKING:
    from pathlib import Path

    from nini.config import Settings
    from nini.session import Session
    from nini.skills.registry import SkillRegistry

_SUB_AGENT = """You are a sub-agent of nini, a data-analysis agent, working on one task for the main agent.
You do not see its conversation: the task below is all you know. Work with your tools, then answer
with the result. The main agent only gets a one-sentence summary of your answer, so put the most
important finding, with its numbers, in your first sentence."""


@dataclass(frozen=True)
class TaskKind:
    command: str
    description: str
    instructions: str
    allow: Callable[[dict[str, Any]], bool]  # which skill records the sub-agent may use
    # An answer that is exactly this one-line form is already its own summary: no model rewords it
    # (it still goes through summarize_task_result, which keeps its first sentence).
    verdict: re.Pattern[str] | None = None


def _read_only(record: dict[str, Any]) -> bool:
    return record["type"] == "markdown" or bool(record.get("metadata", {}).get("read_only"))


SKILL_VERDICT = re.compile(r"\[Skill\] (?:(?:Created|Enhanced): [a-z0-9][a-z0-9-]*|No enhancement needed)")

TASK_KINDS = {
    kind.command: kind
    for kind in (
        TaskKind(
            "task:general",
            "Hand a self-contained piece of work to a sub-agent with every tool except task:*; you "
            "get one sentence back.",
            _SUB_AGENT,
            lambda record: not is_task(record["name"]),
        ),
        TaskKind(
            "task:explore",
            "Read-only investigation by a sub-agent (datasets, files, skills; it can change "
            "nothing); one sentence back.",
            _SUB_AGENT
            + "\nYou are read-only: look at datasets, files and skills; you cannot run code or change anything.",
            _read_only,
        ),
        TaskKind(
            "task:skill:search",
            "A sub-agent finds the skills that fit a need; you get the best match in one sentence.",
            _SUB_AGENT + "\nFind the skills that fit the need (search_skills; call a Markdown skill to read it). "
            "Start your answer with the best skill's name and why it fits.",
            lambda record: record["name"] == "search_skills" or record["type"] == "markdown",
        ),
        TaskKind(
            "task:skill:enhance",
            "A sub-agent creates or improves a Markdown skill from what this session learned and saves it; "
            "one line back.",
            _SUB_AGENT + "\nCreate or improve a Markdown skill: to improve one, call it first to read its "
            "instructions; then save the whole SKILL.md (frontmatter with the name and a description, then the "
            "body) with save_skill. Answer with exactly one line: `[Skill] Created: <name>`, "
            "`[Skill] Enhanced: <name>` or `[Skill] No enhancement needed`.",
            lambda record: _read_only(record) or record["name"] in ("search_skills", "save_skill"),
            SKILL_VERDICT,
        ),
    )
}


async def run_task(session: Session, command: str, prompt: str) -> ToolOutput:
    """Run task ``command`` for the current turn and return its summary as the tool's output."""
    kind = TASK_KINDS[command]
    turn = CURRENT_TURN.get()
    if turn is not None and turn.in_task:
        raise NiniError(
            ErrorCode.INVALID_ARGUMENT, f"a task cannot start another task ({command} was called inside a task)"
        )
    if not prompt.strip():
        raise NiniError(ErrorCode.INVALID_ARGUMENT, "the task's prompt is empty")
    runner, settings = services_of(session).agent, session.settings.agent
    turn_id = turn.turn_id if turn is not None else new_turn_id()
    tools = build_toolset(session.registry, kind.allow)
    system = await build_system_prompt(session, prompt, (), base=kind.instructions)
    conversation = Conversation(session, turn_id, system, [{"role": "user", "content": prompt}], tools, persist=False)
    token = CURRENT_TURN.set(Turn(turn_id, in_task=True))
    try:
        end = await runner.loop(conversation, max_iterations=settings.task_max_iterations)
    except NiniError as exc:
        end = LoopEnd(answer="", ended_by="error", iterations=0, error=exc.to_dict())
    finally:
        CURRENT_TURN.reset(token)
    from nini.agent.summary import summarize_task_result  # tiktoken is loaded when a task ends, not at import

    failed = end.ended_by != "finished"
    raw = _failure_text(end) if failed else end.answer
    verdict = not failed and kind.verdict is not None and kind.verdict.fullmatch(raw.strip()) is not None
    llm = None if verdict else runner.router
    summary = await summarize_task_result(command, raw, is_error=failed, llm=llm, settings=settings)
    data = {
        "command": command,
        "success": not failed,
        "ended_by": end.ended_by,
        "summary": summary.text,
        "raw_tokens": summary.raw_tokens,
        "summary_tokens": summary.summary_tokens,
        "truncated": summary.truncated,
        "fallback_used": summary.fallback_used,
    }
    await session.store.call(session.events.publish, session.id, "task_summary", data, turn_id=turn_id)
    result = {"command": command, "summary": summary.text, "ended_by": end.ended_by}
    error = None if not failed else error_dict((end.error or {}).get("code", ErrorCode.INTERNAL), summary.text)
    return ToolOutput(result=result, success=not failed, error=error, summary=summary.text)


def _failure_text(end: LoopEnd) -> str:
    """What a failed sub-agent has to say: its last words, then why it stopped."""
    reason = (end.error or {}).get("message") or end.ended_by
    return f"{end.answer.strip()}\n[stderr] task stopped ({end.ended_by}): {reason}".strip()


def _task_skill(kind: TaskKind) -> FunctionSkill:
    async def task(session: Session, prompt: str) -> ToolOutput:
        return await run_task(session, kind.command, prompt)

    task.__doc__ = (
        f"{kind.description}\n\nArgs:\n    prompt: The task, with everything the sub-agent needs to know "
        "(it does not see this conversation)."
    )
    task.__name__ = task.__qualname__ = "task_" + kind.command.split(":", 1)[1].replace(":", "_")
    return skill(kind.command, category="other", task=True)(task)


TASK_SKILLS: list[FunctionSkill] = [_task_skill(kind) for kind in TASK_KINDS.values()]


def skill_registry(settings: Settings, project_dir: Path | None) -> SkillRegistry:
    """The skills of this installation: nini's built-ins and these ``task:*`` skills. Skills sit
    below the agent, so ``nini.skills`` alone has no tasks: the runtime builds its registry here
    (views and refreshes keep what was registered), and so does ``nini skills``, which has no runtime."""
    from nini.skills.builtin import builtin_skills
    from nini.skills.registry import SkillRegistry

    return SkillRegistry(settings, project_dir, function_skills=[*builtin_skills(settings), *TASK_SKILLS])
