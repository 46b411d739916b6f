"""POST /nini/api/sessions/{id}/ask with kernel_id: the turn's Python runs in a notebook kernel of
this server, and cancelling the turn interrupts the code there while the kernel lives on."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest
from traitlets.config import Config

from tests.conftest import scripted_model_settings, without_approval, write_settings
from tests.jupyter_ext.conftest import new_session, workspace
from tests.jupyter_ext.test_agent_api import events_until_done
from tests.llm_server import ScriptedLLM, text, tool_call
from tests.timeouts import timeout


@pytest.fixture
def jp_server_config(nini_home: Path, llm_server: ScriptedLLM) -> Config:
    write_settings(
        nini_home, without_approval(scripted_model_settings(llm_server))
    )  # where the turn runs, not approval
    return Config(
        {"ServerApp": {"jpserver_extensions": {"jupyter_ext": True}}, "NiniExtensionApp": {"nini_home": str(nini_home)}}
    )


async def notebook_kernel(jp_fetch: Any) -> str:
    """A kernel started through the server's own kernel API, as a notebook's is."""
    response = await jp_fetch("api", "kernels", method="POST", body=json.dumps({"name": "python3"}))
    return json.loads(response.body)["id"]


async def in_kernel(api: Any, session_id: str, kernel_id: str, code: str) -> dict[str, Any]:
    reply = await api("POST", "sessions", session_id, "run-code", body={"code": code, "kernel_id": kernel_id})
    assert reply.status == 200, reply.body
    return reply.data


async def test_the_turn_runs_in_the_notebook_kernel(
    api: Any, jp_fetch: Any, jp_ws_fetch: Any, jp_serverapp: Any, llm_server: ScriptedLLM
) -> None:
    kernel_id = await notebook_kernel(jp_fetch)
    session_id = await new_session(api)
    first = await in_kernel(api, session_id, kernel_id, "sales_total = 40")
    assert first["success"], json.dumps(first)
    llm_server.reply(tool_call("run_code", code="answer = sales_total + 2\nresult = answer"), text("It is 42."))
    ws = await jp_ws_fetch("nini", "api", "sessions", session_id, "events")
    reply = await api(
        "POST", "sessions", session_id, "ask", body={"message": "total plus two?", "kernel_id": kernel_id}
    )
    assert reply.status == 202 and reply.data["notice"] == "runs in your kernel, not sandboxed"
    events = await events_until_done(ws)
    execution = next(e["data"] for e in events if e["type"] == "code_execution")
    assert execution["isolation"] == "user_kernel"
    assert next(e["data"] for e in events if e["type"] == "tool_result")["success"] is True
    assert events[-1]["data"]["answer"] == "It is 42."
    assert (await in_kernel(api, session_id, kernel_id, "result = answer"))["result"]["result"] == 42  # the turn's
    assert jp_serverapp.web_app.settings["nini_runtime"].kernels.kernel_info(session_id) is None  # no kernel of nini's
    ws.close()


async def test_cancel_interrupts_the_code_and_the_kernel_lives_on(
    api: Any, jp_fetch: Any, jp_ws_fetch: Any, jp_serverapp: Any, llm_server: ScriptedLLM, nini_home: Path
) -> None:
    kernel_id = await notebook_kernel(jp_fetch)
    session_id = await new_session(api)
    first = await in_kernel(api, session_id, kernel_id, "kept = 'still here'")
    assert first["success"], json.dumps(first)
    sleeping = workspace(nini_home, session_id) / "sleeping"  # the step's code writes it as its sleep starts
    code = f"import time\nopen({str(sleeping)!r}, 'w').close()\ntime.sleep(30)\nlate = True"
    llm_server.reply(tool_call("run_code", code=code, timeout_s=60), text("never"))
    ws = await jp_ws_fetch("nini", "api", "sessions", session_id, "events")
    assert (
        await api("POST", "sessions", session_id, "ask", body={"message": "wait", "kernel_id": kernel_id})
    ).status == 202
    deadline = time.monotonic() + timeout(60)
    while not sleeping.exists():  # a poll: past the run's prelude, the sleep is running in the kernel
        assert time.monotonic() < deadline, "the step's code never started"
        await asyncio.sleep(0.05)
    assert (await api("POST", "sessions", session_id, "cancel")).data == {"canceled": True}
    events = await events_until_done(ws)  # uncanceled, the step would run 30 s and the turn end "finished"
    assert events[-1]["data"]["ended_by"] == "canceled"
    # the kernel was interrupted, not killed: it answers, with its variables, without `late`
    probe = "try:\n    late\n    ran_on = True\nexcept NameError:\n    ran_on = False\nresult = [kept, ran_on]"
    after = await in_kernel(api, session_id, kernel_id, probe)
    assert after["success"], json.dumps(after)
    assert after["result"]["result"] == ["still here", False]
    assert await jp_serverapp.kernel_manager.get_kernel(kernel_id).is_alive()
    ws.close()


@pytest.mark.parametrize(
    ("kernel_id", "status", "code"), [("no-such-kernel", 404, "NOT_FOUND"), (7, 400, "INVALID_ARGUMENT")]
)
async def test_a_wrong_kernel_is_refused_before_the_turn(
    api: Any, llm_server: ScriptedLLM, kernel_id: Any, status: int, code: str
) -> None:
    session_id = await new_session(api)
    reply = await api("POST", "sessions", session_id, "ask", body={"message": "hi", "kernel_id": kernel_id})
    assert reply.status == status and reply.error["code"] == code
    assert llm_server.requests == [] and (await api("GET", "sessions", session_id, "tool-calls")).data == []
