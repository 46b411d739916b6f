"""What MCP costs on a call: run_code (``x = 1`` on a warm sandboxed kernel) through nini's MCP
server, against the same call without MCP, each pair measured in this run.

1. ``nini mcp`` over stdio (the SDK's own client, the server a child process) versus
   ``invoke(session, "run_code", ...)`` in this process.
2. ``/nini/mcp`` over streamable HTTP (the SDK's client with the server's token) versus
   ``POST /nini/api/sessions/ID/run-code`` on the same real ``jupyter server``.

Goal: MCP adds at most a few milliseconds, so both ratios stay <= 1.5x. Reported: median and p95 of
CALLS sequential calls after a warm-up call (which starts the session's kernel).
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx2
from goals import goal
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from jupyter_ext.serve import ServerProcess
from nini.config import load_settings
from nini.runtime import Runtime
from nini.skills.invoke import invoke

CALLS = 60
CODE = {"code": "x = 1"}
GOAL = 1.5
NINI = str(Path(sys.executable).with_name("nini"))


async def timed(call: Callable[[], Awaitable[Any]]) -> list[float]:
    await call()  # the warm-up: the session's kernel starts here
    times = []
    for _ in range(CALLS):
        start = time.perf_counter()
        await call()
        times.append(time.perf_counter() - start)
    return times


def summary(times: list[float]) -> tuple[float, float]:
    return statistics.median(times) * 1000, statistics.quantiles(times, n=20)[-1] * 1000


def show(name: str, times: list[float], baseline: list[float] | None = None) -> float:
    p50, p95 = summary(times)
    line = f"  {name:<44} p50 {p50:7.2f} ms  p95 {p95:7.2f} ms"
    ratio = 1.0
    if baseline is not None:
        ratio = p50 / summary(baseline)[0]
        line += f"  {ratio:5.2f}x p50 ({'meets' if ratio <= GOAL else 'misses'} the goal <= {GOAL}x)"
    print(line, flush=True)
    if baseline is not None:
        goal("bench_mcp", f"{name} p50 <= {GOAL}x its baseline", f"{ratio:.2f}x", ratio <= GOAL)
    return ratio


async def direct(home: Path, project: Path) -> list[float]:
    async with Runtime(load_settings(home=home), project_dir=project) as runtime:
        session = runtime.create_session(title="bench direct")

        async def call() -> None:
            result = await invoke(session, "run_code", dict(CODE))
            assert result.success, result.to_dict()

        return await timed(call)


async def over_stdio(home: Path, project: Path, env: dict[str, str]) -> list[float]:
    server = StdioServerParameters(
        command=NINI, args=["--project-dir", str(project), "mcp"], env={**env, "NINI_HOME": str(home)}
    )
    async with stdio_client(server) as (read, write), ClientSession(read, write) as client:
        await client.initialize()

        async def call() -> None:
            result = await client.call_tool("run_code", dict(CODE))
            assert not result.is_error, result

        return await timed(call)


async def over_http(server: ServerProcess) -> tuple[list[float], list[float]]:
    headers = {"Authorization": f"Bearer {server.token}"}
    async with httpx2.AsyncClient(headers=headers, timeout=120) as http:
        session_id = (await http.post(server.url + "nini/api/sessions", json={"title": "bench rest"})).json()["data"][
            "id"
        ]

        async def rest() -> None:
            reply = (await http.post(server.url + f"nini/api/sessions/{session_id}/run-code", json=CODE)).json()
            assert reply["ok"] and reply["data"]["success"], reply

        rest_times = await timed(rest)
        async with (
            streamable_http_client(server.url + "nini/mcp", http_client=http) as (read, write),
            ClientSession(read, write) as client,
        ):
            await client.initialize()

            async def call() -> None:
                result = await client.call_tool("run_code", dict(CODE))
                assert not result.is_error, result

            mcp_times = await timed(call)
    return rest_times, mcp_times


async def main() -> int:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NINI_", "JUPYTER_"))}
    with tempfile.TemporaryDirectory(prefix="nini-bench-mcp-") as tmp:
        root = Path(tmp)
        project = root / "project"
        project.mkdir()
        print(f"run_code 'x = 1' on a warm kernel, {CALLS} sequential calls each (sandbox: auto)")
        baseline = await direct(root / "home-direct", project)
        show("invoke() in this process (baseline)", baseline)
        stdio_ratio = show("nini mcp over stdio", await over_stdio(root / "home-stdio", project, env), baseline)
        server_env = {
            **env,
            "NINI_HOME": str(root / "home-server"),
            "JUPYTER_CONFIG_DIR": str(root / "config"),
            "JUPYTER_RUNTIME_DIR": str(root / "runtime"),
        }
        with (root / "server.log").open("wb") as log:
            server = ServerProcess.start(root_dir=project, env=server_env, output=log)
            try:
                rest, mcp = await over_http(server)
            finally:
                server.stop()
        show("POST .../run-code on jupyter server (baseline)", rest)
        http_ratio = show("/nini/mcp over streamable HTTP", mcp, rest)
        print(json.dumps({"stdio_vs_invoke": round(stdio_ratio, 2), "http_vs_rest": round(http_ratio, 2)}))
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
