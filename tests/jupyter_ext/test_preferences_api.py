"""Preferences over REST against the scripted model: rejections with a signal become a rule the next
run's prompt carries (recorded with that run), a deletion is in force for the very next run, the
switches, proposal answers as feedback, and every error code (NOT_FOUND, INVALID_ARGUMENT, TIMEOUT,
CANCELED) in the envelope."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any

import pytest
from traitlets.config import Config

from tests.conftest import scripted_model_settings, write_settings
from tests.jupyter_ext.conftest import new_session
from tests.jupyter_ext.test_experience_api import ask_when_free
from tests.llm_server import Reply, ScriptedLLM, text, tool_call

pytestmark = pytest.mark.usefixtures("chinese_locale")  # the spec's Chinese words: auto under a zh locale

RULE = "- 规则: 不使用感叹号（confidence=0.70, source=implicit）"


def jp_server_config(nini_home: Path, llm_server: ScriptedLLM) -> Config:
    write_settings(nini_home, scripted_model_settings(llm_server) | {"preferences": {"timeout_s": 1}})
    return Config(
        {"ServerApp": {"jpserver_extensions": {"jupyter_ext": True}}, "NiniExtensionApp": {"nini_home": str(nini_home)}}
    )


jp_server_config = __import__("pytest").fixture(jp_server_config)


async def turn(api: Any, jp_ws_fetch: Any, session_id: str, message: str) -> str:
    events = await ask_when_free(api, jp_ws_fetch, session_id, message)
    return events[-1]["turn_id"]


async def test_three_rejections_make_a_rule_and_deleting_it_works_at_once(
    api: Any, jp_ws_fetch: Any, llm_server: ScriptedLLM
) -> None:
    session_id = await new_session(api)
    llm_server.reply(
        *(text(f"Revenue is up {n}%!") for n in range(3)), text("Revenue is up 4%."), text("Revenue is up 5%.")
    )
    for n in range(3):
        run = await turn(api, jp_ws_fetch, session_id, f"How is revenue {n}?")
        learned = await api("POST", "feedback", body={"run_id": run, "action": "reject", "signals": ["no_exclamation"]})
        assert learned.status == 201, learned.body
    preview = (await api("GET", "preferences", "preview")).data
    assert preview["block"].splitlines()[-1] == RULE
    run = await turn(api, jp_ws_fetch, session_id, "And now?")
    assert RULE in llm_server.requests[3]["messages"][0]["content"]
    [given] = (await api("GET", "sessions", session_id, "preferences")).data
    assert given["turn_id"] == run and given["keys"] == ["punctuation.no_exclamation"] and given["lines"] == [RULE]

    [preference] = (await api("GET", "preferences")).data["preferences"]
    assert (await api("DELETE", "preferences", str(preference["id"]))).status == 200
    await turn(api, jp_ws_fetch, session_id, "Once more?")
    assert "感叹号" not in llm_server.requests[4]["messages"][0]["content"]
    assert llm_server.requests[4]["messages"][0]["content"].endswith("(none)")


async def test_explicit_preferences_the_switches_and_the_project(api: Any) -> None:
    added = await api("POST", "preferences", body={"key": "tone", "value": "formal", "project": "."})
    assert added.status == 201 and added.data["source"] == "explicit" and added.data["confidence"] == 1.0
    listed = (await api("GET", "preferences")).data
    assert listed["preferences"][0]["project_id"] == listed["project_id"] and "/" not in listed["project_id"]
    off = (await api("PUT", "preferences", "switches", body={"injection": False})).data
    assert off == {"learning": True, "injection": False}
    assert (await api("GET", "preferences", "preview")).data["block"].endswith("(none)")
    await api("PUT", "preferences", "switches", body={"injection": True})
    assert "语气正式" in (await api("GET", "preferences", "preview")).data["block"]
    edited = await api("PUT", "preferences", str(added.data["id"]), body={"value": "casual"})
    assert edited.data["value"] == "casual"


async def test_every_error_comes_in_the_envelope_with_its_code(
    api: Any, llm_server: ScriptedLLM, jp_serverapp: Any
) -> None:
    unknown = await api("POST", "feedback", body={"run_id": "tnothing", "action": "accept"})
    assert (unknown.status, unknown.error["code"]) == (404, "NOT_FOUND")
    session_id = await new_session(api)
    assert session_id
    for body in (
        {"run_id": "t1", "action": "love"},
        {"run_id": "t1", "action": "accept", "signals": "x"},
        {"run_id": "t1", "action": "accept", "evidence": "the whole text"},
    ):
        bad = await api("POST", "feedback", body=body)
        assert (bad.status, bad.error["code"]) == (400, "INVALID_ARGUMENT"), body
    assert (await api("GET", "preferences", "77")).error["code"] == "NOT_FOUND"
    assert (await api("POST", "preferences", body={"key": "", "value": 1})).error["code"] == "INVALID_ARGUMENT"

    # a model reading the comment too slowly: TIMEOUT, and nothing recorded
    runtime = jp_serverapp.web_app.settings["nini_runtime"]
    runtime.events.publish(session_id, "user_message", {"text": "q"}, turn_id="tslow")
    never = threading.Event()  # the model never answers in time: held until the test ends
    llm_server.reply(Reply(content='{"signals": ["concise"]}', hold=never))
    try:
        slow = await api("POST", "feedback", body={"run_id": "tslow", "action": "reject", "comment": "too long"})
        assert (slow.status, slow.error["code"]) == (504, "TIMEOUT")
        assert runtime.preferences.table.feedback_for("tslow") == []

        # the server stopping while a feedback waits: CANCELED (499), nothing recorded
        llm_server.reply(Reply(content='{"signals": []}', hold=never))
        asked = len(llm_server.requests)
        pending = asyncio.ensure_future(
            api("POST", "feedback", body={"run_id": "tslow", "action": "reject", "comment": "too long"})
        )
        await llm_server.async_wait_for_requests(asked + 1)  # the feedback waits on the model
        await runtime.aclose()
        stopped = await pending
    finally:
        never.set()
    assert (stopped.status, stopped.error["code"]) == (499, "CANCELED")


async def test_a_proposal_answer_is_feedback_on_that_proposal(
    api: Any, jp_ws_fetch: Any, llm_server: ScriptedLLM, jp_serverapp: Any
) -> None:
    session_id = await new_session(api)
    llm_server.reply(tool_call("propose_cell", source="sales.plot()"), text("Proposed."))
    events = await ask_when_free(api, jp_ws_fetch, session_id, "plot it")
    [proposal] = [e["tool_call_id"] for e in events if e["type"] == "tool_result"]
    assert (await api("POST", "sessions", session_id, "proposals", proposal, body={"decision": "reject"})).status == 200
    [row] = jp_serverapp.web_app.settings["nini_runtime"].preferences.table.feedback_for(proposal)
    assert (row["skill_id"], row["action"]) == ("propose_cell", "reject") and json.dumps(row["evidence_ref"]) == "null"
