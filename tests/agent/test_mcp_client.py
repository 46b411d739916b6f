"""The agent calls tools of MCP servers listed in settings (``mcp__<server>__<tool>``), recorded through
invoke; a server that cannot start is left out of the run and reported by ``nini doctor``."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from nini.agent.tasks import skill_registry
from nini.mcp.client import check_servers
from tests.conftest import REPO_ROOT, runtime_harness, scripted_model_settings
from tests.llm_server import ScriptedLLM, text, tool_call

pytestmark = pytest.mark.slow
CALC = {"name": "calc", "command": sys.executable, "args": [str(REPO_ROOT / "tests" / "mcp_calc_server.py")]}
BROKEN = {"name": "broken", "command": "/nonexistent/mcp-server"}


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory, llm: ScriptedLLM) -> Iterator[Any]:
    yield from runtime_harness(tmp_path_factory, scripted_model_settings(llm) | {"mcp": {"servers": [CALC, BROKEN]}})


def test_the_agent_calls_an_mcp_servers_tool_and_a_broken_server_is_left_out(harness: Any, llm: ScriptedLLM) -> None:
    session = harness.session()
    llm.reply(tool_call("mcp__calc__add", a=2, b=3), tool_call("mcp__calc__fail"), text("2 + 3 = 5."))
    result = harness.loop.run_until_complete(harness.runtime.agent.run(session, "add 2 and 3"))
    assert result.completed_normally and result.answer == "2 + 3 = 5."
    offered = {tool["function"]["name"] for tool in llm.requests[0]["tools"]}
    assert {"mcp__calc__add", "mcp__calc__fail"} <= offered and not any(
        name.startswith("mcp__broken") for name in offered
    )
    add_message = [m for m in llm.requests[1]["messages"] if m["role"] == "tool"][-1]["content"]
    assert "sum is 5" in add_message
    calls = [(c["tool_name"], c["status"]) for c in harness.runtime.store.list_tool_calls(session.id)]
    assert calls == [("mcp__calc__add", "succeeded"), ("mcp__calc__fail", "failed")]
    assert "broken" in harness.runtime._mcp.problems


def test_doctor_reports_a_server_that_does_not_start(harness: Any) -> None:
    settings = harness.runtime.settings
    found = asyncio.run(check_servers(settings, skill_registry(settings, None)))
    assert set(found) == {"calc", "broken"} and found["calc"] is None
    assert found["broken"].startswith("FileNotFoundError") and "mcp-server" in found["broken"]


def test_nini_doctor_lists_each_mcp_server(harness: Any) -> None:
    from nini.doctor import run_checks

    checks = {c.name: c for c in run_checks(harness.runtime.settings)}
    assert checks["mcp calc"].ok and not checks["mcp broken"].ok and "left out of runs" in checks["mcp broken"].detail
