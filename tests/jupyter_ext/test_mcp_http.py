"""``/nini/mcp`` through the MCP SDK's own streamable-HTTP client against a real Jupyter server:
Jupyter's token is required, each MCP connection works in a session of its own unless it names
one, run_code runs and is recorded, a policy refusal is a tool error with its reasons, and a chart
the call made is read back as a resource."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from nini.history.store import HistoryStore
from tests.jupyter_ext.conftest import needs_r
from tests.timeouts import timeout

pytestmark = pytest.mark.slow
CHART = "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.title('up')\nprint('sum', 1 + 2 + 3)"


@pytest.fixture
def mcp_url(jp_serverapp: Any, http_server_client: Any, jp_http_port: int, jp_base_url: str) -> str:
    """The endpoint's URL (``http_server_client`` starts the server listening on it)."""
    return f"http://127.0.0.1:{jp_http_port}{jp_base_url}nini/mcp"


@contextlib.asynccontextmanager
async def connect(url: str, headers: dict[str, str]) -> AsyncIterator[ClientSession]:
    async with (
        httpx2.AsyncClient(headers=headers, timeout=timeout(120)) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as client,
    ):
        await client.initialize()
        yield client


def recorded(home: Path) -> dict[str, list[tuple[str, str]]]:
    store = HistoryStore(f"sqlite:///{home / 'nini.db'}")
    try:
        return {
            s["id"]: [(c["tool_name"], c["status"]) for c in store.list_tool_calls(s["id"])]
            for s in store.list_sessions()
        }
    finally:
        store.close()


async def test_tools_calls_refusals_and_resources_over_http(
    mcp_url: str, jp_auth_header: dict[str, str], nini_home: Path
) -> None:
    bearer = {"Authorization": "Bearer " + jp_auth_header["Authorization"].split()[1]}
    async with connect(mcp_url, bearer) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        ran = await client.call_tool("run_code", {"code": CHART, "label": "line"})
        refused = await client.call_tool("run_code", {"code": "import os\nos.system('echo hi')"})
        resources = (await client.list_resources()).resources
        chart = next(r for r in resources if str(r.uri).endswith(".png"))
        read = await client.read_resource(chart.uri)
    assert {"run_code", "load_dataset", "describe_dataset", "generate_report", "read_file"} <= set(tools)
    assert tools["run_code"].input_schema["properties"]["code"]["type"] == "string"
    assert not ran.is_error and "sum 6" in ran.content[0].text and ran.structured_content["success"] is True
    assert refused.is_error and "POLICY_VIOLATION" in refused.content[0].text
    assert "import of 'os' is not allowed" in refused.content[0].text
    session_id = str(chart.uri).removeprefix("nini://sessions/").split("/")[0]
    assert read.contents[0].blob and read.contents[0].mime_type == "image/png"
    assert recorded(nini_home)[session_id] == [("run_code", "succeeded"), ("run_code", "failed")]
    assert str(nini_home) not in ran.model_dump_json()


async def test_each_connection_has_its_own_session_unless_it_names_one(
    mcp_url: str, jp_auth_header: dict[str, str], nini_home: Path
) -> None:
    code = {"code": "result = 1"}
    async with connect(mcp_url, jp_auth_header) as first, connect(mcp_url, jp_auth_header) as second:
        await first.call_tool("run_code", code)
        await second.call_tool("run_code", code)
        await first.call_tool("run_code", code)
    async with connect(mcp_url + "?session=shared", jp_auth_header) as named:
        await named.call_tool("run_code", code)
    async with connect(mcp_url + "?session=shared", jp_auth_header) as again:
        await again.call_tool("run_code", code)
    calls = {session: len(rows) for session, rows in recorded(nini_home).items()}
    assert calls.pop("shared") == 2
    assert sorted(calls.values()) == [1, 2]  # the two anonymous connections: two new sessions


async def test_a_request_without_the_token_is_refused(mcp_url: str, nini_home: Path) -> None:
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    async with httpx2.AsyncClient(timeout=timeout(30)) as http:
        anonymous = await http.post(mcp_url, json=message, headers={"Accept": "application/json, text/event-stream"})
        wrong = await http.post(
            mcp_url,
            json=message,
            headers={"Accept": "application/json, text/event-stream", "Authorization": "Bearer not-the-token"},
        )
    assert anonymous.status_code == 403 and wrong.status_code == 403
    # a JSON-RPC error, which MCP clients show as it is, with nini's code
    assert anonymous.json()["error"]["data"]["code"] == "POLICY_VIOLATION" and anonymous.json()["jsonrpc"] == "2.0"
    assert anonymous.json()["error"]["message"].startswith("HTTP 403 POLICY_VIOLATION")
    assert not (nini_home / "nini.db").exists() or recorded(nini_home) == {}  # nothing ran, no session made
    async with httpx2.AsyncClient(timeout=timeout(30)) as http:  # the event stream and ending a session alike
        for method in ("GET", "DELETE"):
            refused = await http.request(
                method, mcp_url, headers={"Accept": "text/event-stream", "Mcp-Session-Id": "abc"}
            )
            assert refused.status_code == 403 and refused.json()["error"]["data"]["code"] == "POLICY_VIOLATION", method
    with pytest.raises(Exception):  # noqa: B017 - the SDK's client fails its handshake on the 403
        async with connect(mcp_url, {}):
            pass


async def test_a_malformed_session_name_is_refused_before_mcp(mcp_url: str, jp_auth_header: dict[str, str]) -> None:
    async with httpx2.AsyncClient(timeout=timeout(30), headers=jp_auth_header) as http:
        reply = await http.post(mcp_url + "?session=../up", json={})
    assert reply.status_code == 400 and reply.json()["error"]["data"]["code"] == "INVALID_ARGUMENT"


@needs_r
async def test_r_over_http(mcp_url: str, jp_auth_header: dict[str, str]) -> None:
    async with connect(mcp_url, jp_auth_header) as client:
        ok = await client.call_tool("run_r_code", {"code": "result <- sum(1:4)"})
        refused = await client.call_tool("run_r_code", {"code": "system('ls')"})
    assert not ok.is_error and ok.structured_content["result"]["result"] in (10, [10])
    assert refused.is_error and "system" in refused.content[0].text


async def test_an_mcp_client_cannot_reach_a_notebooks_kernel(
    mcp_url: str, jp_auth_header: dict[str, str], jp_fetch: Any, jp_serverapp: Any
) -> None:
    """MCP's run_code always runs in the session's sandbox: no argument names a notebook's kernel
    (the user's own kernel is chosen by the user's client only, and asks there: issue 31)."""
    import json

    response = await jp_fetch("api", "kernels", method="POST", body=json.dumps({"name": "python3"}))
    kernel_id = json.loads(response.body)["id"]
    async with connect(mcp_url, jp_auth_header) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        aimed = await client.call_tool("run_code", {"code": "reached = 1", "kernel_id": kernel_id})
        plain = await client.call_tool("run_code", {"code": "result = 'reached' in dir()"})
    assert "kernel_id" not in tools["run_code"].input_schema["properties"]
    assert aimed.is_error and "INVALID_ARGUMENT" in aimed.content[0].text
    assert plain.structured_content["result"]["result"] is False  # nor did the session's sandbox see it
    client_of_kernel = jp_serverapp.kernel_manager.get_kernel(kernel_id).client()
    client_of_kernel.start_channels()
    try:
        reply = await client_of_kernel.execute_interactive(
            "", user_expressions={"x": "'reached' in globals()"}, timeout=30
        )
    finally:
        client_of_kernel.stop_channels()
    assert reply["content"]["user_expressions"]["x"]["data"]["text/plain"] == "False"
