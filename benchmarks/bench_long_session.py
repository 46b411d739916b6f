"""Long sessions (issue 38): an ask costs the same in a session of 10,000 turns as in one of 10, and
a server under steady load does not slow down as its sessions grow.

A turn builds its model context in O(budget): it reads the newest messages backwards down to the
running summary and folds what no longer fits into it once (nini/agent/context.py). Before that,
every turn read and parsed every message of its session: an ask took 0.083 s in a fresh session and
0.387 s in one of 744 messages, and under 20 clients for 15 minutes the median ask went from 1.71 s
(the first 100 s) to 7.24 s (the last 100 s).

One real ``jupyter server`` with nini, its default SQLite store, the scripted model server
(tests/llm_server.py) answering text, the calls the sidebar makes (REST ask, then the turn's ``done``
event on the session's WebSocket; REST run-code):

1. turn time vs session length: sessions of 10, 1,000 and 10,000 recorded turns (written into the
   store in one insert each: a request, a run_code call, its output of a few KB, an answer), with
   the default ``agent.context_max_tokens`` (64,000), so the long ones fill the window. Each
   session's first ask folds its older turns into the summary (the model writes the narrative,
   purpose ``summarize``, routed to a model name of its own here) and is reported apart; then
   ``ASKS`` asks per session (``--quick``: 8), round-robin so that the machine's load hits them
   alike. Goal: the 10,000-turn session's median <= 1.2x the 10-turn session's.
2. sustained load: 20 clients, each its own session, each asking then running ``x = 1`` in a loop
   for 15 minutes (``--quick``: 3), kernels as bench_team.py starts them (sandboxed where bubblewrap
   works), all started before the clock. Asks completed and their p50 per 100-s window (``--quick``:
   30 s). Goal: the last window's p50 <= 1.3x the first's.

Measured at 5c5e304 (2 cores, quiet): 10 / 1,000 / 10,000 turns p50 34.9 / 39.5 / 36.5 ms (1.05x at
10,000); under load 823 ms in the first 100 s and 969 ms in the last (1.18x), 12,328 asks, server CPU
per ask and run-code 63.0 -> 70.9 ms while the context p50 grew from 2,689 to 27,349 tokens.

A missed goal is reported (benchmarks/goals.py), never an exit status: the script exits non-zero
only when it crashed.
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
from tornado.websocket import WebSocketClientConnection, websocket_connect

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from goals import goal  # noqa: E402

from jupyter_ext.serve import ServerProcess  # noqa: E402
from nini.history.store import HistoryStore  # noqa: E402
from tests.conftest import record_turns, scripted_model_settings, write_settings  # noqa: E402
from tests.llm_server import ScriptedLLM, text  # noqa: E402

BENCH = "bench_long_session"
QUICK = "--quick" in sys.argv[1:]
LENGTHS = (10, 1_000, 10_000)  # recorded turns of the sessions of part 1
ASKS = 8 if QUICK else 20  # timed asks per session, after the first
CLIENTS = 20
LOAD_S = 180 if QUICK else 900
WINDOW_S = 30 if QUICK else 100
ASK_TIMEOUT_S = 600  # a first ask folds 10,000 turns: long on a loaded machine, never forever
QUESTION = "what is the mean revenue of the latest batch?"
ANSWER = "The mean revenue of the latest batch is in the last step."
NARRATIVE = "Earlier turns asked for the mean revenue of one batch after another."
SUMMARY_MODEL = "summary"  # purpose summarize's model name: its replies are queued apart
OUTPUT = "revenue by month\n" + "\n".join(f"2024-{m:02d}  {m * 1013.25:,.2f}" for m in range(1, 13)) * 16


class Client:
    """One session as the sidebar sees it: REST calls, and its events on a WebSocket."""

    def __init__(self, server: ServerProcess, http: AsyncHTTPClient, session_id: str) -> None:
        self.server, self.http, self.session_id = server, http, session_id
        self.folds = 0  # context_summary events: turns folded into the summary
        self._done: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._socket: WebSocketClientConnection | None = None
        self._reader: asyncio.Task[None] | None = None

    @classmethod
    async def create(cls, server: ServerProcess, http: AsyncHTTPClient, title: str) -> Client:
        made = await post(server, http, "sessions", {"title": title})
        client = cls(server, http, made["id"])
        url = server.url.replace("http://", "ws://") + f"nini/api/sessions/{client.session_id}/events?since=0"
        client._socket = await websocket_connect(HTTPRequest(url, headers=server.headers))
        client._reader = asyncio.ensure_future(client._read())
        return client

    async def ask(self, message: str) -> tuple[float, dict[str, Any]]:
        """Seconds from the ask's POST to its turn's ``done`` event, and that event's data."""
        start = time.perf_counter()
        turn_id = (await post(self.server, self.http, f"sessions/{self.session_id}/ask", {"message": message}))[
            "turn_id"
        ]
        data = await asyncio.wait_for(self._future(turn_id), ASK_TIMEOUT_S)
        elapsed = time.perf_counter() - start
        del self._done[turn_id]
        return elapsed, data

    async def run_code(self, code: str) -> bool:
        reply = await post(self.server, self.http, f"sessions/{self.session_id}/run-code", {"code": code})
        return bool(reply.get("success"))

    def close(self) -> None:
        if self._reader is not None:
            self._reader.cancel()
        if self._socket is not None:
            self._socket.close()

    def _future(self, turn_id: str) -> asyncio.Future[dict[str, Any]]:
        """The future of ``turn_id``'s done, made by whichever comes first: the ask or the event."""
        return self._done.setdefault(turn_id, asyncio.get_running_loop().create_future())

    async def _read(self) -> None:
        assert self._socket is not None
        try:
            while (message := await self._socket.read_message()) is not None:
                event = json.loads(message)
                if event["type"] == "done":
                    found = self._future(event["turn_id"])
                    if not found.done():
                        found.set_result(event["data"])
                elif event["type"] == "context_summary":
                    self.folds += 1
        finally:  # the socket ended: no done will come, an ask waiting for one fails now
            for waiting in self._done.values():
                if not waiting.done():
                    waiting.set_exception(ConnectionError(f"session {self.session_id}: its event socket closed"))


async def post(server: ServerProcess, http: AsyncHTTPClient, path: str, body: dict[str, Any]) -> dict[str, Any]:
    """POST to nini's API; the reply's data, or RuntimeError saying what the server answered."""
    response = await http.fetch(
        server.url + "nini/api/" + path, method="POST", body=json.dumps(body), headers=server.headers, raise_error=False
    )
    reply = json.loads(response.body) if response.body else {}
    if not reply.get("ok"):
        raise RuntimeError(f"POST {path}: HTTP {response.code}: {response.body[:500]!r}")
    return reply["data"]


async def keep_answering(llm: ScriptedLLM, stopping: asyncio.Event) -> None:
    """Keep text answers queued for any model (a turn's chat call, and any call a stop hook makes),
    and forget the requests recorded: a full window is a request of a few hundred KB."""
    while not stopping.is_set():
        if llm.pending() < 200:
            llm.reply(*[text(ANSWER)] * 400)
        for recorded in (llm.requests, llm.request_headers, llm.paths):
            recorded.clear()
        try:
            await asyncio.wait_for(stopping.wait(), 0.2)
        except TimeoutError:
            pass


def percentile(values: list[float], q: int) -> float:
    if len(values) < 2:
        return values[0] if values else float("nan")
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


async def turn_time(server: ServerProcess, http: AsyncHTTPClient, database: str) -> dict[str, Any]:
    """Part 1: the first ask of each session (the fold), then ``ASKS`` timed asks each, round-robin."""
    clients = [await Client.create(server, http, f"{n:,} turns") for n in LENGTHS]
    store = HistoryStore(database)
    try:
        for n, client in zip(LENGTHS, clients, strict=True):
            started = time.perf_counter()
            count = record_turns(store, client.session_id, n, OUTPUT)
            print(f"  recorded {n:,} turns ({count:,} messages) in {time.perf_counter() - started:.1f} s")
    finally:
        store.close()
    first = {}
    for n, client in zip(LENGTHS, clients, strict=True):
        first[n], data = await client.ask(QUESTION)
        print(f"  first ask, {n:,} turns: {first[n]:.2f} s ({client.folds} fold(s); {context_line(data)})")
    times: dict[int, list[float]] = {n: [] for n in LENGTHS}
    last: dict[int, dict[str, Any]] = {}
    failed = 0
    for _ in range(ASKS):
        for n, client in zip(LENGTHS, clients, strict=True):
            seconds, last[n] = await client.ask(QUESTION)
            times[n].append(seconds)
            failed += not last[n].get("completed_normally")
    folds = {n: client.folds for n, client in zip(LENGTHS, clients, strict=True)}
    for client in clients:
        client.close()
    return {"first": first, "times": times, "last": last, "failed": failed, "folds": folds}


def context_line(data: dict[str, Any]) -> str:
    context = data.get("context") or {}
    return (
        f"context {context.get('tokens', 0):,} tokens of {context.get('budget', 0):,}, "
        f"{context.get('turns', 0)} turns whole, {context.get('summarized_turns', 0):,} summarized"
    )


async def sustained(server: ServerProcess, http: AsyncHTTPClient, database: Path) -> dict[str, Any]:
    """Part 2: ``CLIENTS`` clients asking then running code, each in its own session, for ``LOAD_S``.

    Beside the asks' times, per window: the run-codes' p50, the server process's CPU per ask and
    run-code (its own work, kernels apart: flat when a slower ask is the machine's doing, not the
    server's), the asks' context tokens and the SQLite WAL's size."""
    import psutil

    clients = [await Client.create(server, http, f"client {n}") for n in range(CLIENTS)]
    started = time.perf_counter()
    warm = await asyncio.gather(*(client.run_code("pass") for client in clients))  # every kernel up first
    print(f"  {CLIENTS} kernels started in {time.perf_counter() - started:.1f} s ({sum(warm)} ran their first step)")
    windows = LOAD_S // WINDOW_S
    asks: list[list[float]] = [[] for _ in range(windows)]  # each ask's seconds, by the window it ended in
    runs: list[list[float]] = [[] for _ in range(windows)]
    tokens: list[list[int]] = [[] for _ in range(windows)]  # the asks' context, as their done reports it
    counts = {"asks_failed": 0, "runs_failed": 0}
    process = psutil.Process(server.process.pid)
    cpu, wal = [sum(process.cpu_times()[:2])], []
    start = time.monotonic()
    end = start + LOAD_S

    def window() -> int:  # one ending after the clock stopped counts in the last
        return min(int((time.monotonic() - start) // WINDOW_S), windows - 1)

    async def work(client: Client) -> None:
        while time.monotonic() < end:
            seconds, data = await client.ask(QUESTION)
            asks[window()].append(seconds)
            tokens[window()].append((data.get("context") or {}).get("tokens", 0))
            counts["asks_failed"] += not data.get("completed_normally")
            began = time.perf_counter()
            ran = await client.run_code("x = 1")
            runs[window()].append(time.perf_counter() - began)
            counts["runs_failed"] += not ran

    async def sample() -> None:
        for index in range(1, windows + 1):
            await asyncio.sleep(max(0.0, start + index * WINDOW_S - time.monotonic()))
            cpu.append(sum(process.cpu_times()[:2]))
            found = database.with_name(database.name + "-wal")
            wal.append(found.stat().st_size / 2**20 if found.exists() else 0.0)

    sampling = asyncio.ensure_future(sample())
    try:
        await asyncio.gather(*(work(client) for client in clients))
        await sampling
    finally:
        sampling.cancel()
        for client in clients:
            client.close()
    cpu_per_ask = [(cpu[i + 1] - cpu[i]) / max(len(asks[i]), 1) for i in range(windows)]
    return {"windows": asks, "runs": runs, "tokens": tokens, "cpu_per_ask": cpu_per_ask, "wal_mb": wal, **counts}


def report(part1: dict[str, Any], part2: dict[str, Any]) -> None:
    """One block: what was measured, with the ratios, then the goals' lines."""
    times = part1["times"]
    base50, base95 = statistics.median(times[LENGTHS[0]]), percentile(times[LENGTHS[0]], 95)
    mode = " (--quick)" if QUICK else ""
    print(
        f"\n{BENCH}{mode}: one jupyter server, SQLite store, scripted model; asks through REST, done on the WebSocket"
    )
    print(f"1. turn time vs session length: {ASKS} asks per session after the first, round-robin")
    for n in LENGTHS:
        p50, p95 = statistics.median(times[n]), percentile(times[n], 95)
        print(
            f"  {n:>6,} turns: first ask {part1['first'][n]:6.2f} s; then p50 {p50 * 1000:7.1f} ms, "
            f"p95 {p95 * 1000:7.1f} ms = {p50 / base50:4.2f}x p50, {p95 / base95:4.2f}x p95 of {LENGTHS[0]} turns; "
            f"{part1['folds'][n]} fold(s); last ask's {context_line(part1['last'][n])}"
        )
    long_ratio = statistics.median(times[LENGTHS[-1]]) / base50
    full_ratio = statistics.median(times[LENGTHS[-1]]) / statistics.median(times[LENGTHS[-2]])
    print(
        f"  {LENGTHS[-1]:,} turns against {LENGTHS[-2]:,} (both a full window: session length alone): "
        f"{full_ratio:.2f}x p50; asks that did not end normally: {part1['failed']}"
    )
    print(f"2. sustained load: {CLIENTS} clients, each its own session, ask then run-code 'x = 1', for {LOAD_S} s")
    p50s = []
    for index, window in enumerate(part2["windows"]):
        p50 = statistics.median(window) if window else float("nan")
        p50s.append(p50)
        runs = part2["runs"][index]
        print(
            f"  {index * WINDOW_S:>4}-{(index + 1) * WINDOW_S:<4} s: {len(window):5,} asks completed, "
            f"p50 {p50 * 1000:7.1f} ms; run-code p50 {statistics.median(runs) * 1000 if runs else 0:7.1f} ms; "
            f"server CPU {part2['cpu_per_ask'][index] * 1000:5.1f} ms per ask + run-code; "
            f"context p50 {statistics.median(part2['tokens'][index] or [0]):6,.0f} tokens; "
            f"WAL {part2['wal_mb'][index]:5.1f} MiB"
        )
    growth = p50s[-1] / p50s[0]
    asked, ran = sum(map(len, part2["windows"])), sum(map(len, part2["runs"]))
    print(
        f"  {asked:,} asks ({part2['asks_failed']} did not end normally), {ran:,} run-codes "
        f"({part2['runs_failed']} failed); last window's p50 / first's = {growth:.2f}x"
    )
    print(
        f"  goals: {LENGTHS[-1]:,}-turn p50 ratio {long_ratio:.2f}x (<= 1.2x), load p50 growth {growth:.2f}x (<= 1.3x)"
    )
    goal(
        BENCH,
        f"ask p50 in a {LENGTHS[-1]:,}-turn session <= 1.2x a {LENGTHS[0]}-turn session's",
        f"{long_ratio:.2f}x",
        long_ratio <= 1.2 and part1["failed"] == 0,
    )
    goal(
        BENCH,
        f"{CLIENTS} clients for {LOAD_S} s: last {WINDOW_S}-s window's ask p50 <= 1.3x the first's",
        f"{growth:.2f}x",
        growth <= 1.3 and part2["asks_failed"] == 0,
    )


async def main() -> int:
    llm = ScriptedLLM().start()
    stopping = asyncio.Event()
    answering = asyncio.ensure_future(keep_answering(llm, stopping))
    try:
        with tempfile.TemporaryDirectory(prefix="nini-bench-long-session-") as tmp:
            root = Path(tmp)
            settings = scripted_model_settings(llm)
            settings["llm"]["purposes"] = {"summarize": {"provider": "local", "model": SUMMARY_MODEL}}
            write_settings(root / "home", settings)
            llm.reply(*[text(NARRATIVE)] * 4, model=SUMMARY_MODEL)  # one per fold; others fall back to ANSWER
            env = {
                **{k: v for k, v in os.environ.items() if not k.startswith(("NINI_", "JUPYTER_"))},
                "NINI_HOME": str(root / "home"),
                "JUPYTER_CONFIG_DIR": str(root / "config"),
                "JUPYTER_RUNTIME_DIR": str(root / "runtime"),
            }
            http = AsyncHTTPClient(force_instance=True, max_clients=CLIENTS + 4, defaults={"request_timeout": 600})
            with (root / "server.log").open("wb") as log:
                server = ServerProcess.start(
                    root_dir=root, env=env, output=log, args=("--NiniExtensionApp.sandbox=auto",)
                )
                try:
                    print(f"{BENCH}: 1. turn time vs session length ({', '.join(f'{n:,}' for n in LENGTHS)} turns)")
                    part1 = await turn_time(server, http, f"sqlite:///{root / 'home' / 'nini.db'}")
                    print(f"{BENCH}: 2. {CLIENTS} clients for {LOAD_S} s")
                    part2 = await sustained(server, http, root / "home" / "nini.db")
                finally:
                    server.stop()
                    http.close()
    finally:
        stopping.set()
        await answering
        llm.stop()
    report(part1, part2)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
