"""task:* sub-agents: own context and allow-list, one-sentence summaries, nothing raw in the history."""

from __future__ import annotations

import json
from typing import Any

import pytest

from nini.agent.runner import CURRENT_TURN, Turn
from tests.agent.conftest import run_turn as run
from tests.conftest import skill_md
from tests.llm_server import ScriptedLLM, error, text, tool_call

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("fresh_script")]

RAW_MARK = "Detail sentence number"
LONG_ANSWER = "The session has no datasets yet. " + " ".join(
    f"{RAW_MARK} {i} mentions v1.2 and 3.14." for i in range(300)
)


def offered(request: dict[str, Any]) -> set[str]:
    return {t["function"]["name"] for t in request.get("tools") or []}


def everything_stored(harness: Any, session: Any) -> str:
    store = harness.runtime.store
    rows = store.list_messages(session.id) + store.list_tool_calls(session.id) + store.list_events(session.id)
    return json.dumps(rows, ensure_ascii=False, default=str)


def test_explore_returns_one_sentence_and_keeps_the_raw_answer_out_of_history(harness: Any, llm: ScriptedLLM) -> None:
    session = harness.session()
    llm.reply(
        tool_call("task__explore", prompt="Look at the session's datasets and report what is there."),
        tool_call("list_datasets"),  # the sub-agent
        text(LONG_ANSWER),  # the sub-agent's long answer
        text("The session has no datasets. A second sentence the parent must not see."),  # purpose summarize
        text("There is no data yet."),
    )
    result = run(harness, session, "What data do we have?")
    assert (result.completed_normally, result.answer) == (True, "There is no data yet.")

    parent, sub, sub_again, summarizer, parent_again = llm.requests
    # the sub-agent has its own context (system + the task prompt) and a read-only allow-list
    assert [m["role"] for m in sub["messages"]] == ["system", "user"]
    assert sub["messages"][1]["content"] == "Look at the session's datasets and report what is there."
    assert {"list_datasets", "describe_dataset", "read_file"} <= offered(sub)
    assert not offered(sub) & {"run_code", "run_r_code", "load_dataset", "save_skill"}
    assert not any(name.startswith("task__") for name in offered(sub))
    assert "task__explore" in offered(parent)
    # the summary call: temperature 0, short, told the status
    assert summarizer["temperature"] == 0 and summarizer["max_tokens"] <= 512
    # the parent sees exactly one sentence
    shown = json.loads([m for m in parent_again["messages"] if m["role"] == "tool"][-1]["content"])
    assert shown["summary"] == "The session has no datasets."
    assert RAW_MARK not in json.dumps(parent_again)
    assert RAW_MARK not in everything_stored(harness, session)
    summaries = [e["data"] for e in harness.runtime.store.list_events(session.id) if e["type"] == "task_summary"]
    assert [(s["command"], s["summary"], s["fallback_used"], s["success"]) for s in summaries] == [
        ("task:explore", "The session has no datasets.", "none", True)
    ]
    assert summaries[0]["raw_tokens"] > 3000 >= summaries[0]["summary_tokens"]


def test_a_failed_task_is_summarised_too(harness: Any, llm: ScriptedLLM) -> None:
    session = harness.session()
    llm.reply(
        tool_call("task__general", prompt="Compute something."),
        error(500, message="upstream broke"),  # the sub-agent's model call fails
        error(500, message="summarizer broke too"),  # so the summary falls back to local extraction
        text("The task failed."),
    )
    result = run(harness, session, "Please delegate.")
    assert result.completed_normally
    call = [c for c in harness.runtime.store.list_tool_calls(session.id) if c["tool_name"] == "task:general"][0]
    assert (call["status"], call["error_code"]) == ("failed", "UPSTREAM_ERROR")
    summary = call["result"]["summary"]
    assert summary.startswith("task stopped (error)") and "\n" not in summary
    event = [e["data"] for e in harness.runtime.store.list_events(session.id) if e["type"] == "task_summary"][0]
    assert (event["success"], event["fallback_used"]) == (False, "local")


def test_a_task_cannot_start_a_task(harness: Any, llm: ScriptedLLM) -> None:
    session = harness.session()
    llm.reply(
        tool_call("task__general", prompt="Delegate again."),
        tool_call("task__explore", prompt="nested"),  # the sub-agent tries to start a task
        text("I could not start a nested task."),
        text(""),  # an empty summary answer: local extraction
        text("Done."),
    )
    result = run(harness, session, "nest")
    assert result.completed_normally
    sub, nested_answer = llm.requests[1], llm.requests[2]
    assert not any(name.startswith("task__") for name in offered(sub))
    assert "NOT_FOUND" in [m for m in nested_answer["messages"] if m["role"] == "tool"][-1]["content"]
    assert "task:explore" not in [c["tool_name"] for c in harness.runtime.store.list_tool_calls(session.id)]

    token = CURRENT_TURN.set(Turn("t-inside", in_task=True))
    try:  # called directly from inside a task, a task is refused
        refused = harness.call(session, "task:explore", prompt="nested directly")
    finally:
        CURRENT_TURN.reset(token)
    assert (refused.success, refused.error["code"]) == (False, "INVALID_ARGUMENT")


def test_skill_search_finds_the_matching_skill(harness: Any, llm: ScriptedLLM) -> None:
    session = harness.session()
    llm.reply(
        tool_call("task__skill__search", prompt="Which skill checks data quality?"),
        tool_call("search_skills", query="data quality check"),
        text("data-quality-check fits best: it checks missing values and types. Other skills are unrelated."),
        error(503, message="no summarizer"),
        text("Use data-quality-check."),
    )
    run(harness, session, "find a skill")
    sub_result = [m for m in llm.requests[2]["messages"] if m["role"] == "tool"][-1]["content"]
    assert json.loads(sub_result)[0]["name"] == "data-quality-check"
    assert offered(llm.requests[1]) <= {"search_skills"} | {
        r["name"] for r in harness.runtime.registry.list("markdown")
    }
    event = [e["data"] for e in harness.runtime.store.list_events(session.id) if e["type"] == "task_summary"][0]
    assert event["summary"] == "data-quality-check fits best: it checks missing values and types."


def test_skill_enhance_saves_a_better_skill(harness: Any, llm: ScriptedLLM) -> None:
    session = harness.session()
    content = skill_md(
        "tidy-columns",
        "Rename columns to snake_case before analysis.",
        body="# Tidy\n\n1. Lower-case.\n2. Underscores.\n",
    )
    llm.reply(
        tool_call("task__skill__enhance", prompt="Improve tidy-columns with the underscore step."),
        tool_call("save_skill", name="tidy-columns", content=content),
        text("Saved tidy-columns with an underscore step."),
        text("Saved tidy-columns."),
        text("Improved."),
    )
    run(harness, session, "improve the skill")
    saved = harness.runtime.settings.user_skills_dir / "tidy-columns" / "SKILL.md"
    assert saved.read_text(encoding="utf-8") == content
    assert (
        harness.runtime.registry.get("tidy-columns")["description"] == "Rename columns to snake_case before analysis."
    )
    assert "save_skill" in offered(llm.requests[1]) and "run_code" not in offered(llm.requests[1])
