"""A team on one server: 20 simulated users, each with its own session, asking (scripted model) and
running code at once, on one real `jupyter server` whose store is PostgreSQL, with a WebSocket
watcher on each session. Against one user doing the same alone on the same server, in the same run.

Reported: every event delivered in seq order to every watcher, and the same as the database holds
(nothing lost or doubled); every run-code recorded; p50/p95 REST latency of run-code for the team
as a ratio to the user alone. Each user runs its calls one after the other, so latency is what a
user waits while 19 others work, not queueing of its own.

PostgreSQL runs in a throwaway cluster (tests/pg_cluster.py); the benchmark says why and stops
where PostgreSQL is not installed.
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

from tornado.httpclient import AsyncHTTPClient, HTTPRequest
from tornado.websocket import websocket_connect

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from jupyter_ext.serve import ServerProcess  # noqa: E402
from nini.history.store import HistoryStore  # noqa: E402
from tests import pg_cluster  # noqa: E402
from tests.conftest import scripted_model_settings, write_settings  # noqa: E402
from tests.llm_server import ScriptedLLM, text  # noqa: E402

USERS = 20
CALLS = 5  # run-code calls per user
CODE = "total = sum(range(100_000))\nresult = total"
ANSWER = "The total is in the last step."


class User:
    """One simulated user: a session, a watcher on it, a question and run-code calls."""

    def __init__(self, server: ServerProcess, name: str) -> None:
        self.server, self.name = server, name
        self.http = AsyncHTTPClient(force_instance=True, defaults={"request_timeout": 300})
        self.session_id = ""
        self.seqs: list[int] = []
        self.types: list[str] = []
        self.warm, self.ready = asyncio.Event(), asyncio.Event()

    async def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        response = await self.http.fetch(
            self.server.url + path, method="POST", body=json.dumps(body), headers=self.server.headers
        )
        return json.loads(response.body)

    async def work(self) -> list[float]:
        """Ask, run CALLS steps, wait for the answer; the run-code latencies (s)."""
        self.session_id = (await self.post("nini/api/sessions", {"title": self.name}))["data"]["id"]
        await self.post(f"nini/api/sessions/{self.session_id}/run-code", {"code": "pass"})  # starts its kernel
        self.warm.set()
        await self.ready.wait()  # every user's kernel is up: measure the work, not 20 kernels starting
        url = self.server.url.replace("http://", "ws://") + f"nini/api/sessions/{self.session_id}/events?since=0"
        socket = await websocket_connect(HTTPRequest(url, headers=self.server.headers))
        watcher = asyncio.ensure_future(self._watch(socket))
        asked = await self.post(f"nini/api/sessions/{self.session_id}/ask", {"message": "What is the total?"})
        assert asked["ok"], asked
        latencies = []
        for _ in range(CALLS):
            start = time.perf_counter()
            reply = await self.post(f"nini/api/sessions/{self.session_id}/run-code", {"code": CODE})
            latencies.append(time.perf_counter() - start)
            assert reply["ok"] and reply["data"]["success"], reply
        self._watcher, self._socket = watcher, socket
        return latencies

    async def settle(self, stored_last_seq: int) -> None:
        """Read the watcher until it has seen the last stored event (or 60 s of silence)."""
        deadline = time.monotonic() + 60
        while (not self.seqs or self.seqs[-1] < stored_last_seq) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        self._watcher.cancel()
        self._socket.close()

    async def _watch(self, socket: Any) -> None:
        while True:
            message = await socket.read_message()
            if message is None:
                return
            event = json.loads(message)
            self.seqs.append(event["seq"])
            self.types.append(event["type"])


async def phase(server: ServerProcess, store: HistoryStore, users: int) -> dict[str, Any]:
    team = [User(server, f"user {n}") for n in range(users)]
    working = asyncio.gather(*(user.work() for user in team))
    warm = asyncio.ensure_future(asyncio.gather(*(user.warm.wait() for user in team)))
    await asyncio.wait([warm, working], return_when=asyncio.FIRST_COMPLETED)  # a failing user fails fast
    started = time.perf_counter()
    for user in team:
        user.ready.set()
    latencies = await working
    # the answer's "done" is the last event of a turn: wait for every turn to end
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and not all(
        any(e["type"] == "done" for e in store.list_events(u.session_id)) for u in team
    ):
        await asyncio.sleep(0.2)
    elapsed = time.perf_counter() - started
    stored = {u.session_id: store.list_events(u.session_id) for u in team}
    await asyncio.gather(*(u.settle(stored[u.session_id][-1]["seq"]) for u in team))
    return {
        "latencies": [x for user in latencies for x in user],
        "elapsed": elapsed,
        "watchers_exact": sum(u.seqs == [e["seq"] for e in stored[u.session_id]] for u in team),
        "gapless": sum(
            [e["seq"] for e in stored[u.session_id]] == list(range(1, len(stored[u.session_id]) + 1)) for u in team
        ),
        "recorded": sum(
            len([c for c in store.list_tool_calls(u.session_id) if c["tool_name"] == "run_code"]) == CALLS + 1
            and any(m["role"] == "assistant" and m["content"] == ANSWER for m in store.list_messages(u.session_id))
            for u in team
        ),
        "events": sum(len(u.seqs) for u in team),
        "users": users,
    }


def ms(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[int(q * 100) - 1] * 1000


def report(name: str, result: dict[str, Any], alone: dict[str, Any] | None = None) -> None:
    p50, p95 = ms(result["latencies"], 0.5), ms(result["latencies"], 0.95)
    line = f"  {name:<30} run-code p50 {p50:7.1f} ms  p95 {p95:7.1f} ms   all done in {result['elapsed']:5.1f} s"
    if alone is not None:
        line += f"   {p50 / ms(alone['latencies'], 0.5):5.2f}x p50, {p95 / ms(alone['latencies'], 0.95):5.2f}x p95"
    print(line)
    print(
        f"  {'':<30} watchers with exactly the stored events, in order: {result['watchers_exact']} of "
        f"{result['users']} ({result['events']:,} events); gapless seqs: {result['gapless']}; "
        f"sessions with every record: {result['recorded']}"
    )


async def main() -> int:
    reason = pg_cluster.unavailable()
    if reason:
        print(f"bench_team: skipped ({reason})")
        return 0
    cluster = pg_cluster.start()
    llm = ScriptedLLM().start()
    try:
        with tempfile.TemporaryDirectory(prefix="nini-bench-team-") as tmp:
            root = Path(tmp)
            url = cluster.create_database("team")
            write_settings(root / "home", scripted_model_settings(llm))
            llm.reply(*[text(ANSWER) for _ in range(4 * (USERS + 2))])  # one per turn, and room for extras
            env = {
                **{k: v for k, v in os.environ.items() if not k.startswith(("NINI_", "JUPYTER_"))},
                "NINI_HOME": str(root / "home"),
                "NINI_DATABASE_URL": url,
                "JUPYTER_CONFIG_DIR": str(root / "config"),
                "JUPYTER_RUNTIME_DIR": str(root / "runtime"),
            }
            store = HistoryStore(url)
            with (root / "server.log").open("wb") as log:
                server = ServerProcess.start(
                    root_dir=root, env=env, output=log, args=("--NiniExtensionApp.sandbox=auto",)
                )
                try:
                    await phase(server, store, 1)  # the server's first turn loads what turns share
                    alone = await phase(server, store, 1)
                    team = await phase(server, store, USERS)
                finally:
                    server.stop()
                    store.close()
    finally:
        llm.stop()
        cluster.stop()
    print(
        f"bench_team: {USERS} users at once, each asking once and running {CALLS} run-code calls in its own "
        "session, one jupyter server, PostgreSQL store, a WebSocket watcher per session"
    )
    report("one user alone", alone)
    report(f"{USERS} users at once", team, alone)
    complete = all(team[key] == USERS for key in ("watchers_exact", "gapless", "recorded"))
    print(f"  every watcher got every event in order, nothing lost: {'yes' if complete else 'NO'}")
    return 0 if complete else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
