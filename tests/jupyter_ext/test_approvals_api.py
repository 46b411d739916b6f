"""execution.approve_in_user_kernel over REST: a step for the user's own (unsandboxed) notebook
kernel waits, shown with its code, until the user approves it, refuses it, or time runs out."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from traitlets.config import Config

from tests.conftest import write_settings
from tests.jupyter_ext.conftest import new_session, read_events


@pytest.fixture
def jp_server_config(nini_home: Path) -> Config:
    write_settings(nini_home, {"execution": {"approve_in_user_kernel": True, "approval_timeout_s": 3}})
    return Config({
        "ServerApp": {"jpserver_extensions": {"jupyter_ext": True}},
        "MultiKernelManager": {"default_kernel_name": "python3"},
        "NiniExtensionApp": {"nini_home": str(nini_home)},
    })  # fmt: skip


async def notebook_kernel(jp_fetch: Any) -> str:
    response = await jp_fetch("api", "kernels", method="POST", body=json.dumps({"name": "python3"}))
    return json.loads(response.body)["id"]


async def waiting(api: Any, session_id: str, count: int = 1) -> list[dict[str, Any]]:
    for _ in range(300):
        pending = (await api("GET", "sessions", session_id, "approvals")).data
        if len(pending) >= count:
            return pending
        await asyncio.sleep(0.05)
    raise AssertionError("no step came to wait for approval")


async def test_an_approved_step_runs_and_says_where(api: Any, jp_fetch: Any, jp_ws_fetch: Any) -> None:
    kernel_id = await notebook_kernel(jp_fetch)
    session_id = await new_session(api)
    ws = await jp_ws_fetch("nini", "api", "sessions", session_id, "events")
    call = asyncio.ensure_future(api("POST", "sessions", session_id, "run-code",
                                     body={"code": "flag = 'ran'\nresult = flag", "kernel_id": kernel_id}))  # fmt: skip
    (pending,) = await waiting(api, session_id)
    assert pending["code"] == "flag = 'ran'\nresult = flag" and pending["notice"] == "runs in your kernel, not sandboxed"
    assert not call.done()  # nothing ran yet
    decided = await api("POST", "sessions", session_id, "approvals", pending["approval_id"], body={"approve": True})
    assert decided.data == {"approval_id": pending["approval_id"], "approved": True}
    reply = await call
    assert reply.data["success"] and reply.data["result"]["result"] == "ran"
    assert reply.data["isolation"] == "user_kernel" and reply.data["notice"] == "runs in your kernel, not sandboxed"
    events = await read_events(ws, 5)
    assert [e["type"] for e in events] == ["tool_call", "approval_required", "approval_resolved", "code_execution",
                                           "tool_result"]  # fmt: skip
    assert events[1]["data"]["code"] == pending["code"] and events[2]["data"]["how"] == "approved"
    assert events[3]["data"]["isolation"] == "user_kernel" and events[3]["data"]["notice"]
    ws.close()


async def test_a_refused_step_never_runs(api: Any, jp_fetch: Any) -> None:
    kernel_id = await notebook_kernel(jp_fetch)
    session_id = await new_session(api)
    call = asyncio.ensure_future(api("POST", "sessions", session_id, "run-code",
                                     body={"code": "refused = True", "kernel_id": kernel_id}))  # fmt: skip
    (pending,) = await waiting(api, session_id)
    await api("POST", "sessions", session_id, "approvals", pending["approval_id"], body={"approve": False})
    reply = await call
    assert not reply.data["success"] and reply.data["error"]["code"] == "CANCELED"
    assert "not approved" in reply.data["error"]["message"]
    check = asyncio.ensure_future(api("POST", "sessions", session_id, "run-code",
                                      body={"code": "result = 'refused' in dir()", "kernel_id": kernel_id}))  # fmt: skip
    (pending,) = await waiting(api, session_id)
    await api("POST", "sessions", session_id, "approvals", pending["approval_id"], body={"approve": True})
    assert (await check).data["result"]["result"] is False


async def test_a_step_nobody_answers_is_refused_after_the_timeout(api: Any, jp_fetch: Any) -> None:
    kernel_id = await notebook_kernel(jp_fetch)
    session_id = await new_session(api)
    started = asyncio.get_running_loop().time()
    reply = await api("POST", "sessions", session_id, "run-code", body={"code": "late = 1", "kernel_id": kernel_id})
    assert reply.data["error"]["code"] == "CANCELED"
    assert 2.5 <= asyncio.get_running_loop().time() - started < 30
    assert (await api("GET", "sessions", session_id, "approvals")).data == []


async def test_sandboxed_steps_and_unknown_approvals(api: Any) -> None:
    session_id = await new_session(api)
    sandboxed = await api("POST", "sessions", session_id, "run-code", body={"code": "result = 2"})
    assert sandboxed.data["success"] and sandboxed.data["isolation"] != "user_kernel"  # no approval asked
    unknown = await api("POST", "sessions", session_id, "approvals", "a-nope", body={"approve": True})
    assert unknown.status == 404 and unknown.error["code"] == "NOT_FOUND"
    bad = await api("POST", "sessions", session_id, "approvals", "a-nope", body={"approve": "yes"})
    assert bad.status == 400
