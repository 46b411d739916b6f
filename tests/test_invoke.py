"""invoke(): the one recorded path of every skill call (no kernels here: plain function skills)."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path

import pytest

from nini.errors import ErrorCode, NiniError
from nini.runtime import Runtime
from nini.skills.function import skill
from nini.skills.invoke import invoke
from nini.skills.output import ToolOutput, ToolResult, cap_json, cap_text
from nini.skills.registry import SkillRegistry
from tests.conftest import skill_md, write_skill
from tests.timeouts import timeout


@skill("add_numbers", category="utility")
def add_numbers(a: int, b: int = 1) -> dict:
    """Add two integers.

    Args:
        a: First number.
        b: Second number.
    """
    return {"sum": a + b}


@skill("where_am_i", category="utility")
async def where_am_i(session, tag: str) -> dict:  # noqa: ANN001 - session is injected
    """Report the calling session."""
    return {"session": session.id, "tag": tag}


@skill("explodes", category="utility")
def explodes(kind: str) -> dict:
    """Fail on purpose."""
    if kind == "nini":
        raise NiniError(ErrorCode.CONFLICT, "already there")
    raise RuntimeError("boom")


SLEEPING = threading.Event()  # set once the skill below runs: its call is recorded and under way


@skill("sleeps", category="utility")
async def sleeps(seconds: float) -> dict:
    """Sleep."""
    SLEEPING.set()
    await asyncio.sleep(seconds)
    return {"slept": seconds}


@skill("announces", category="utility")
def announces(session, name: str) -> ToolOutput:  # noqa: ANN001 - session is injected
    """Record an artifact and announce it."""
    artifact = {"name": name, "path": f"artifacts/{name}", "format": "txt", "kind": "file"}
    return ToolOutput(result={"made": name}, artifacts=[artifact], events=[("made_ready", {"name": name})])


@pytest.fixture
def runtime(settings, project_dir):  # noqa: ANN001, ANN201
    registry = SkillRegistry(
        settings, project_dir, function_skills=[add_numbers, where_am_i, explodes, sleeps, announces]
    )
    rt = Runtime(settings, project_dir=project_dir, registry=registry)
    yield rt
    asyncio.run(rt.aclose())


def run(coro):  # noqa: ANN001, ANN201
    return asyncio.run(coro)


def test_a_successful_call_is_recorded_and_published_in_order(runtime: Runtime) -> None:
    session = runtime.create_session()
    result = run(invoke(session, "add_numbers", {"a": 2, "b": 3}, turn_id="t1"))
    assert result.success and result.result == {"sum": 5}
    call = runtime.store.get_tool_call(result.tool_call_id)
    assert call["status"] == "succeeded" and call["arguments"] == {"a": 2, "b": 3} and call["turn_id"] == "t1"
    assert call["result"] == {"sum": 5} and call["duration_ms"] >= 0
    events = runtime.store.list_events(session.id)
    assert [e["type"] for e in events] == ["tool_call", "tool_result"]
    assert [e["seq"] for e in events] == [1, 2]
    assert all(e["tool_call_id"] == result.tool_call_id and e["turn_id"] == "t1" for e in events)


def test_a_skills_own_events_follow_its_recorded_rows_and_precede_tool_result(runtime: Runtime) -> None:
    session = runtime.create_session()
    seen_rows: list[list[str]] = []

    async def scenario() -> ToolResult:
        async with session.events.subscribe(session.id) as events:
            task = asyncio.create_task(invoke(session, "announces", {"name": "x.txt"}, turn_id="t9"))
            async for event in events:
                if event["type"] == "made_ready":  # the artifact it names is already recorded
                    seen_rows.append([a["name"] for a in runtime.store.list_artifacts(session.id)])
                if event["type"] == "tool_result":
                    return await task
        raise AssertionError("no tool_result")

    result = run(scenario())
    assert result.success and seen_rows == [["x.txt"]]
    events = runtime.store.list_events(session.id)
    assert [e["type"] for e in events] == ["tool_call", "made_ready", "tool_result"]
    assert events[1]["tool_call_id"] == result.tool_call_id and events[1]["data"] == {"name": "x.txt"}


def test_the_session_is_injected_and_not_part_of_the_schema(runtime: Runtime) -> None:
    session = runtime.create_session()
    assert "session" not in where_am_i.input_schema()["properties"]
    result = run(invoke(session, "where_am_i", {"tag": "x"}))
    assert result.result == {"session": session.id, "tag": "x"}
    bad = run(invoke(session, "where_am_i", {"tag": "x", "session": "other"}))
    assert not bad.success and bad.error["code"] == "INVALID_ARGUMENT"


@pytest.mark.parametrize(
    ("name", "arguments", "code"),
    [
        ("add_numbers", {"a": "not a number"}, "INVALID_ARGUMENT"),
        ("add_numbers", {}, "INVALID_ARGUMENT"),
        ("add_numbers", {"a": 1, "c": 2}, "INVALID_ARGUMENT"),
        ("no_such_skill", {}, "NOT_FOUND"),
        ("explodes", {"kind": "nini"}, "CONFLICT"),
        ("explodes", {"kind": "bug"}, "INTERNAL"),
    ],
)
def test_every_failure_is_a_recorded_result_with_its_code(
    runtime: Runtime, name: str, arguments: dict, code: str
) -> None:
    session = runtime.create_session()
    result = run(invoke(session, name, arguments))
    assert not result.success and result.error["code"] == code
    call = runtime.store.get_tool_call(result.tool_call_id)
    assert call["status"] == "failed" and call["error_code"] == code
    assert [e["type"] for e in runtime.store.list_events(session.id)] == ["tool_call", "tool_result"]


def test_a_bug_in_a_skill_does_not_leak_a_traceback(runtime: Runtime) -> None:
    result = run(invoke(runtime.create_session(), "explodes", {"kind": "bug"}))
    assert "boom" in result.error["message"] and "Traceback" not in result.error["message"]


def test_a_disabled_skill_is_not_run(runtime: Runtime) -> None:
    runtime.registry.set_enabled("add_numbers", False)
    result = run(invoke(runtime.create_session(), "add_numbers", {"a": 1}))
    assert result.error["code"] == "NOT_FOUND" and "disabled" in result.error["message"]


def test_a_cancelled_call_is_recorded_as_cancelled_not_left_running(runtime: Runtime) -> None:
    session = runtime.create_session()

    async def cancel_soon() -> None:
        SLEEPING.clear()
        task = asyncio.create_task(invoke(session, "sleeps", {"seconds": 30}))
        while not SLEEPING.is_set():  # a poll: the skill runs
            assert not task.done(), task.result()
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    run(cancel_soon())
    (call,) = runtime.store.list_tool_calls(session.id)
    assert call["status"] == "failed" and call["error_code"] == "CANCELED"


def test_a_call_cancelled_while_its_start_is_written_is_ended_cancelled_and_not_run(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = runtime.create_session()
    writing, release = threading.Event(), threading.Event()
    start_tool_call = runtime.store.start_tool_call

    def held_start(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202 - the store's own, held on its thread
        writing.set()
        assert release.wait(timeout(60))
        return start_tool_call(*args, **kwargs)

    monkeypatch.setattr(runtime.store, "start_tool_call", held_start)

    async def cancel_while_starting() -> None:
        SLEEPING.clear()
        task = asyncio.create_task(invoke(session, "sleeps", {"seconds": 30}))
        while not writing.is_set():  # a poll: the start is being written
            await asyncio.sleep(0.01)
        task.cancel()
        await asyncio.sleep(0)  # the cancel reaches the task while its start is still held
        release.set()
        with pytest.raises(asyncio.CancelledError):
            await task

    run(cancel_while_starting())
    (call,) = runtime.store.list_tool_calls(session.id)
    assert call["status"] == "failed" and call["error_code"] == "CANCELED"
    assert not SLEEPING.is_set()  # the skill never ran
    assert [e["type"] for e in runtime.store.list_events(session.id)] == ["tool_call", "tool_result"]


def test_using_a_markdown_skill_reads_its_definition_now(runtime: Runtime, settings, project_dir: Path) -> None:  # noqa: ANN001
    path = write_skill(
        project_dir / ".nini" / "skills", "tidy-up", skill_md("tidy-up", "Tidy a table.", body="# Steps\n\nfirst\n")
    )
    runtime.registry.refresh(force=True)
    session = runtime.create_session()
    first = run(invoke(session, "tidy-up", {}))
    path.write_text(skill_md("tidy-up", "Tidy a table.", body="# Steps\n\nsecond\n"), encoding="utf-8")
    second = run(invoke(session, "tidy-up", {}))
    assert "first" in first.result["instructions"] and "second" in second.result["instructions"]
    assert first.result["content_hash"] != second.result["content_hash"]
    path.unlink()
    gone = run(invoke(session, "tidy-up", {}))
    assert gone.error["code"] == "SKILL_DEFINITION_UNAVAILABLE"


def test_calls_of_two_sessions_stay_apart(runtime: Runtime) -> None:
    one, two = runtime.create_session(), runtime.create_session()

    async def both() -> None:
        await asyncio.gather(*(invoke(s, "add_numbers", {"a": i}) for i in range(5) for s in (one, two)))

    run(both())
    for session in (one, two):
        calls = runtime.store.list_tool_calls(session.id)
        assert len(calls) == 5 and {c["session_id"] for c in calls} == {session.id}
        assert [e["seq"] for e in runtime.store.list_events(session.id)] == list(range(1, 11))


def test_cap_text_says_how_much_was_cut_and_where() -> None:
    text = "x" * 100_000
    capped = cap_text(text, 8000, "executions/x1/stdout.txt")
    assert capped.startswith("x" * 8000) and len(capped) < 8200
    assert "92,000 of 100,000 characters cut" in capped and "executions/x1/stdout.txt" in capped
    assert cap_text("short", 8000, "w") == "short"


def test_cap_json_cuts_the_streams_first_and_stays_valid_json() -> None:
    payload = {"success": True, "stdout": "y" * 50_000, "stderr": "", "result": {"n": 3}}
    text = cap_json(payload, 8000, "somewhere")
    decoded = json.loads(text)
    assert decoded["result"] == {"n": 3} and "characters cut" in decoded["stdout"]
    assert len(text) <= 8400
    result = ToolResult(
        tool_call_id="c1", name="run_code", success=True, result=payload, error=None, full_text_at="the store"
    )
    assert len(result.text_for_llm(2000)) <= 2400 and "the store" in result.text_for_llm(2000)
