"""``invoke``: the one path every skill call takes (agent, REST, CLI, notebook magics alike).

Order, always: record the tool call with its ``tool_call`` event, validate, run, record the
result in one transaction with the execution, artifacts and datasets of a code skill and the
events that close the call: ``code_execution`` (code skills), the skill's own events
(``ToolOutput.events``), then ``tool_result``; then hand the stored events to live subscribers.
Whatever happens in between (a bad argument, a skill that raises, a cancelled task, a database
that cannot take the end: the store writes it later, see history/pending.py) the call ends with a
recorded result and its ``tool_result``, and is never left running.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
from typing import TYPE_CHECKING, Any

from nini.errors import ErrorCode, NiniError, error_dict
from nini.execution.isolation import notice_of
from nini.fsutil import no_space, out_of_space
from nini.limits import Limits, check_arguments, recordable
from nini.redact import redact_paths
from nini.skills.function import FunctionSkill
from nini.skills.output import ToolOutput, ToolResult
from nini.skills.step_outputs import event_outputs, preview

if TYPE_CHECKING:
    from nini.session import Session

log = logging.getLogger("nini.skills.invoke")
EVENT_CODE_CHARS = 65_536  # a step's code in its tool_call event; a viewer reads longer code from the call's record


async def invoke(
    session: Session, name: str, arguments: dict[str, Any] | None, *, turn_id: str | None = None
) -> ToolResult:
    """Run skill ``name`` for ``session`` and return its recorded result.

    Errors a caller can cause (unknown skill, bad arguments, the skill's own NiniError) come back
    as a failed ``ToolResult`` with a stable code, not as an exception: the model sees them and
    can correct itself. Only cancellation propagates (after its result is recorded). Code or a
    label over its cap (``nini.limits``) is refused before it is run or stored: the call's record
    keeps a line saying how long it was, not the text.
    """
    arguments = arguments if isinstance(arguments, dict) else {"(arguments)": arguments}
    limits = Limits.of(session.settings)
    try:  # code, a label over its cap, or a lone surrogate: refused before it is stored, run or sent anywhere
        check_arguments(arguments, limits)
    except NiniError as exc:
        call_id = await _begin(session, name, recordable(arguments, limits), turn_id)
        return await _finish(
            session, call_id, name, turn_id, ToolOutput(result=None, success=False, error=exc.to_dict())
        )
    call_id = await _begin(session, name, arguments, turn_id)
    try:
        output = await _run(session, name, arguments)
    except asyncio.CancelledError:
        await _finish(session, call_id, name, turn_id, _failure(ErrorCode.CANCELED, "the call was cancelled"))
        raise
    except NiniError as exc:
        output = ToolOutput(result=None, success=False, error=exc.to_dict())
    except Exception as exc:  # a bug in the skill: the user gets one line, the log the traceback
        if out_of_space(exc):  # a full disk the skill did not name: NO_SPACE all the same, never INTERNAL
            output = ToolOutput(result=None, success=False, error=no_space(f"a file of skill {name!r}").to_dict())
        else:
            log.exception("skill %s raised", name)
            output = _failure(ErrorCode.INTERNAL, f"skill {name!r} failed: {type(exc).__name__}: {exc}")
    return await _finish(session, call_id, name, turn_id, output)


async def _begin(session: Session, name: str, arguments: dict[str, Any], turn_id: str | None) -> str:
    """Record the call's start; its id. A cancel that comes while the start is being written does
    not stop the write (``store.call`` runs to its end), so the call is ended CANCELED before the
    cancel goes on: no record is left ``running`` with nothing to end it."""
    start = asyncio.ensure_future(session.store.call(_start, session, name, arguments, turn_id))
    try:
        return await asyncio.shield(start)
    except asyncio.CancelledError:
        with contextlib.suppress(Exception):  # a start that failed left no record to end
            call_id = await start
            await _finish(session, call_id, name, turn_id, _failure(ErrorCode.CANCELED, "the call was cancelled"))
        raise


async def _run(session: Session, name: str, arguments: dict[str, Any]) -> ToolOutput:
    registry = session.registry
    try:
        function_skill = registry.function(name)
    except NiniError:
        record = registry.get_record(name)  # NOT_FOUND when there is no such skill at all
        if not record.enabled:
            raise NiniError(ErrorCode.NOT_FOUND, f"skill {name!r} is disabled", {"name": name}) from None
        return _markdown_definition(session, name)
    if not registry.get_record(name, type="function").enabled:
        raise NiniError(ErrorCode.NOT_FOUND, f"skill {name!r} is disabled", {"name": name})
    return await _call_function(session, function_skill, arguments)


async def _call_function(session: Session, function_skill: FunctionSkill, arguments: dict[str, Any]) -> ToolOutput:
    kwargs = function_skill.validate_arguments(arguments)
    if function_skill.takes_session:
        kwargs["session"] = session
    if inspect.iscoroutinefunction(function_skill.func):
        value = await function_skill.func(**kwargs)
    else:  # a blocking skill must not stall the event loop (other sessions, the server)
        value = await asyncio.to_thread(function_skill.func, **kwargs)
    return value if isinstance(value, ToolOutput) else ToolOutput(result=value)


def _markdown_definition(session: Session, name: str) -> ToolOutput:
    """Using a Markdown skill means reading its definition now (read-before-execute)."""
    definition = session.registry.load_definition(name)
    return ToolOutput(
        result={"name": definition.name, "instructions": definition.body, "content_hash": definition.content_hash},
        summary=f"read {definition.location} ({definition.content_hash[:12]})",
    )


# A call's rows and events are written in two trips to a store thread (``store.call``), at its
# start and at its end, in the order the module docstring gives: each trip costs a thread
# hand-over and a wake-up of the event loop (~0.3 ms on a loaded machine; one per row was five).


def event_arguments(arguments: dict[str, Any]) -> dict[str, Any]:
    """The ``tool_call`` event's ``arguments``: the call's, with code longer than ``EVENT_CODE_CHARS``
    cut to its start and ``code_chars`` saying how long it is (the tool call's record keeps it whole,
    ``GET /nini/api/sessions/ID/tool-calls/CALL``): every watcher gets each event, and the events
    table keeps it too, so a long code is stored and sent once, not three times."""
    code = arguments.get("code")
    if not isinstance(code, str) or len(code) <= EVENT_CODE_CHARS:
        return {"arguments": arguments}
    return {"arguments": {**arguments, "code": code[:EVENT_CODE_CHARS]}, "code_chars": len(code)}


def _start(session: Session, name: str, arguments: dict[str, Any], turn_id: str | None) -> str:
    """Record the tool call with its ``tool_call`` event and publish it (on a store thread); the call's id."""
    where = _where(session, name)  # a code step's badge says where it runs from its start
    data = {"name": name, **event_arguments(arguments), **({"isolation": where} if where else {})}
    call = session.store.start_tool_call(session.id, name, arguments, turn_id=turn_id, events=[("tool_call", data)])
    session.events.announce(call["events"])
    return call["id"]


async def _finish(session: Session, call_id: str, name: str, turn_id: str | None, output: ToolOutput) -> ToolResult:
    _redact(session, output)
    execution = dict(output.execution, tool_call_id=call_id) if output.execution else None
    execution_id = await session.store.call(_end, session, call_id, name, turn_id, output, execution)
    return ToolResult(
        tool_call_id=call_id,
        name=name,
        success=output.success,
        result=output.result,
        error=output.error,
        execution_id=execution_id,
        full_text_at=output.full_text_at,
        isolation=output.isolation,
        gateway=output.gateway,
    )


def _end(
    session: Session, call_id: str, name: str, turn_id: str | None, output: ToolOutput, execution: dict[str, Any] | None
) -> str | None:
    """Record the result with ``code_execution``, the skill's events and ``tool_result`` (one
    transaction), remove the files it made obsolete, publish the events (on a store thread); the
    execution's id."""

    def closing(call: dict[str, Any]) -> list[tuple[str, Any]]:
        """The events that close the call, as recorded (a pure function: it may run twice)."""
        if call["unrecorded"]:  # the database could not take the record: the call ends failed, with only this
            return [
                (
                    "tool_result",
                    {"name": name, "success": False, "error": call["unrecorded"], "duration_ms": call["duration_ms"]},
                )
            ]
        events: list[tuple[str, Any]] = []
        # code_execution comes before tool_result: a viewer can treat tool_result as "this call is over"
        if execution is not None:
            events.append(("code_execution", _execution_event(execution, (call["execution"] or {}).get("id"), output)))
        events += output.events
        events.append(
            (
                "tool_result",
                {"name": name, "success": output.success, "error": output.error, "duration_ms": call["duration_ms"]},
            )
        )
        return events

    try:
        finished = session.store.finish_tool_call(
            call_id,
            status="succeeded" if output.success else "failed",
            error_code=(output.error or {}).get("code") if not output.success else None,
            result=output.result if output.result is not None else {"error": output.error},
            result_summary=output.summary or _summary(output),
            execution=execution,
            artifacts=output.artifacts,
            datasets=output.datasets,
            events=closing,
        )
    except BaseException:
        _remove_unrecorded(session, output)  # no record will name what this run wrote
        raise
    _remove_superseded(session, finished.get("superseded_files") or [])
    if output.pending_file:
        _remove_quietly(session, output.pending_file)  # its charts are recorded now
    session.events.announce(finished["events"])
    return (finished.get("execution") or {}).get("id")


def _where(session: Session, name: str) -> str | None:
    """Where skill ``name``'s code is to run; None when unknown yet (a misconfigured gateway is the
    run's error to report, not the tool call's)."""
    try:
        return session.code_isolation(name)
    except NiniError:
        return None


def _remove_superseded(session: Session, files: list[str]) -> None:
    """Remove the dataset versions this call's record replaced: readers open the file the record
    names, so no one opens these again (a read already under way keeps its open file)."""
    for relative in files:
        if relative.startswith("datasets/"):
            _remove_quietly(session, relative)


def _remove_unrecorded(session: Session, output: ToolOutput) -> None:
    """The files of a run whose record could not be written: its charts and its new dataset versions."""
    for relative in [a.get("path") for a in output.artifacts] + [d.get("path") for d in output.datasets]:
        if isinstance(relative, str) and relative.startswith(("artifacts/", "datasets/")):
            _remove_quietly(session, relative)
    if output.pending_file:
        _remove_quietly(session, output.pending_file)


def _remove_quietly(session: Session, relative: str) -> None:
    try:
        session.workspace.fs.unlink(relative)
    except (NiniError, OSError):
        pass  # gone, or refused: the workspace sweep of a later process gets another chance


def _redact(session: Session, output: ToolOutput) -> None:
    """No host path in what the call tells anyone: its error message and summary (in place: a
    code skill's result holds the same error dict)."""

    def redact(text: str) -> str:
        return redact_paths(text, nini_home=session.settings.home, workspace=session.workspace.root)

    if output.error and isinstance(output.error.get("message"), str):
        output.error["message"] = redact(output.error["message"])
    if output.summary:
        output.summary = redact(output.summary)


def _execution_event(execution: dict[str, Any], execution_id: str | None, output: ToolOutput) -> dict[str, Any]:
    return {
        "execution_id": execution_id,
        "language": execution.get("language"),
        "tool_name": execution.get("tool_name"),
        "status": execution.get("status"),
        "purpose": execution.get("purpose"),
        "label": execution.get("label"),
        "duration_ms": execution.get("duration_ms"),
        "artifacts": [a.get("path") for a in output.artifacts],
        "datasets_saved": list(execution.get("datasets_saved") or []),
        "isolation": output.isolation,
        **notice_of(output.isolation),
        **({"gateway": output.gateway} if output.gateway else {}),  # where the kernel ran: its sandbox is the gateway's
        # enough of the output for a viewer to show the step (the store keeps all of it)
        "stdout": preview(execution.get("stdout")),
        "stderr": preview(execution.get("stderr")),
        # the outputs in their order (tables, Markdown, the error's traceback), for a viewer to show
        # them as a notebook does (nini.skills.step_outputs)
        "outputs": event_outputs(execution.get("outputs"), execution.get("stderr")),
        # output_df's first rows ({columns, dtypes, rows, shape}), for a viewer to show as a table
        "table": (output.result or {}).get("dataframe_preview") if isinstance(output.result, dict) else None,
    }


def _failure(code: ErrorCode, message: str) -> ToolOutput:
    return ToolOutput(result=None, success=False, error=error_dict(code, message))


def _summary(output: ToolOutput) -> str:
    if not output.success:
        error = output.error or {}
        return f"{error.get('code')}: {str(error.get('message', ''))[:300]}"
    text = str(output.result)
    return text if len(text) <= 300 else text[:297] + "..."
