"""``nini mcp`` through the MCP SDK's own client over stdio: the tools are nini's enabled skills,
run_code and run_r_code run and are recorded, a policy refusal comes back as a tool error with its
reasons, and an artifact is read as a resource."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from nini.config import load_settings
from nini.history.store import HistoryStore
from nini.skills.builtin.run_r import r_status

pytestmark = pytest.mark.slow
NINI = str(Path(sys.executable).parent / "nini")


async def with_client(home: Path, project: Path, work: Any) -> Any:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    server = StdioServerParameters(
        command=NINI,
        args=["--project-dir", str(project), "mcp", "--session", "mcp1", "--new"],
        env={"NINI_HOME": str(home)},
    )
    async with stdio_client(server) as (read, write), ClientSession(read, write) as client:
        await client.initialize()
        return await work(client)


def run(home: Path, project: Path, work: Any) -> Any:
    return anyio.run(with_client, home, project, work)


def test_tools_calls_refusals_and_resources(nini_home: Path, project_dir: Path) -> None:
    code = "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.title('up')\nresult = 6\nprint('sum', 1 + 2 + 3)"

    async def work(client: Any) -> dict[str, Any]:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        ran = await client.call_tool("run_code", {"code": code, "label": "line"})
        refused = await client.call_tool("run_code", {"code": "import os\nos.system('echo hi')"})
        unknown = await client.call_tool("no_such_tool", {})
        resources = (await client.list_resources()).resources
        chart = next(r for r in resources if str(r.uri).endswith(".png"))
        read = await client.read_resource(chart.uri)
        return {
            "tools": tools,
            "ran": ran,
            "refused": refused,
            "unknown": unknown,
            "resources": resources,
            "read": read,
        }

    got = run(nini_home, project_dir, work)
    assert {
        "run_code",
        "load_dataset",
        "describe_dataset",
        "list_datasets",
        "generate_report",
        "search_skills",
        "read_file",
    } <= set(got["tools"])
    assert got["tools"]["run_code"].input_schema["properties"]["code"]["type"] == "string"
    assert "data-quality-check" in got["tools"]  # a Markdown skill, as a tool that returns its instructions
    ran = got["ran"]
    assert not ran.is_error and "sum 6" in ran.content[0].text and ran.structured_content["success"] is True
    refused = got["refused"]
    assert (
        refused.is_error
        and "POLICY_VIOLATION" in refused.content[0].text
        and "import of 'os' is not allowed" in refused.content[0].text
    )
    assert got["unknown"].is_error and "NOT_FOUND" in got["unknown"].content[0].text
    assert got["read"].contents[0].blob and str(got["read"].contents[0].uri).startswith(
        "nini://sessions/mcp1/artifacts/"
    )
    store = HistoryStore(f"sqlite:///{nini_home / 'nini.db'}")
    try:
        calls = [(c["tool_name"], c["status"]) for c in store.list_tool_calls("mcp1")]
    finally:
        store.close()
    assert calls[:2] == [("run_code", "succeeded"), ("run_code", "failed")]  # recorded like any call
    assert json.dumps(ran.structured_content).find(str(nini_home)) == -1  # no host path to the client


def test_r_through_mcp(nini_home: Path, project_dir: Path) -> None:
    if not r_status(load_settings())[0]:
        pytest.skip(f"R is not usable here: {r_status(load_settings())[1]}")

    async def work(client: Any) -> Any:
        return (
            await client.call_tool("run_r_code", {"code": "result <- sum(1:4)"}),
            await client.call_tool("run_r_code", {"code": "system('ls')"}),
        )

    ok, refused = run(nini_home, project_dir, work)
    assert not ok.is_error and ok.structured_content["result"]["result"] in (10, [10])
    assert refused.is_error and "system" in refused.content[0].text
