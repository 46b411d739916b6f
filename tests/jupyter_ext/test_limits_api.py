"""Caps and the code stored once over REST and in an agent's turn, against a real Jupyter server and
the scripted model (issue 36, item 5): REST's run-code over ``limits.max_code_chars`` is 413 TOO_LARGE
with nothing recorded; a model's too-long code is refused with an error the model reads and the
turn goes on; a long step's code is read whole from ``GET .../tool-calls/ID`` (its event carries
its start) and from the executions."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from traitlets.config import Config

from nini.skills.invoke import EVENT_CODE_CHARS
from tests.conftest import scripted_model_settings, write_settings
from tests.jupyter_ext.conftest import new_session
from tests.llm_server import ScriptedLLM, text, tool_call

MAX_CODE = 70_000


@pytest.fixture
def jp_server_config(nini_home: Path, llm_server: ScriptedLLM) -> Config:
    write_settings(nini_home, {**scripted_model_settings(llm_server), "limits": {"max_code_chars": MAX_CODE}})
    return Config(
        {
            "ServerApp": {"jpserver_extensions": {"jupyter_ext": True}},
            "MultiKernelManager": {"default_kernel_name": "python3"},
            "NiniExtensionApp": {"nini_home": str(nini_home)},
        }
    )


async def test_rest_refuses_long_code_and_serves_a_long_steps_code_whole(api: Any) -> None:
    session = await new_session(api)
    refused = await api("POST", "sessions", session, "run-code", body={"code": "x = 1\n" * (MAX_CODE // 6 + 1)})
    assert refused.status == 413 and refused.error["code"] == "TOO_LARGE", refused.error
    assert "limits.max_code_chars" in refused.error["message"]
    assert (await api("GET", "sessions", session, "tool-calls")).data == []  # nothing recorded
    code = "v = 5  # padding of a long step's code\n" * ((EVENT_CODE_CHARS + 1000) // 39) + "print('end')\n"
    ran = await api("POST", "sessions", session, "run-code", body={"code": code})
    assert ran.status == 200 and ran.data["success"], ran.data
    call = await api("GET", "sessions", session, "tool-calls", ran.data["tool_call_id"])
    assert call.status == 200 and call.data["arguments"]["code"] == code
    (execution,) = (await api("GET", "sessions", session, "executions")).data
    assert execution["code"] == code
    other = await new_session(api, "other")
    missing = await api("GET", "sessions", other, "tool-calls", ran.data["tool_call_id"])
    assert missing.status == 404 and missing.error["code"] == "NOT_FOUND"


async def test_a_models_too_long_code_is_refused_and_the_turn_goes_on(
    api: Any, jp_ws_fetch: Any, nini_home: Path, llm_server: ScriptedLLM
) -> None:
    session = await new_session(api)
    marker = "MARKER_MODEL_2e77"
    llm_server.reply(tool_call("run_code", code=f"# {marker}\n" + "y = 2\n" * (MAX_CODE // 6 + 1)))
    llm_server.reply(text("The code was too long; here is a shorter plan."))
    ws = await jp_ws_fetch("nini", "api", "sessions", session, "events")
    assert (await api("POST", "sessions", session, "ask", body={"message": "run a lot"})).status == 202
    events: list[dict[str, Any]] = []
    while not events or events[-1]["type"] != "done":
        events.append(json.loads(await asyncio.wait_for(ws.read_message(), 120)))
    ws.close()
    result = next(e for e in events if e["type"] == "tool_result")
    assert result["data"]["success"] is False and result["data"]["error"]["code"] == "TOO_LARGE"
    assert events[-1]["data"]["ended_by"] == "finished"
    tool_message = next(m for m in llm_server.requests[1]["messages"] if m["role"] == "tool")["content"]
    assert "TOO_LARGE" in tool_message and "limits.max_code_chars" in tool_message
    (call,) = (await api("GET", "sessions", session, "tool-calls")).data
    assert call["status"] == "failed" and "not kept" in call["arguments"]["code"]
    assert (await api("GET", "sessions", session, "executions")).data == []
    with sqlite3.connect(nini_home / "nini.db") as db:  # not in the call, its events or the model's message
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    assert (nini_home / "nini.db").read_bytes().count(marker.encode()) == 0
