"""POST /nini/api/sessions/{id}/ask and /cancel against the scripted model, events on the WebSocket."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from traitlets.config import Config

from nini.history.store import HistoryStore
from tests import timeouts
from tests.conftest import scripted_model_settings, write_settings
from tests.jupyter_ext.conftest import new_session
from tests.llm_server import ScriptedLLM, text, tool_call


@pytest.fixture
def jp_server_config(nini_home: Path, llm_server: ScriptedLLM) -> Config:
    # automatic enhancement on: a run that scores 2 (neutral) is followed by its note on the socket
    enhance = {"skill_enhance": {"auto_enhance": True, "trigger_profile": "neutral"}}
    write_settings(nini_home, scripted_model_settings(llm_server) | enhance)
    return Config(
        {
            "ServerApp": {"jpserver_extensions": {"jupyter_ext": True}},
            "NiniExtensionApp": {"nini_home": str(nini_home)},
        }
    )


async def events_until_done(ws: Any, timeout: float = 60) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    while not events or events[-1]["type"] != "done":
        message = await asyncio.wait_for(ws.read_message(), timeouts.timeout(timeout))
        assert message is not None, f"socket closed after {[e['type'] for e in events]}"
        events.append(json.loads(message))
    return events


def collapsed(types: list[str]) -> list[str]:
    """Event types with runs of assistant_delta folded into one."""
    return [t for i, t in enumerate(types) if t != "assistant_delta" or i == 0 or types[i - 1] != t]


async def test_ask_runs_code_and_streams_every_step_ending_with_done(
    api: Any, jp_ws_fetch: Any, llm_server: ScriptedLLM
) -> None:
    llm_server.reply(tool_call("run_code", code="result = 6 * 7", label="answer"), text("The answer is **42**."))
    session_id = await new_session(api)
    ws = await jp_ws_fetch("nini", "api", "sessions", session_id, "events")
    reply = await api("POST", "sessions", session_id, "ask", body={"message": "What is six times seven?"})
    assert reply.status == 202 and set(reply.data) == {"turn_id"}
    events = await events_until_done(ws)
    assert collapsed([e["type"] for e in events]) == [
        "user_message",
        "assistant_message",
        "tool_call",
        "kernel_start",
        "kernel_start",
        "code_execution",
        "tool_result",
        "assistant_delta",
        "assistant_message",
        "done",
    ]
    # the session's first step starts its kernel: said before and after, for the sidebar's status line
    starting, ready = [e["data"] for e in events if e["type"] == "kernel_start"]
    assert starting["state"] == "starting" and ready["state"] == "ready" and ready["duration_ms"] > 0
    assert starting["sandbox"] == ready["sandbox"] in ("bwrap", "none")
    events = [e for e in events if e["type"] != "kernel_start"]  # they name no turn (a kernel is the session's)
    assert {e["turn_id"] for e in events} == {reply.data["turn_id"]}
    assert [e["seq"] for e in events] == sorted(e["seq"] for e in events)
    assert events[0]["data"]["text"] == "What is six times seven?"
    assert events[2]["data"]["name"] == "run_code" and events[4]["data"]["success"] is True
    streamed = "".join(e["data"]["text"] for e in events if e["type"] == "assistant_delta")
    assert streamed == "The answer is **42**."
    done = events[-1]["data"]
    assert (done["answer"], done["completed_normally"], done["ended_by"], done["iterations"]) == (
        "The answer is **42**.",
        True,
        "finished",
        2,
    )
    tool_message = [m for m in llm_server.requests[1]["messages"] if m["role"] == "tool"][0]
    assert '"result":42' in tool_message["content"].replace(" ", "")
    calls = (await api("GET", "sessions", session_id, "tool-calls")).data
    assert [(c["tool_name"], c["status"]) for c in calls] == [("run_code", "succeeded")]
    ws.close()


async def test_the_socket_carries_the_enhancement_note_after_done(
    api: Any, jp_ws_fetch: Any, llm_server: ScriptedLLM
) -> None:
    skill = (
        "---\nname: list-then-search\ndescription: See what data there is, then find a skill for it.\n---\n\nSteps.\n"
    )
    llm_server.reply(
        tool_call("list_datasets"),
        tool_call("list_datasets"),
        tool_call("search_skills", query="x"),
        text("Nothing loaded yet."),
        tool_call("save_skill", name="list-then-search", content=skill),
        text("[Skill] Created: list-then-search"),
    )
    session_id = await new_session(api)
    ws = await jp_ws_fetch("nini", "api", "sessions", session_id, "events")
    reply = await api("POST", "sessions", session_id, "ask", body={"message": "What is there?"})
    events = await events_until_done(ws)
    while events[-1]["type"] != "stop_hook_note":
        events.append(json.loads(await asyncio.wait_for(ws.read_message(), timeouts.timeout(60))))
    after = [
        e
        for e in events[events.index(next(e for e in events if e["type"] == "done")) :]
        if e["turn_id"] == reply.data["turn_id"]
    ]
    assert [e["type"] for e in after] == ["done", "enhance_decision", "stop_hook_note"]
    assert after[0]["data"]["answer"] == "Nothing loaded yet."
    assert after[1]["data"]["enhancement"]["status"] == "created"
    assert after[2]["data"] == {"hook": "enhance", "text": "[Skill] Created: list-then-search"}
    ws.close()


async def test_a_second_ask_while_busy_is_a_conflict_and_cancel_ends_the_turn(
    api: Any, jp_ws_fetch: Any, llm_server: ScriptedLLM
) -> None:
    llm_server.reply(text("too late", delay_s=30))
    session_id = await new_session(api)
    ws = await jp_ws_fetch("nini", "api", "sessions", session_id, "events")
    first = await api("POST", "sessions", session_id, "ask", body={"message": "slow question"})
    assert first.status == 202
    await llm_server.async_wait_for_requests(1)  # the model call is under way
    busy = await api("POST", "sessions", session_id, "ask", body={"message": "another"})
    assert busy.status == 409 and busy.error["code"] == "CONFLICT"
    canceled = await api("POST", "sessions", session_id, "cancel")
    assert canceled.status == 200 and canceled.data == {"canceled": True}
    events = await events_until_done(ws)  # the reply comes in 30 s: a canceled turn ends long before
    assert events[-1]["data"]["ended_by"] == "canceled" and events[-1]["data"]["completed_normally"] is False
    assert events[-1]["turn_id"] == first.data["turn_id"]
    assert (await api("POST", "sessions", session_id, "cancel")).data == {"canceled": False}
    # the session takes a new question once the turn has ended
    llm_server.reply(text("now it works"))
    again = await api("POST", "sessions", session_id, "ask", body={"message": "again"})
    assert again.status == 202
    assert (await events_until_done(ws))[-1]["data"]["answer"] == "now it works"
    ws.close()


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({}, 400, "INVALID_ARGUMENT"),
        ({"message": ""}, 400, "INVALID_ARGUMENT"),
        ({"message": "   "}, 400, "INVALID_ARGUMENT"),
        ({"message": 3}, 400, "INVALID_ARGUMENT"),
        ("{broken", 400, "INVALID_ARGUMENT"),
    ],
)
async def test_wrong_asks(api: Any, body: Any, status: int, code: str, llm_server: ScriptedLLM) -> None:
    session_id = await new_session(api)
    reply = await api("POST", "sessions", session_id, "ask", body=body)
    assert reply.status == status and reply.error["code"] == code
    assert llm_server.requests == []


@pytest.mark.parametrize("action", ["ask", "cancel"])
async def test_unknown_session(api: Any, action: str) -> None:
    reply = await api("POST", "sessions", "nope", action, body={"message": "hello"})
    assert reply.status == 404 and reply.error["code"] == "NOT_FOUND"


@pytest.mark.parametrize("jp_server_config", [Config({"ServerApp": {"jpserver_extensions": {"jupyter_ext": True}}})])
async def test_ask_without_a_model_says_so_up_front(api: Any) -> None:
    session_id = await new_session(api)
    reply = await api("POST", "sessions", session_id, "ask", body={"message": "anything?"})
    assert reply.status == 503 and reply.error["code"] == "NO_MODEL_AVAILABLE"
    assert "nini models add" in reply.error["message"]  # what to do next, not only what is missing
    assert (await api("GET", "sessions", session_id)).data["id"] == session_id  # nothing else changed


async def test_stopping_the_extension_cancels_running_turns(
    api: Any, jp_serverapp: Any, nini_home: Path, llm_server: ScriptedLLM
) -> None:
    llm_server.reply(text("never sent", delay_s=30))
    session_id = await new_session(api)
    assert (await api("POST", "sessions", session_id, "ask", body={"message": "slow"})).status == 202
    await llm_server.async_wait_for_requests(1)  # the model call is under way
    runtime = jp_serverapp.web_app.settings["nini_runtime"]
    assert runtime.agent.is_running(session_id)
    (extension,) = jp_serverapp.extension_manager.extension_apps["jupyter_ext"]
    await asyncio.wait_for(extension.stop_extension(), timeouts.timeout(15))
    assert not runtime.agent.is_running(session_id)
    store = HistoryStore(f"sqlite:///{nini_home / 'nini.db'}")
    try:
        done = [e for e in store.list_events(session_id, 0) if e["type"] == "done"]
    finally:
        store.close()
    assert [d["data"]["ended_by"] for d in done] == ["canceled"]
