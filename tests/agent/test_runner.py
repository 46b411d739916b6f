"""AgentRunner against the scripted model server (tests/llm_server.py) with real kernels and R."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from nini.agent.context import UNANSWERED, load_context
from nini.agent.runner import StopContext
from nini.skills.builtin.run_r import r_status
from tests.agent.conftest import run_turn as run
from tests.conftest import runtime_harness
from tests.llm_server import Reply, ScriptedLLM, text, tool_call
from tests.timeouts import timeout

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("fresh_script")]


def events(harness: Any, session: Any) -> list[dict[str, Any]]:
    return harness.runtime.store.list_events(session.id)


def tool_messages(request: dict[str, Any]) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "tool"]


def test_a_run_calls_python_and_r_and_ends_normally(harness: Any, llm: ScriptedLLM) -> None:
    if not r_status(harness.runtime.settings)[0]:
        pytest.skip(f"R is not usable here: {r_status(harness.runtime.settings)[1]}")
    session = harness.session()
    llm.reply(
        tool_call(
            "run_code",
            code="import pandas as pd\noutput_df = pd.DataFrame({'x': [1, 2, 3, 4]})\nresult = int(output_df.x.sum())",
            save_as="nums",
            label="make numbers",
        ),
        tool_call("run_r_code", code="result <- mean(df$x)", dataset_name="nums", label="mean in R"),
        text("The numbers sum to 10 and their mean is 2.5.", chunks=4),
    )
    result = run(harness, session, "What is the sum and the mean?")

    assert (result.completed_normally, result.ended_by, result.iterations) == (True, "finished", 3)
    assert result.answer == "The numbers sum to 10 and their mean is 2.5."
    first, second, third = llm.requests
    assert first["messages"][0]["role"] == "system" and "run_code" in first["messages"][0]["content"]
    offered = {t["function"]["name"] for t in first["tools"]}
    assert {"run_code", "run_r_code", "task__explore", "data-quality-check"} <= offered
    assert first["stream"] is True
    assert '"result":10' in tool_messages(second)[-1]
    assert '"result":2.5' in tool_messages(third)[-1]
    # the conversation is in the store, in order, with the full tool outputs
    roles = [m["role"] for m in harness.runtime.store.list_messages(session.id)]
    assert roles == ["user", "assistant", "tool", "assistant", "tool", "assistant"]
    kinds = [e["type"] for e in events(harness, session)]
    # done, then the stop hooks' decision (auto enhance is off here: evaluated, logged, nothing more)
    assert kinds[0] == "user_message" and kinds[-2:] == ["done", "enhance_decision"]
    assert [k for k in kinds if k == "code_execution"] == ["code_execution"] * 2
    streamed = "".join(e["data"]["text"] for e in events(harness, session) if e["type"] == "assistant_delta")
    assert streamed == result.answer
    languages = [e["data"]["language"] for e in events(harness, session) if e["type"] == "code_execution"]
    assert languages == ["python", "r"]


def test_max_iterations_ends_unfinished_and_skips_stop_hooks(harness: Any, llm: ScriptedLLM) -> None:
    session = harness.session()
    ran: list[StopContext] = []
    runner = harness.runtime.new_agent(stop_hooks=[ran.append])
    settings = harness.runtime.settings.agent
    settings.max_iterations, original = 2, settings.max_iterations
    try:
        llm.reply(tool_call("list_datasets"), tool_call("list_datasets"))
        result = run(harness, session, "loop forever", runner)
    finally:
        settings.max_iterations = original
    assert (result.completed_normally, result.ended_by, result.iterations) == (False, "max_iterations", 2)
    assert ran == []
    assert events(harness, session)[-1]["data"]["ended_by"] == "max_iterations"


def test_consecutive_tool_failures_end_the_run(harness: Any, llm: ScriptedLLM) -> None:
    session = harness.session()
    ran: list[StopContext] = []
    runner = harness.runtime.new_agent(stop_hooks=[ran.append])
    failing = tool_call("run_code", code="raise ValueError('boom')", label="bad")
    llm.reply(failing, failing, failing)
    result = run(harness, session, "fail three times", runner)
    assert (result.completed_normally, result.ended_by) == (False, "tool_failures")
    assert result.error["code"] == "CODE_ERROR" and "boom" in result.error["message"]
    assert ran == []
    statuses = [c["status"] for c in harness.runtime.store.list_tool_calls(session.id)]
    assert statuses == ["failed"] * 3


def test_a_success_resets_the_failure_count(harness: Any, llm: ScriptedLLM) -> None:
    session = harness.session()
    bad = tool_call("read_file", path="missing.txt")
    llm.reply(bad, bad, tool_call("list_datasets"), bad, bad, text("done"))
    result = run(harness, session, "mixed")
    assert (result.completed_normally, result.ended_by, result.iterations) == (True, "finished", 6)


def test_a_failing_stop_hook_leaves_the_answer_intact(harness: Any, llm: ScriptedLLM) -> None:
    session = harness.session()
    seen: list[StopContext] = []

    def broken(context: StopContext) -> None:
        raise RuntimeError("hook bug")

    async def recording(context: StopContext) -> None:
        seen.append(context)

    runner = harness.runtime.new_agent(stop_hooks=[broken, recording])
    llm.reply(text("Forty-two."))
    result = run(harness, session, "the answer?", runner)
    assert (result.completed_normally, result.answer) == (True, "Forty-two.")
    assert [c.result.answer for c in seen] == ["Forty-two."]
    assert events(harness, session)[-1]["data"]["answer"] == "Forty-two."


def test_markdown_skill_is_read_before_it_is_followed(harness: Any, llm: ScriptedLLM) -> None:
    session = harness.session()
    llm.reply(tool_call("data-quality-check", request="check my data"), text("Checked."))
    result = run(harness, session, "check quality")
    assert result.completed_normally
    definition = harness.runtime.registry.load_definition("data-quality-check")
    shown = tool_messages(llm.requests[1])[-1]
    assert definition.body.strip()[:60] in json.loads(shown)["instructions"]
    call = harness.runtime.store.list_tool_calls(session.id)[0]
    assert (call["tool_name"], call["status"]) == ("data-quality-check", "succeeded")
    assert call["result"]["content_hash"] == definition.content_hash


def test_unknown_tool_and_bad_json_are_failures_the_model_sees(harness: Any, llm: ScriptedLLM) -> None:
    session = harness.session()
    llm.reply(
        tool_call("no_such_tool"),
        Reply(tool_calls=[{"name": "read_file", "arguments": "{not json"}]),
        text("Sorry."),
    )
    result = run(harness, session, "try things")
    assert result.completed_normally
    unknown, bad_json = tool_messages(llm.requests[2])
    assert "NOT_FOUND" in unknown and "no_such_tool" in unknown
    assert "INVALID_ARGUMENT" in bad_json


def test_context_comes_from_the_store_with_tool_outputs_capped(harness: Any, llm: ScriptedLLM) -> None:
    session = harness.session()
    cap = harness.runtime.settings.execution.output_cap_chars
    llm.reply(tool_call("run_code", code=f"print('x' * {cap * 3})", label="long"), text("Printed."))
    run(harness, session, "print a lot")
    llm.reply(text("Still here."))
    run(harness, session, "and now?")
    last = llm.requests[-1]["messages"]
    assert [m["role"] for m in last] == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert len(last[3]["content"]) < cap + 1000 and "characters cut" in last[3]["content"]
    stored = [m for m in harness.runtime.store.list_messages(session.id) if m["role"] == "tool"][0]
    assert "x" * (cap * 3) in stored["content"]  # the store keeps the whole output


def test_no_model_ends_with_no_model_available(harness: Any, tmp_path_factory: pytest.TempPathFactory) -> None:
    gen = runtime_harness(tmp_path_factory)  # no providers configured
    bare = next(gen)
    try:
        session = bare.session()
        result = run(bare, session, "hello?")
        assert (result.completed_normally, result.ended_by, result.error["code"]) == (
            False,
            "error",
            "NO_MODEL_AVAILABLE",
        )
        kinds = [e["type"] for e in events(bare, session)]
        assert kinds[-2:] == ["error", "done"]
    finally:
        gen.close()


def test_cancel_ends_the_run_as_canceled(harness: Any, llm: ScriptedLLM) -> None:
    session = harness.session()
    llm.reply(text("too late", delay_s=5))
    runner = harness.runtime.agent

    async def scenario() -> Any:
        asked = len(llm.requests)
        turn_id, task = runner.start(session, "slow question")
        await llm.async_wait_for_requests(asked + 1)  # the model call is under way
        with pytest.raises(Exception) as busy:
            runner.start(session, "another")
        assert getattr(busy.value, "code", None) == "CONFLICT"
        assert runner.cancel(session.id) is True
        return await asyncio.wait_for(
            task, timeout=timeout(60)
        )  # uncanceled, it would end "finished" at the 5 s answer

    result = harness.loop.run_until_complete(scenario())
    assert (result.ended_by, result.completed_normally) == ("canceled", False)
    assert runner.is_running(session.id) is False
    assert events(harness, session)[-1]["data"]["ended_by"] == "canceled"


def test_dangling_tool_calls_are_answered_in_the_context(harness: Any) -> None:
    session = harness.session()
    store = harness.runtime.store
    store.add_message(session.id, "user", "q")
    calls = [{"id": "c1", "name": "run_code", "arguments": "{}"}, {"id": "c2", "name": "run_code", "arguments": "{}"}]
    store.add_message(session.id, "assistant", None, metadata={"tool_calls": calls})
    store.add_message(session.id, "tool", '{"ok":1}', tool_call_id="c1")
    store.add_message(session.id, "user", "again")
    context = load_context(session)
    assert [(m["role"], m.get("tool_call_id")) for m in context] == [
        ("user", None),
        ("assistant", None),
        ("tool", "c1"),
        ("tool", "c2"),
        ("user", None),
    ]
    assert context[3]["content"] == UNANSWERED


def test_several_tool_calls_in_one_answer_run_in_order(harness: Any, llm: ScriptedLLM) -> None:
    session = harness.session()
    both = Reply(
        tool_calls=[
            {"name": "list_datasets", "arguments": {}, "id": "a1"},
            {"name": "search_skills", "arguments": {"query": "quality"}, "id": "a2"},
        ]
    )
    llm.reply(both, text("Both done."))
    result = run(harness, session, "two at once")
    assert (result.completed_normally, result.iterations) == (True, 2)
    answered = [(m["role"], m.get("tool_call_id")) for m in llm.requests[1]["messages"][-3:]]
    assert answered == [("assistant", None), ("tool", "a1"), ("tool", "a2")]
    assert [c["tool_name"] for c in harness.runtime.store.list_tool_calls(session.id)] == [
        "list_datasets",
        "search_skills",
    ]


def test_older_turns_past_the_token_budget_are_left_out(harness: Any) -> None:
    """What fits the budget (64,000 tokens here) is the newest whole turns, counted as the model is
    sent them; the newest turn goes even alone over the budget."""
    store = harness.runtime.store
    turn = "销售额按地区汇总的结果如下" * 1000  # Chinese: about a token per character
    session = harness.session()
    for number in range(5):
        store.add_message(session.id, "user", f"问题 {number}: {turn}")
        store.add_message(session.id, "assistant", turn)
    kept = load_context(session)
    assert [m["content"][:4] for m in kept if m["role"] == "user"] == ["问题 3", "问题 4"]
    store.add_message(session.id, "user", "问题 5: " + turn * 6)  # alone past the budget
    assert [m["content"][:4] for m in load_context(session)] == ["问题 5"]
