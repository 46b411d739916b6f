"""``AgentRunner``: one run is one turn of a session: the model thinks, calls tools, answers.

A run stores the user's message, builds the system prompt (``prompts``) and the context from the
store (``context``), then loops: call the model (purpose ``chat``) with the allowed tools, store
its message, run each tool call through ``nini.skills.invoke`` (the one recorded path), store the
results, until the model answers without calling a tool. It ends unfinished at
``agent.max_iterations`` model calls, after ``agent.max_consecutive_failures`` failed tool calls
in a row, on cancellation, or when no model answers. Only a normal end runs the stop hooks, and
a hook that fails never changes the answer. Every step is an event on the session's bus.

The runner is given what it works with: the router (a getter: a reload of the models replaces
it), the prompt sections and the stop hooks, and what to do before each turn. The runtime, the
composition root, builds these from memory and the agent's own parts (``Runtime.new_agent``);
the agent knows neither the runtime nor where its memory lives.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from contextvars import ContextVar
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from nini.agent.context import ContextReport, build_context, cap_tool_text, message_tokens
from nini.agent.llm import Completion, ToolCall
from nini.agent.prompts import PromptContributor, build_system_prompt
from nini.agent.usage import CURRENT_METER, RunMeter, record_step
from nini.errors import ErrorCode, NiniError, error_dict
from nini.limits import Limits, recordable_json
from nini.skills.invoke import invoke
from nini.skills.toolset import ToolSet, build_toolset
from nini.tokens import count_repeated

if TYPE_CHECKING:
    from nini.agent.llm import ModelRouter
    from nini.session import Session
    from nini.skills.output import ToolResult

log = logging.getLogger("nini.agent.runner")

ENDINGS = ("finished", "max_iterations", "tool_failures", "canceled", "error")
DELTA_FLUSH_CHARS = 80  # streamed text is published in pieces of about this size (or at a newline)
_NOT_RUN = json.dumps(
    {"success": False, "error": error_dict(ErrorCode.CANCELED, "not run: the run stopped after repeated failures")},
    separators=(",", ":"),
)


@dataclass(kw_only=True)
class RunResult:
    turn_id: str
    answer: str
    completed_normally: bool
    ended_by: str  # one of ENDINGS
    iterations: int
    error: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)  # what stop hooks had to say, after the answer
    # what the turn took (``nini.agent.usage``): wall time, tool calls, the models' tokens and their
    # cost ({currency: amount}; None where a provider's price is not configured)
    duration_ms: int | None = None
    steps: int = 0
    usage: dict[str, int] = field(default_factory=dict)
    cost: dict[str, float] | None = None
    # how full the model's context was (``nini.agent.context.ContextReport.to_dict``): None when no
    # model was called
    context: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def measured(self, meter: RunMeter, started: float) -> RunResult:
        """This result with what ``meter`` counted since ``started`` (``time.monotonic()``)."""
        self.duration_ms = round((time.monotonic() - started) * 1000)
        self.steps, self.usage, self.cost = meter.steps, meter.usage(), meter.priced()
        return self


@dataclass
class StopContext:
    """What a stop hook gets after a normal end."""

    session: Session
    user_message: str
    result: RunResult


# A hook may return a note (str) for the user; it is published as ``stop_hook_note`` after
# ``done`` and kept in ``RunResult.notes``, never mixed into the answer.
StopHook = Callable[[StopContext], "Awaitable[str | None] | str | None"]


@dataclass(frozen=True)
class Turn:
    """The run a coroutine belongs to (a ContextVar, so skills called inside a run can see it)."""

    turn_id: str
    in_task: bool = False


CURRENT_TURN: ContextVar[Turn | None] = ContextVar("nini_current_turn", default=None)


@dataclass(kw_only=True)
class LoopEnd:
    answer: str
    ended_by: str
    iterations: int
    error: dict[str, Any] | None = None


@dataclass
class Conversation:
    """The messages of one loop; ``persist`` stores them in the session (sub-agents keep theirs in memory)."""

    session: Session
    turn_id: str
    system: str
    messages: list[dict[str, Any]]
    tools: ToolSet
    persist: bool  # a persisted conversation (the turn's, not a sub-agent's) also streams its text
    report: ContextReport | None = None  # the turn's: the prompt's size is counted as it is sent
    _counted: int = 0  # messages already in ``_tokens``
    _tokens: int = 0

    def reports(self, report: ContextReport, tokens: int) -> None:
        """Count the prompt into ``report`` as it is sent; the messages so far hold ``tokens``
        (counted as the context was read): only later ones are counted."""
        self.report = report
        self._tokens = _system_tokens(self.system) + tokens
        self._counted = len(self.messages)

    def prompt_tokens(self) -> int:
        """The tokens of the prompt as sent now (system and messages), counting only what is new."""
        for message in self.messages[self._counted :]:
            self._tokens += message_tokens(message)
        self._counted = len(self.messages)
        return self._tokens


class AgentRunner:
    """Runs agent turns for the sessions of one Runtime; at most one run per session at a time."""

    def __init__(
        self,
        router: Callable[[], ModelRouter],
        *,
        stop_hooks: Sequence[StopHook] = (),
        prompt_contributors: Sequence[PromptContributor] = (),
        before_turn: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self._router = router
        # run in order after a normal end (after ``done``); a failing one is logged and skipped
        self.stop_hooks: list[StopHook] = list(stop_hooks)
        # sections of each turn's system prompt after the skills, in order; a failing one is left out
        self.prompt_contributors: list[PromptContributor] = list(prompt_contributors)
        self._before_turn = before_turn  # awaited as each turn starts, before its prompt is built
        self._running: dict[str, asyncio.Task[Any]] = {}
        self._cancel_requested: set[str] = set()

    @property
    def router(self) -> ModelRouter:
        """The router of the next model call (asked each time: a reload of the models replaces it)."""
        return self._router()

    # -- starting, cancelling ----------------------------------------------------------------------

    def start(
        self, session: Session, message: str, *, turn_id: str | None = None
    ) -> tuple[str, asyncio.Task[RunResult]]:
        """Start a run in the background (REST); CONFLICT when the session has one going."""
        self._claim(session.id)
        turn_id = turn_id or new_turn_id()
        task = asyncio.get_running_loop().create_task(
            self.run(session, message, turn_id=turn_id), name=f"nini-run-{turn_id}"
        )
        self._running[session.id] = task
        return turn_id, task

    def cancel(self, session_id: str) -> bool:
        """Cancel the session's run; it ends with ``ended_by="canceled"``. False when none is going."""
        task = self._running.get(session_id)
        if task is None or task.done():
            return False
        self._cancel_requested.add(session_id)
        task.cancel()
        return True

    def is_running(self, session_id: str) -> bool:
        task = self._running.get(session_id)
        return task is not None and not task.done()

    async def aclose(self) -> None:
        """Cancel every run and wait for them to record their end."""
        tasks = [t for t in self._running.values() if not t.done()]
        for session_id in list(self._running):
            self.cancel(session_id)
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)

    # -- a run ---------------------------------------------------------------------------------------

    async def run(self, session: Session, message: str, *, turn_id: str | None = None) -> RunResult:
        """Run one turn to its end and return how it ended (never raises for model or tool failures)."""
        if not isinstance(message, str) or not message.strip():
            raise NiniError(ErrorCode.INVALID_ARGUMENT, "the message is empty")
        current = asyncio.current_task()
        if self._running.get(session.id) is not current:
            self._claim(session.id)
            self._running[session.id] = current  # type: ignore[assignment]
        turn_id = turn_id or new_turn_id()
        token = CURRENT_TURN.set(Turn(turn_id))
        started, meter = time.monotonic(), RunMeter()
        meter_token = CURRENT_METER.set(meter)  # the turn's model calls and steps count here
        try:
            result = (await self._run(session, message, turn_id)).measured(meter, started)
        except asyncio.CancelledError:
            result = RunResult(
                turn_id=turn_id,
                answer="",
                completed_normally=False,
                ended_by="canceled",
                iterations=0,
                error=error_dict(ErrorCode.CANCELED, "the run was cancelled"),
            )
            await self._publish(session, "done", result.measured(meter, started).to_dict(), turn_id)
            if session.id not in self._cancel_requested:
                raise  # cancelled from outside (Ctrl-C, shutdown): keep the cancellation going
            current.uncancel()  # type: ignore[union-attr]
            return result
        finally:
            CURRENT_TURN.reset(token)
            CURRENT_METER.reset(meter_token)
            self._cancel_requested.discard(session.id)
            if self._running.get(session.id) is current:
                del self._running[session.id]
        await self._publish(session, "done", result.to_dict(), turn_id)
        if result.completed_normally:  # after done: the answer is out before any hook works
            for hook_name, note in await self._run_stop_hooks(StopContext(session, message, result)):
                result.notes.append(note)
                await self._publish(session, "stop_hook_note", {"hook": hook_name, "text": note}, turn_id)
        return result

    async def _run(self, session: Session, message: str, turn_id: str) -> RunResult:
        store = session.store
        await store.call(store.add_message, session.id, "user", message, turn_id=turn_id)
        await self._publish(session, "user_message", {"text": message}, turn_id)
        conversation: Conversation | None = None
        try:
            if self._before_turn is not None:  # the runtime's: the configured MCP servers' tools join the skills
                await self._before_turn()
            system = await build_system_prompt(session, message, self.prompt_contributors)
            context = await build_context(session, self._summarizer())
            if context.summary:
                system = f"{system}\n\n{context.summary}"
            if context.folded:  # the sidebar shows the summary as a collapsed note atop the conversation
                summary = {"text": context.summary, "summarized_turns": context.report.summarized_turns}
                await self._publish(session, "context_summary", summary, turn_id)
            tools = build_toolset(session.registry, lambda record: True)
            conversation = Conversation(session, turn_id, system, context.messages, tools, persist=True)
            conversation.reports(context.report, context.tokens)  # the context's messages are counted already
            end = await self.loop(conversation)
        except NiniError as exc:
            end = LoopEnd(answer="", ended_by="error", iterations=0, error=exc.to_dict())
        if end.error is not None:
            await self._publish(session, "error", end.error, turn_id)
        return RunResult(
            turn_id=turn_id,
            answer=end.answer,
            completed_normally=end.ended_by == "finished",
            ended_by=end.ended_by,
            iterations=end.iterations,
            error=end.error,
            context=conversation.report.to_dict() if conversation and conversation.report else None,
        )

    def _summarizer(self) -> ModelRouter | None:
        """The router that writes the summary's narrative; None when none is configured (the ledger alone)."""
        try:
            return self.router
        except NiniError:
            return None

    async def loop(self, conversation: Conversation, *, max_iterations: int | None = None) -> LoopEnd:
        """Model, tools, model, ... until an answer or a limit; NiniError from the model propagates."""
        settings = conversation.session.settings.agent
        limit = max_iterations or settings.max_iterations
        failures, answer = 0, ""
        for iteration in range(1, limit + 1):
            completion = await self._think(conversation)
            answer = completion.text
            await self._add_assistant(conversation, completion)
            if not completion.tool_calls:
                return LoopEnd(answer=answer, ended_by="finished", iterations=iteration)
            for index, call in enumerate(completion.tool_calls):
                error = await self._act(conversation, call)
                failures = 0 if error is None else failures + 1
                if error is not None and failures >= settings.max_consecutive_failures:
                    for skipped in completion.tool_calls[index + 1 :]:
                        await self._add_tool_message(conversation, skipped, None, _NOT_RUN)
                    message = f"{failures} tool calls failed in a row; the last: {error.get('message', '')}"[:500]
                    return LoopEnd(
                        answer=answer,
                        ended_by="tool_failures",
                        iterations=iteration,
                        error=error_dict(error.get("code", ErrorCode.INTERNAL), message),
                    )
        return LoopEnd(
            answer=answer,
            ended_by="max_iterations",
            iterations=limit,
            error=error_dict(ErrorCode.TIMEOUT, f"no answer after {limit} model calls"),
        )

    # -- steps ---------------------------------------------------------------------------------------

    async def _think(self, conversation: Conversation) -> Completion:
        sink = _DeltaSink(self, conversation) if conversation.persist else None
        if conversation.report is not None:
            conversation.report.tokens = conversation.prompt_tokens()
        completion = await self.router.complete(
            "chat",
            [{"role": "system", "content": conversation.system}, *conversation.messages],
            tools=conversation.tools.schemas or None,
            on_text=sink,
        )
        if sink is not None:
            await sink.flush()
        if conversation.report is not None:
            conversation.report.window = self.router.context_window(completion.provider)
        return completion

    async def _add_assistant(self, conversation: Conversation, completion: Completion) -> None:
        calls = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in completion.tool_calls]
        message: dict[str, Any] = {"role": "assistant", "content": completion.text or None}
        if calls:
            message["tool_calls"] = [
                {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
                for c in calls
            ]
        conversation.messages.append(message)
        if conversation.persist:
            session, store = conversation.session, conversation.session.store
            limits = Limits.of(session.settings)  # refused code is not kept in the message either
            kept = [{**c, "arguments": recordable_json(c["arguments"], limits)} for c in calls]
            meta = {"tool_calls": kept, "provider": completion.provider, "model": completion.model}
            await store.call(
                store.add_message,
                session.id,
                "assistant",
                completion.text or None,
                turn_id=conversation.turn_id,
                metadata=meta,
            )
            data = {"text": completion.text, "tool_calls": [c["name"] for c in calls], "model": completion.model}
            await self._publish(session, "assistant_message", data, conversation.turn_id)

    async def _act(self, conversation: Conversation, call: ToolCall) -> dict[str, Any] | None:
        """Run one tool call the model made; its error (``{code, message}``), None when it succeeded."""
        skill_name = conversation.tools.skill_name(call.name)
        if skill_name is None:
            offered = ", ".join(sorted(s["function"]["name"] for s in conversation.tools.schemas)) or "none"
            error = error_dict(ErrorCode.NOT_FOUND, f"no tool {call.name!r} in this run; tools: {offered}")
            await self._add_tool_message(conversation, call, None, json.dumps({"success": False, "error": error}))
            return error
        record_step()
        result = await invoke(
            conversation.session, skill_name, _arguments(call.arguments), turn_id=conversation.turn_id
        )
        await self._add_tool_message(conversation, call, result, _full_text(result))
        return None if result.success else (result.error or error_dict(ErrorCode.INTERNAL, "the tool failed"))

    async def _add_tool_message(
        self, conversation: Conversation, call: ToolCall, result: ToolResult | None, text: str
    ) -> None:
        cap = conversation.session.settings.execution.output_cap_chars
        shown = result.text_for_llm(cap) if result is not None else cap_tool_text(text, cap)
        conversation.messages.append({"role": "tool", "tool_call_id": call.id, "content": shown})
        if conversation.persist:
            session, store = conversation.session, conversation.session.store
            meta = {"name": call.name, "call_id": result.tool_call_id if result else None}
            await store.call(
                store.add_message,
                session.id,
                "tool",
                text,
                turn_id=conversation.turn_id,
                tool_call_id=call.id,
                metadata=meta,
            )

    async def _run_stop_hooks(self, context: StopContext) -> list[tuple[str, str]]:
        """Run every hook in order; the (hook name, note) of those that returned a note."""
        notes: list[tuple[str, str]] = []
        for hook in list(self.stop_hooks):
            name = getattr(hook, "__name__", type(hook).__name__)
            try:
                outcome = hook(context)
                if inspect.isawaitable(outcome):
                    outcome = await outcome
            except asyncio.CancelledError:
                raise
            except Exception:  # a hook is an extra: it must not change the run's answer
                log.exception("stop hook %s failed", name)
                continue
            if isinstance(outcome, str) and outcome.strip():
                notes.append((name, outcome.strip()))
        return notes

    async def _publish(self, session: Session, type_: str, data: dict[str, Any], turn_id: str) -> None:
        await session.store.call(session.events.publish, session.id, type_, data, turn_id=turn_id)

    def _claim(self, session_id: str) -> None:
        if self.is_running(session_id):
            raise NiniError(
                ErrorCode.CONFLICT, f"session {session_id} is already running a turn; wait for it or cancel it"
            )


class _DeltaSink:
    """Streams the model's text as ``assistant_delta`` events in pieces, not one event per token."""

    def __init__(self, runner: AgentRunner, conversation: Conversation) -> None:
        self._runner, self._conversation = runner, conversation
        self._buffer: list[str] = []
        self._size = 0

    async def __call__(self, text: str) -> None:
        self._buffer.append(text)
        self._size += len(text)
        if self._size >= DELTA_FLUSH_CHARS or "\n" in text:
            await self.flush()

    async def flush(self) -> None:
        if not self._buffer:
            return
        text, self._buffer, self._size = "".join(self._buffer), [], 0
        conversation = self._conversation
        await self._runner._publish(conversation.session, "assistant_delta", {"text": text}, conversation.turn_id)


def _system_tokens(system: str) -> int:
    """The system message's tokens, as ``message_tokens`` counts a message: the same prompt turn after
    turn is counted once (it holds the session's summary: thousands of tokens)."""
    return count_repeated(json.dumps({"role": "system", "content": system}, ensure_ascii=False))


def new_turn_id() -> str:
    return "t" + uuid.uuid4().hex[:12]


def _arguments(text: str) -> dict[str, Any]:
    """The model's JSON arguments; text that is not a JSON object goes to the skill as-is and fails validation."""
    try:
        value = json.loads(text) if text and text.strip() else {}
    except ValueError:
        return {"(unparsed arguments)": text[:2000]}
    return value if isinstance(value, dict) else {"(arguments)": value}


def _full_text(result: ToolResult) -> str:
    payload = result.result if result.result is not None else {"success": result.success, "error": result.error}
    return json.dumps(payload, ensure_ascii=False, default=str)
