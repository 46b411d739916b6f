"""The server extension under load: 50 WebSocket watchers of one session while 200 run-code calls
go through REST, against the same 200 calls with nobody watching, in one real `jupyter server`.

Reported: events delivered (every watcher must get every event, seq strictly increasing with no
gap), p50/p95 REST latency of run-code, and the server process's RSS before and after each phase.
The server is a child process on a random port with a token, a temporary NINI_HOME and sandbox
auto; calls are sequential, so latency is one call's round trip, not queueing.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil
from tornado.httpclient import AsyncHTTPClient, HTTPRequest
from tornado.websocket import websocket_connect

from jupyter_ext.serve import ServerProcess

CALLS = 200
WATCHERS = 50
EVENTS_PER_CALL = 3  # tool_call, code_execution, tool_result
CODE = "total = sum(range(1000))\nresult = total"


class Api:
    def __init__(self, server: ServerProcess) -> None:
        self.server = server
        self.http = AsyncHTTPClient(force_instance=True, defaults={"request_timeout": 120})

    async def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        response = await self.http.fetch(
            self.server.url + path, method="POST", body=json.dumps(body), headers=self.server.headers
        )
        return json.loads(response.body)

    async def new_session(self, title: str) -> str:
        return (await self.post("nini/api/sessions", {"title": title}))["data"]["id"]

    async def run_code(self, session_id: str) -> float:
        start = time.perf_counter()
        reply = await self.post(f"nini/api/sessions/{session_id}/run-code", {"code": CODE})
        assert reply["ok"] and reply["data"]["success"], reply
        return time.perf_counter() - start


async def _collect(ws: Any, expected: int) -> list[int]:
    seqs: list[int] = []
    try:
        while len(seqs) < expected:
            message = await asyncio.wait_for(ws.read_message(), 120)
            if message is None:
                break
            seqs.append(json.loads(message)["seq"])
    finally:
        ws.close()
    return seqs


async def phase(api: Api, title: str, watchers: int) -> dict[str, Any]:
    session_id = await api.new_session(title)
    await api.run_code(session_id)  # starts the session's kernel: not part of the measurement
    process = psutil.Process(api.server.process.pid)
    rss_before = process.memory_info().rss
    expected = EVENTS_PER_CALL * (CALLS + 1)
    url = api.server.url.replace("http://", "ws://") + f"nini/api/sessions/{session_id}/events?since=0"
    sockets = [await websocket_connect(HTTPRequest(url, headers=api.server.headers)) for _ in range(watchers)]
    readers = [asyncio.ensure_future(_collect(ws, expected)) for ws in sockets]
    started = time.perf_counter()
    latencies = [await api.run_code(session_id) for _ in range(CALLS)]
    elapsed = time.perf_counter() - started
    delivered = await asyncio.gather(*readers)
    rss_after = process.memory_info().rss
    in_order = sum(seqs == list(range(1, expected + 1)) for seqs in delivered)
    return {
        "latencies": latencies,
        "elapsed": elapsed,
        "rss_before": rss_before,
        "rss_after": rss_after,
        "events_expected": expected * watchers,
        "events_delivered": sum(map(len, delivered)),
        "watchers_complete_in_order": in_order,
        "watchers": watchers,
    }


def quantile(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[int(q * 100) - 1] * 1000


def report(name: str, result: dict[str, Any], baseline: dict[str, Any] | None = None) -> None:
    p50, p95 = quantile(result["latencies"], 0.5), quantile(result["latencies"], 0.95)
    mib = 1024 * 1024
    line = (
        f"  {name:<34} p50 {p50:7.1f} ms  p95 {p95:7.1f} ms  {CALLS / result['elapsed']:6.1f} calls/s  "
        f"server RSS {result['rss_before'] / mib:6.1f} -> {result['rss_after'] / mib:6.1f} MiB"
    )
    if baseline is not None:
        line += (
            f"\n  {'':<34} {p50 / quantile(baseline['latencies'], 0.5):5.2f}x p50, "
            f"{p95 / quantile(baseline['latencies'], 0.95):5.2f}x p95, "
            f"RSS growth {(result['rss_after'] - result['rss_before']) / mib:+.1f} MiB vs "
            f"{(baseline['rss_after'] - baseline['rss_before']) / mib:+.1f} MiB baseline"
        )
    print(line)
    if result["watchers"]:
        print(
            f"  {'':<34} events delivered {result['events_delivered']:,} of {result['events_expected']:,}; "
            f"watchers with every event in seq order: {result['watchers_complete_in_order']} of {result['watchers']}"
        )


async def main() -> int:
    with tempfile.TemporaryDirectory(prefix="nini-bench-server-") as tmp:
        root = Path(tmp)
        (root / "home").mkdir()
        env = {
            **_base_env(),
            "NINI_HOME": str(root / "home"),
            "JUPYTER_CONFIG_DIR": str(root / "config"),
            "JUPYTER_RUNTIME_DIR": str(root / "runtime"),
        }
        with (root / "server.log").open("wb") as log:
            server = ServerProcess.start(root_dir=root, env=env, output=log, args=("--NiniExtensionApp.sandbox=auto",))
            try:
                api = Api(server)
                baseline = await phase(api, "baseline", 0)
                watched = await phase(api, "watched", WATCHERS)
            finally:
                server.stop()
    print(
        f"bench_server: {CALLS} sequential run-code calls through REST on one session (real jupyter server, "
        "token auth, sandbox auto)"
    )
    report("baseline: no WebSocket watchers", baseline)
    report(f"with {WATCHERS} WebSocket watchers", watched, baseline)
    complete = watched["watchers_complete_in_order"] == WATCHERS and (
        watched["events_delivered"] == watched["events_expected"]
    )
    print(f"  every watcher got every event in order: {'yes' if complete else 'NO'}")
    return 0 if complete else 1


def _base_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("NINI_", "JUPYTER_"))}


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
