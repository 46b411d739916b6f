"""A long-running server stays bounded (issue 36, item 3): in a real Jupyter server with a 1 s idle
timeout (settings.json), the kernels of sessions that went idle are shut down until none is live and
their processes are gone; a session's next turn starts a new kernel, the sidebar's kernel_start event
says it was culled, and the tool result the model reads says its variables are gone."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import psutil
import pytest
from traitlets.config import Config

from tests.conftest import scripted_model_settings, write_settings
from tests.jupyter_ext.conftest import new_session
from tests.jupyter_ext.test_agent_api import events_until_done
from tests.llm_server import ScriptedLLM, text, tool_call

DEADLINE_S = 90.0


@pytest.fixture
def jp_server_config(nini_home: Path, llm_server: ScriptedLLM) -> Config:
    culling = {"execution": {"cull_idle_seconds": 1, "cull_interval_seconds": 0.2, "max_live_kernels": 4}}
    write_settings(nini_home, scripted_model_settings(llm_server) | culling)
    return Config(
        {
            "ServerApp": {"jpserver_extensions": {"jupyter_ext": True}},
            "NiniExtensionApp": {"nini_home": str(nini_home)},
        }
    )


def descendants(pid: int) -> list[psutil.Process]:
    root = psutil.Process(pid)
    return [root, *root.children(recursive=True)]


def ended(process: psutil.Process) -> bool:
    try:
        return not process.is_running() or process.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


async def until(condition: Any, what: str) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + DEADLINE_S
    while not condition():
        assert loop.time() < deadline, f"not within {DEADLINE_S:g} s: {what}"
        await asyncio.sleep(0.05)


async def test_idle_sessions_kernels_go_until_none_is_live(api: Any, jp_serverapp: Any) -> None:
    kernels = jp_serverapp.web_app.settings["nini_runtime"].kernels
    sessions = [await new_session(api, f"s{i}") for i in range(3)]
    processes = []
    for session_id in sessions:
        reply = await api("POST", "sessions", session_id, "run-code", body={"code": "x = 1"})
        assert reply.data["success"] is True, reply.data
        processes += descendants(kernels.kernel_info(session_id)["pid"])
    await until(lambda: kernels.culler.live_count() == 0, "every idle kernel shut down")
    await until(lambda: all(ended(p) for p in processes), "their processes gone")
    assert all(kernels.kernel_info(s) is None for s in sessions)


async def test_the_next_turn_says_the_kernel_was_culled(
    api: Any, jp_serverapp: Any, jp_ws_fetch: Any, llm_server: ScriptedLLM
) -> None:
    kernels = jp_serverapp.web_app.settings["nini_runtime"].kernels
    session_id = await new_session(api)
    reply = await api("POST", "sessions", session_id, "run-code", body={"code": "x = 1"})
    assert reply.data["success"] is True
    await until(lambda: kernels.kernel_info(session_id) is None, "the idle kernel shut down")

    llm_server.reply(
        tool_call("run_code", code="print(x)", label="x again"), text("x is gone; I will reload the data.")
    )
    ws = await jp_ws_fetch("nini", "api", "sessions", session_id, "events")
    assert (await api("POST", "sessions", session_id, "ask", body={"message": "Print x"})).status == 202
    events = await events_until_done(ws)
    ws.close()
    starting = [e["data"] for e in events if e["type"] == "kernel_start" and e["data"]["state"] == "starting"]
    assert [s.get("culled") for s in starting] == ["idle"]
    result = next(e["data"] for e in events if e["type"] == "tool_result")
    assert result["success"] is False
    tool_message = next(m for m in llm_server.requests[0 + 1]["messages"] if m["role"] == "tool")["content"]
    assert "Python kernel had been idle for more than 1 s" in tool_message
    assert "variables and imports of earlier steps are gone" in tool_message and "NameError" in tool_message
