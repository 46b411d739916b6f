"""POST /nini/api/sessions/{id}/run-code and run-r-code, with the events they publish on the WebSocket."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from traitlets.config import Config

from tests.jupyter_ext.conftest import needs_r, new_session, read_events, waiting


def assert_call_events(events: list[dict[str, Any]], session_id: str, language: str, tool: str) -> None:
    """tool_call, code_execution, tool_result of one call, in seq order, all naming that call."""
    assert [e["type"] for e in events] == ["tool_call", "code_execution", "tool_result"]
    assert [e["seq"] for e in events] == sorted({e["seq"] for e in events})
    assert {e["session_id"] for e in events} == {session_id}
    assert len({e["tool_call_id"] for e in events}) == 1
    assert events[0]["data"]["name"] == tool
    assert events[1]["data"]["language"] == language and events[1]["data"]["tool_name"] == tool


async def test_run_code_streams_its_events_in_order(api: Any, jp_ws_fetch: Any) -> None:
    session_id = await new_session(api)
    ws = await jp_ws_fetch("nini", "api", "sessions", session_id, "events")
    reply = await api("POST", "sessions", session_id, "run-code", body={"code": "print('hi')\nresult = 6 * 7"})
    assert reply.status == 200
    data = reply.data
    assert data["success"] is True and data["result"]["result"] == 42 and data["result"]["stdout"] == "hi\n"
    assert set(data) == {"tool_call_id", "name", "success", "result", "error", "execution_id", "isolation"}
    assert data["isolation"] in ("sandbox", "unsandboxed") and "notice" not in data
    events = await read_events(ws, 3)
    assert_call_events(events, session_id, "python", "run_code")
    assert events[1]["data"]["isolation"] == data["isolation"]
    assert events[0]["tool_call_id"] == data["tool_call_id"] and events[2]["data"]["success"] is True
    ws.close()


@pytest.mark.parametrize(
    ("code", "error_code"),
    [("1 / 0", "CODE_ERROR"), ("import subprocess", "POLICY_VIOLATION")],
)
async def test_failed_code_is_a_completed_call(api: Any, jp_ws_fetch: Any, code: str, error_code: str) -> None:
    session_id = await new_session(api)
    ws = await jp_ws_fetch("nini", "api", "sessions", session_id, "events")
    reply = await api("POST", "sessions", session_id, "run-code", body={"code": code})
    assert reply.status == 200 and reply.body["ok"] is True
    assert reply.data["success"] is False and reply.data["error"]["code"] == error_code
    events = await read_events(ws, 3)
    assert events[-1]["type"] == "tool_result" and events[-1]["data"]["error"]["code"] == error_code
    calls = (await api("GET", "sessions", session_id, "tool-calls")).data
    assert calls[0]["status"] == "failed" and calls[0]["error_code"] == error_code
    ws.close()


@pytest.mark.slow
async def test_timeout_is_a_completed_call(api: Any) -> None:
    session_id = await new_session(api)
    body = {"code": "while True:\n    pass", "timeout_s": 1}
    reply = await api("POST", "sessions", session_id, "run-code", body=body)
    assert reply.status == 200 and reply.data["error"]["code"] == "TIMEOUT"


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({}, 400, "INVALID_ARGUMENT"),  # code is required
        ({"code": "x = 1", "purpose": "fun"}, 400, "INVALID_ARGUMENT"),
        ({"code": "x = 1", "save_as": "../out"}, 400, "INVALID_ARGUMENT"),
        ({"code": "x = 1", "dataset_name": "absent"}, 404, "NOT_FOUND"),
        ({"code": "x = 1", "kernel_id": "no-such-kernel"}, 404, "NOT_FOUND"),
        ({"code": "x = 1", "kernel_id": 7}, 400, "INVALID_ARGUMENT"),
        ("{broken", 400, "INVALID_ARGUMENT"),
        ("[1, 2]", 400, "INVALID_ARGUMENT"),
    ],
)
async def test_wrong_requests(api: Any, body: Any, status: int, code: str) -> None:
    session_id = await new_session(api)
    reply = await api("POST", "sessions", session_id, "run-code", body=body)
    assert reply.status == status and reply.error["code"] == code
    if isinstance(body, dict) and "kernel_id" not in body:
        assert reply.error["details"]["tool_call_id"]  # invoke recorded the refused call


async def test_unknown_session(api: Any) -> None:
    reply = await api("POST", "sessions", "nope", "run-code", body={"code": "x = 1"})
    assert reply.status == 404 and reply.error["code"] == "NOT_FOUND"


async def test_run_code_in_an_existing_notebook_kernel(api: Any, jp_fetch: Any, jp_serverapp: Any) -> None:
    response = await jp_fetch("api", "kernels", method="POST", body=json.dumps({"name": "python3"}))
    kernel_id = json.loads(response.body)["id"]
    session_id = await new_session(api)
    call = asyncio.ensure_future(
        api("POST", "sessions", session_id, "run-code", body={"code": "shared = 20", "kernel_id": kernel_id})
    )
    (pending,) = await waiting(api, session_id)  # the user's kernel: a person allows it (here for the session)
    await api("POST", "sessions", session_id, "approvals", pending["approval_id"], body={"decision": "session"})
    first = await call
    assert first.data["success"] is True, first.body
    second = await api(
        "POST", "sessions", session_id, "run-code", body={"code": "result = shared * 2 + 2", "kernel_id": kernel_id}
    )
    assert second.data["result"]["result"] == 42
    runtime = jp_serverapp.web_app.settings["nini_runtime"]
    assert runtime.kernels.kernel_info(session_id) is None  # nini started no kernel of its own
    calls = (await api("GET", "sessions", session_id, "tool-calls")).data
    assert [c["arguments"].get("code") for c in calls] == ["shared = 20", "result = shared * 2 + 2"]
    assert kernel_id in jp_serverapp.kernel_manager.list_kernel_ids()


async def test_run_r_code_refuses_kernel_id(api: Any) -> None:
    session_id = await new_session(api)
    reply = await api("POST", "sessions", session_id, "run-r-code", body={"code": "x <- 1", "kernel_id": "k"})
    assert reply.status == 400 and reply.error["code"] == "INVALID_ARGUMENT"


@pytest.mark.parametrize(
    "jp_server_config",
    [Config({"ServerApp": {"jpserver_extensions": {"jupyter_ext": True}}, "NiniExtensionApp": {"r_enabled": False}})],
)
async def test_run_r_code_without_r_is_unavailable(api: Any) -> None:
    session_id = await new_session(api)
    reply = await api("POST", "sessions", session_id, "run-r-code", body={"code": "x <- 1"})
    assert reply.status == 503 and reply.error["code"] == "R_UNAVAILABLE"
    assert "r_enabled" in reply.error["message"]
    assert (await api("GET", "sessions", session_id, "tool-calls")).data == []


@needs_r
@pytest.mark.slow
async def test_run_r_code_streams_r_events(api: Any, jp_ws_fetch: Any) -> None:
    session_id = await new_session(api)
    ws = await jp_ws_fetch("nini", "api", "sessions", session_id, "events")
    code = "output_df <- data.frame(a = 1:3)\nresult <- sum(output_df$a)\nprint('from R')"
    reply = await api("POST", "sessions", session_id, "run-r-code", body={"code": code, "save_as": "from_r"})
    assert reply.status == 200 and reply.data["success"] is True, reply.body
    assert reply.data["result"]["result"] in (6, [6]) and reply.data["result"]["datasets_saved"] == ["from_r"]
    assert_call_events(await read_events(ws, 3), session_id, "r", "run_r_code")
    executions = (await api("GET", "sessions", session_id, "executions", params={"language": "r"})).data
    assert [e["tool_name"] for e in executions] == ["run_r_code"]
    ws.close()


@needs_r
@pytest.mark.slow
@pytest.mark.parametrize(("code", "error_code"), [("stop('no')", "CODE_ERROR"), ("system('ls')", "POLICY_VIOLATION")])
async def test_failed_r_code_is_a_completed_call(api: Any, code: str, error_code: str) -> None:
    session_id = await new_session(api)
    reply = await api("POST", "sessions", session_id, "run-r-code", body={"code": code})
    assert reply.status == 200 and reply.data["success"] is False and reply.data["error"]["code"] == error_code


@needs_r
@pytest.mark.usefixtures("chinese_locale")  # the spec's Chinese words: auto under a zh locale
async def test_every_r_violation_comes_back_with_its_line_and_column(api: Any) -> None:
    session_id = await new_session(api)
    code = 'library(parallel)\nx <- 1; system("ls")'
    reply = await api("POST", "sessions", session_id, "run-r-code", body={"code": code})
    error = reply.data["error"]
    assert error["code"] == "POLICY_VIOLATION" and error["line"] == 1
    assert error["message"] == "不允许使用 R 包: parallel (第 1 行)\n不允许调用函数: system (第 2 行)"
    assert [(v["name"], v["line"], v["column"]) for v in error["violations"]] == [("parallel", 1, 9), ("system", 2, 9)]
