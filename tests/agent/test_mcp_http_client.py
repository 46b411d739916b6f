"""The agent calls a tool of an MCP server over streamable HTTP that wants a token: nini's own
``/nini/mcp`` on a real ``jupyter server`` (another process, another NINI_HOME). The token reaches
it as a header whose value names an environment variable (``${LAB_TOKEN}``), never written in
settings.json; a server without the token, or whose variable is unset, is left out with the reason."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_ext.serve import ServerProcess
from nini.history.store import HistoryStore
from tests.conftest import runtime_harness, scripted_model_settings
from tests.llm_server import ScriptedLLM, text, tool_call

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def lab() -> Iterator[tuple[ServerProcess, Path]]:
    """A Jupyter server with nini, in a NINI_HOME of its own."""
    with tempfile.TemporaryDirectory(prefix="nini-lab-") as tmp:
        root = Path(tmp)
        (root / "home").mkdir()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("NINI_", "JUPYTER_"))}
        env.update(
            NINI_HOME=str(root / "home"),
            JUPYTER_CONFIG_DIR=str(root / "config"),
            JUPYTER_RUNTIME_DIR=str(root / "runtime"),
        )
        server = ServerProcess.start(root_dir=root, env=env)
        try:
            yield server, root / "home"
        finally:
            server.stop()


@pytest.fixture(scope="module")
def harness(
    tmp_path_factory: pytest.TempPathFactory, llm: ScriptedLLM, lab: tuple[ServerProcess, Path]
) -> Iterator[Any]:
    server, _ = lab
    url = server.url + "nini/mcp"
    servers = [
        {"name": "lab", "url": url, "env": ["LAB_TOKEN"], "headers": {"Authorization": "Bearer ${LAB_TOKEN}"}},
        {"name": "anonymous", "url": url},
        {
            "name": "unset",
            "url": url,
            "env": ["NOT_SET_ANYWHERE"],
            "headers": {"Authorization": "Bearer ${NOT_SET_ANYWHERE}"},
        },
    ]
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LAB_TOKEN", server.token)
        patch.delenv("NOT_SET_ANYWHERE", raising=False)
        yield from runtime_harness(tmp_path_factory, scripted_model_settings(llm) | {"mcp": {"servers": servers}})


def test_the_agent_runs_code_on_a_jupyter_server_through_its_mcp_endpoint(
    harness: Any, llm: ScriptedLLM, lab: tuple[ServerProcess, Path]
) -> None:
    session = harness.session()
    llm.reply(tool_call("mcp__lab__run_code", code="print(6 * 7)", label="remote"), text("It printed 42."))
    result = harness.loop.run_until_complete(harness.runtime.agent.run(session, "what is 6 times 7, computed there?"))
    assert result.completed_normally and result.answer == "It printed 42."
    offered = {tool["function"]["name"] for tool in llm.requests[0]["tools"]}
    assert {"mcp__lab__run_code", "mcp__lab__run_r_code"} & offered and not any(
        "anonymous" in n or "unset" in n for n in offered
    )
    assert "42" in [m for m in llm.requests[1]["messages"] if m["role"] == "tool"][-1]["content"]
    assert [(c["tool_name"], c["status"]) for c in harness.runtime.store.list_tool_calls(session.id)] == [
        ("mcp__lab__run_code", "succeeded")
    ]
    problems = harness.runtime._mcp.problems
    assert "HTTP 403 POLICY_VIOLATION" in problems["anonymous"], problems
    assert "the environment variable NOT_SET_ANYWHERE is not set" in problems["unset"]
    remote = HistoryStore(f"sqlite:///{lab[1] / 'nini.db'}")  # the lab's own record has the call too
    try:
        calls = [(c["tool_name"], c["status"]) for s in remote.list_sessions() for c in remote.list_tool_calls(s["id"])]
    finally:
        remote.close()
    assert calls == [("run_code", "succeeded")]
    assert server_token_absent(harness.runtime.settings.home, lab[0].token)


def server_token_absent(home: Path, token: str) -> bool:
    """The token was never written into nini's settings or record."""
    return all(token.encode() not in path.read_bytes() for path in home.rglob("*") if path.is_file())
