"""Durability and bounded records (issue 18), each against a baseline measured in the same run.

(a) kill -9 of ``nini run-code --save-as`` at random moments (``NINI_BENCH_KILLS``, default 200):
    afterwards every dataset is readable and equal to what its record says, and the next start
    leaves no temp file, stale runtime folder or unrecorded dataset version behind;
(b) peak RSS of nini for a small ``--label``/``--save-as`` run in a session that already holds a
    ``NINI_BENCH_BIG_MB`` (default 200) MB output, as a ratio to the same run in a fresh session
    (goal <= 1.2x);
(c) ``nini sessions show`` on that session (goal < 1 s), as a ratio to a fresh session's.

Memory is VmHWM of the process running nini's CLI (the kernel is a process of its own).

(d) a long-running server stays bounded (issue 36): a real ``jupyter server`` with nini, its memory
    (RSS of the server and every process under it: kernels, their sandboxes, R workers) and live
    kernels idle, under 20 clients (each its own session, run-code through REST in a loop) for 5
    minutes, and 2 minutes after the load stopped, with the idle timeout set short for the benchmark
    (``execution.cull_idle_seconds`` 30 s, checked every 5 s; the default is an hour) and the default
    cap of 16 live kernels. Goal: back within 10% of the idle server, no kernel left beyond the cap.
    ``--quick`` (make bench): 30 s of load, 15 s idle timeout, measured 45 s after.

(e) store throughput with the single-transaction end (issue 36): tool calls per second (start with
    its ``tool_call`` event, end with ``code_execution`` and ``tool_result``), by 1 and by 8 threads
    (each its own session), on SQLite and on PostgreSQL (a throwaway cluster, fsync on; skipped where
    it is not installed): the end and its events in one transaction (the store's path now) against
    the old path (the call's row, then each event in a transaction of its own) in the same run.
    Goal: unchanged within noise (ratio >= 0.9x).
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from uuid import uuid4

from goals import goal

NINI = str(Path(sys.executable).with_name("nini"))
BIG_MB = int(os.environ.get("NINI_BENCH_BIG_MB", "200"))
KILLS = int(os.environ.get("NINI_BENCH_KILLS", "200"))
SMALL_RUN = "import pandas as pd\noutput_df = pd.DataFrame({'x': range(100)})\nprint(len(output_df))\n"
# nini's CLI in this process, then its peak resident set: the kernel it starts is not counted
CHILD = """
import re, sys
from pathlib import Path
from nini.cli import app
try:
    app(sys.argv[1:], standalone_mode=False)
finally:
    print(int(re.search(r"VmHWM:\\s+(\\d+)", Path("/proc/self/status").read_text()).group(1)) / 1024, file=sys.stderr)
"""


def nini(env: dict[str, str], *args: str, stdin: str = "", check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([NINI, *args], input=stdin, env=env, capture_output=True, text=True)
    if check and done.returncode != 0:
        raise SystemExit(f"nini {' '.join(args)} failed: {done.stderr[-2000:]}")
    return done


def peak_mb(env: dict[str, str], *args: str, stdin: str) -> float:
    done = subprocess.run([sys.executable, "-c", CHILD, *args], input=stdin, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"nini {' '.join(args)} failed: {done.stderr[-2000:]}")
    return float(done.stderr.strip().splitlines()[-1])


def timed(env: dict[str, str], *args: str) -> float:
    start = time.perf_counter()
    nini(env, *args)
    return time.perf_counter() - start


def bounded_record(env: dict[str, str]) -> None:
    print(f"(b, c) a session holding a {BIG_MB} MB output")
    nini(env, "run-code", "-", "--session", "fresh", "--new", stdin="print('warm')\n")
    start = time.perf_counter()
    nini(env, "run-code", "-", "--session", "big", "--new", stdin=f"print('x' * {BIG_MB} * 1024 * 1024)\n")
    print(f"  writing it: {time.perf_counter() - start:.1f} s")
    database = Path(env["NINI_HOME"]) / "nini.db"
    print(f"  database: {database.stat().st_size / 2**20:.1f} MB")
    small = ("run-code", "-", "--label", "small", "--save-as", "small")
    fresh = peak_mb(env, *small, "--session", "fresh", stdin=SMALL_RUN)
    big = peak_mb(env, *small, "--session", "big", stdin=SMALL_RUN)
    print(f"  (b) peak RSS of a small run: {big:.0f} MB vs {fresh:.0f} MB fresh = {big / fresh:.2f}x (goal <= 1.2x)")
    goal("bench_durability", "(b) small run's peak RSS <= 1.2x fresh", f"{big / fresh:.2f}x", big / fresh <= 1.2)
    fresh_s = min(timed(env, "sessions", "show", "fresh") for _ in range(3))
    big_s = min(timed(env, "sessions", "show", "big") for _ in range(3))
    print(f"  (c) sessions show: {big_s:.2f} s vs {fresh_s:.2f} s fresh = {big_s / fresh_s:.2f}x (goal < 1 s)")
    goal("bench_durability", "(c) sessions show of a big session < 1 s", f"{big_s:.2f} s", big_s < 1)


def kills(env: dict[str, str], cwd: Path) -> None:
    """(a) SIGKILL ``--save-as`` runs at random moments of their life, then check record against files."""
    from nini.config import load_settings
    from nini.execution.runtime_dirs import OWNER_FILE, token_alive
    from nini.execution.sandbox import runtime_base
    from nini.history.store import HistoryStore

    print(f"(a) {KILLS} runs of nini run-code --save-as killed with SIGKILL at random moments")
    nini(env, "run-code", "-", "--session", "k", "--new", stdin="x = 1\n")
    folder = Path(env["NINI_HOME"]) / "sessions" / "k" / "workspace"
    rng, between, started = random.Random(18), 0, time.perf_counter()
    for run in range(KILLS):
        code = f"import pandas as pd\noutput_df = pd.DataFrame({{'writer': [{run}] * 1000}})\n"
        cli = subprocess.Popen(
            [NINI, "run-code", "-", "--session", "k", "--save-as", f"ds{run % 5}"],
            env=env,
            cwd=cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        cli.stdin.write(code.encode())
        cli.stdin.close()
        time.sleep(rng.uniform(0.0, 2.5))
        cli.kill()
        cli.wait()
        store = HistoryStore.from_settings(load_settings(home=env["NINI_HOME"]))
        recorded = {row["path"] for row in store.list_datasets("k")}
        store.close()
        names = set(os.listdir(folder / "datasets"))
        between += any(n.endswith(".parquet") and f"datasets/{n}" not in recorded for n in names)
    print(f"  {KILLS} kills in {time.perf_counter() - started:.0f} s; {between} left a version no record names yet")
    check = "import json\nprint(json.dumps({n: sorted(set(datasets[n]['writer'])) for n in datasets}))\n"
    read = json.loads(nini(env, "run-code", "-", "--session", "k", stdin=check).stdout)
    store = HistoryStore.from_settings(load_settings(home=env["NINI_HOME"]))
    rows = store.list_datasets("k")
    saved_by = {row["name"]: store.get_execution(row["source_execution_id"])["code"] for row in rows}
    store.close()
    wrong = sum(read.get(name) != [int(code.split("[")[1].split("]")[0])] for name, code in saved_by.items())
    recorded = {row["path"] for row in rows}
    leftovers = sorted(n for n in os.listdir(folder / "datasets") if f"datasets/{n}" not in recorded)
    stale = [
        p
        for base in (runtime_base(), Path("/tmp"))
        for p in base.glob("nini-*-*")
        if (p / OWNER_FILE).is_file()
        and not token_alive("{pid}-{start}".format(**json.loads((p / OWNER_FILE).read_text())))
    ]
    print(
        f"  datasets that differ from their record: {wrong} of {len(rows)}; files left in datasets/: "
        f"{len(leftovers)}; runtime folders of dead processes: {len(stale)} (goal: 0, 0, 0)"
    )
    figure = f"{wrong}, {len(leftovers)}, {len(stale)}"
    goal(
        "bench_durability",
        "(a) after kills: wrong datasets, leftovers, stale folders 0, 0, 0",
        figure,
        figure == "0, 0, 0",
    )


def main() -> None:
    quick = "--quick" in sys.argv[1:]
    with tempfile.TemporaryDirectory(prefix="nini-bench-durability-") as tmp:
        env = {**os.environ, "NINI_HOME": str(Path(tmp) / "home")}
        kills(env, Path(tmp))
        bounded_record(env)
    store_throughput(quick)
    server_memory(quick)  # a missed goal is printed as NOT met, not an exit status: make bench runs on


# (e) store throughput, the single-transaction end against the old path
STEP_ARGUMENTS = {"code": "df.groupby('region')['sales'].sum()", "purpose": "exploration"}
STEP_EVENT = {"language": "python", "status": "succeeded", "stdout": "region\nnorth    120\nsouth     80\n"}


def _calls(store: Any, session_id: str, n_calls: int, single: bool) -> None:
    """``n_calls`` tool calls with their three events, as invoke records them (``single``) or as it did."""
    for n in range(n_calls):
        if single:
            call = store.start_tool_call(
                session_id, "run_code", STEP_ARGUMENTS, turn_id=f"t{n}", events=[("tool_call", {"name": "run_code"})]
            )
            store.finish_tool_call(
                call["id"],
                status="succeeded",
                result={"n": n},
                result_summary="ok",
                events=lambda c: [("code_execution", STEP_EVENT), ("tool_result", {"duration_ms": c["duration_ms"]})],
            )
            continue
        call = store.start_tool_call(session_id, "run_code", STEP_ARGUMENTS, turn_id=f"t{n}")
        store.append_event(session_id, "tool_call", {"name": "run_code"}, tool_call_id=call["id"])
        ended = store.finish_tool_call(call["id"], status="succeeded", result={"n": n}, result_summary="ok")
        store.append_event(session_id, "code_execution", STEP_EVENT, tool_call_id=call["id"])
        store.append_event(session_id, "tool_result", {"duration_ms": ended["duration_ms"]}, tool_call_id=call["id"])


def _rate(url: str, n_calls: int, threads: int, single: bool) -> float:
    """Tool calls per second by ``threads`` threads, each calling ``_calls`` in its own session."""
    import threading

    from nini.history.store import HistoryStore

    store = HistoryStore(url)
    try:
        sessions = [store.create_session(title=f"bench {n}")["id"] for n in range(threads)]
        workers = [threading.Thread(target=_calls, args=(store, s, n_calls // threads, single)) for s in sessions]
        start = time.perf_counter()
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        elapsed = time.perf_counter() - start
        assert sum(len(store.list_events(s)) for s in sessions) == 3 * (n_calls // threads) * threads
    finally:
        store.close()
    return n_calls // threads * threads / elapsed


def store_throughput(quick: bool) -> None:
    """(e): print calls/s of both paths and their ratio, per backend and thread count."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests import pg_cluster

    print(
        "(e) store throughput: tool call start + end + 3 events, one transaction for the end and its events "
        "vs the old path (end, then an event transaction each)"
    )
    reason, cluster = pg_cluster.unavailable(), None
    with tempfile.TemporaryDirectory(prefix="nini-bench-store-") as tmp:
        backends = [("SQLite", lambda: f"sqlite:///{Path(tmp) / uuid4().hex}.db", 1000 if quick else 4000)]
        if reason is None:
            cluster = pg_cluster.start()
            backends.append(("PostgreSQL", cluster.create_database, 300 if quick else 1000))
        else:
            print(f"  PostgreSQL: skipped ({reason})")
        try:
            for backend, new_url, n_calls in backends:
                for threads in (1, 8):
                    old = _rate(new_url(), n_calls, threads, single=False)
                    new = _rate(new_url(), n_calls, threads, single=True)
                    print(
                        f"  {backend}, {threads} thread{'s' if threads > 1 else ''}: {n_calls:,} calls, "
                        f"old path {old:,.0f}/s, single-transaction end {new:,.0f}/s = {new / old:.2f}x "
                        f"(goal >= 0.9x: {'met' if new >= 0.9 * old else 'MISSED'})"
                    )
                    what = f"(e) {backend}, {threads} thread(s): single-transaction end >= 0.9x old path"
                    goal("bench_durability", what, f"{new / old:.2f}x", new >= 0.9 * old)
        finally:
            if cluster is not None:
                cluster.stop()


# (d) a long-running server: one client's step, a little pandas work that leaves a frame in the kernel
LOAD_CODE = (
    "import numpy as np, pandas as pd\n"
    "frame = pd.DataFrame(np.random.default_rng().random((200_000, 5)))\n"
    "result = float(frame.mean().mean())\n"
)
CLIENTS = 20
CAP = 16  # execution.max_live_kernels' default


def footprint(pid: int) -> dict[str, float]:
    """RSS of process ``pid`` and every process under it (MiB), of ``pid`` alone, its live kernels (its
    children that run ipykernel: bwrap or the kernel itself, one per kernel), its own open descriptors
    and threads."""
    import psutil

    server = psutil.Process(pid)
    rss, kernels = server.memory_info().rss, 0
    for child in server.children(recursive=True):
        try:
            rss += child.memory_info().rss
            kernels += child.ppid() == pid and "ipykernel_launcher" in child.cmdline()
        except psutil.Error:  # ended while counted
            pass
    own = server.memory_info().rss / 2**20
    return {
        "rss": rss / 2**20,
        "server": own,
        "kernels": kernels,
        "fds": server.num_fds(),
        "threads": server.num_threads(),
    }


def server_memory(quick: bool) -> bool:
    """(d): the server's footprint idle, under CLIENTS clients, and after; whether the goal was met."""
    import asyncio

    from jupyter_ext.serve import ServerProcess

    load_s, cull_s, after_s = (30, 15, 45) if quick else (300, 30, 120)
    print(
        f"(d) a server under {CLIENTS} clients for {load_s} s, then {after_s} s idle "
        f"(execution.cull_idle_seconds {cull_s} s for this benchmark, checked every 5 s; cap {CAP} kernels)"
    )
    with tempfile.TemporaryDirectory(prefix="nini-bench-server-memory-") as tmp:
        root = Path(tmp)
        (root / "home").mkdir()
        (root / "home" / "settings.json").write_text(
            json.dumps({"r_enabled": False, "execution": {"cull_idle_seconds": cull_s, "cull_interval_seconds": 5}})
        )
        env = {k: v for k, v in os.environ.items() if not k.startswith(("NINI_", "JUPYTER_"))}
        env.update(
            NINI_HOME=str(root / "home"),
            JUPYTER_CONFIG_DIR=str(root / "config"),
            JUPYTER_RUNTIME_DIR=str(root / "runtime"),
        )
        with (root / "server.log").open("wb") as log:
            server = ServerProcess.start(root_dir=root, env=env, output=log)
            try:
                figures = asyncio.run(_load(server, load_s, cull_s, after_s))
            finally:
                server.stop()
    cold, idle, peak, after = figures["cold"], figures["idle"], figures["peak"], figures["after"]

    def state(f: dict[str, Any]) -> str:
        return (
            f"{f['rss']:.0f} MiB ({f['server']:.0f} MiB the server itself), {f['kernels']} kernels, "
            f"{f['fds']} descriptors, {f['threads']} threads"
        )

    print(f"  idle, just started: {state(cold)}")
    print(f"  idle, after one session ran and its kernel was culled (the baseline): {state(idle)}")
    print(
        f"  under load: {figures['calls']} calls ({figures['failed']} failed, {figures['restarted']} said their kernel "
        f"had been culled); peak {state(peak)}: {peak['rss'] / idle['rss']:.1f}x the baseline (cap {CAP} kernels)"
    )
    print(
        f"  {after_s} s after the load: {state(after)}: {after['rss'] / idle['rss']:.2f}x the baseline "
        f"({after['rss'] / cold['rss']:.2f}x just started); {figures['drained']}"
    )
    met = after["rss"] <= 1.1 * idle["rss"] and after["kernels"] <= CAP
    print(f"  goal (within 10% of the idle server, no kernel beyond the cap): {'met' if met else 'NOT met'}")
    figure = f"{after['rss'] / idle['rss']:.2f}x idle, {after['kernels']} kernels"
    goal("bench_durability", "(d) server after load within 1.1x idle, kernels <= cap", figure, met)
    return met


async def _load(server: Any, load_s: float, cull_s: float, after_s: float) -> dict[str, Any]:
    import asyncio

    from tornado.httpclient import AsyncHTTPClient

    http = AsyncHTTPClient(force_instance=True, max_clients=CLIENTS + 4, defaults={"request_timeout": 600})
    pid = server.process.pid

    async def post(path: str, body: dict[str, Any]) -> dict[str, Any]:
        response = await http.fetch(
            server.url + "nini/api/" + path,
            method="POST",
            body=json.dumps(body),
            headers=server.headers,
            raise_error=False,
        )
        return json.loads(response.body) if response.body else {"ok": False}

    async def until_no_kernel(limit_s: float) -> float | None:
        started = time.monotonic()
        while time.monotonic() - started < limit_s:
            if footprint(pid)["kernels"] == 0:
                return time.monotonic() - started
            await asyncio.sleep(1)
        return None

    figures: dict[str, Any] = {"cold": footprint(pid), "calls": 0, "failed": 0, "restarted": 0}
    warm = (await post("sessions", {"title": "warm-up"}))["data"]["id"]
    assert (await post(f"sessions/{warm}/run-code", {"code": LOAD_CODE}))["ok"]
    await until_no_kernel(cull_s * 4)
    figures["idle"] = footprint(pid)
    sessions = [(await post("sessions", {"title": f"client {n}"}))["data"]["id"] for n in range(CLIENTS)]
    end = time.monotonic() + load_s

    async def client(session_id: str) -> None:
        while time.monotonic() < end:
            reply = await post(f"sessions/{session_id}/run-code", {"code": LOAD_CODE})
            figures["calls"] += 1
            data = reply.get("data") or {}
            figures["failed"] += not (reply["ok"] and data.get("success"))
            figures["restarted"] += "nini: the session's Python kernel" in (data.get("result") or {}).get("stderr", "")

    samples = []
    clients = [asyncio.ensure_future(client(s)) for s in sessions]
    while not all(c.done() for c in clients):
        samples.append(footprint(pid))
        await asyncio.wait(clients, timeout=2)
    await asyncio.gather(*clients)
    figures["peak"] = {key: max(sample[key] for sample in samples) for key in samples[0]}
    stopped = time.monotonic()
    drained = await until_no_kernel(after_s)
    figures["drained"] = (
        f"the last kernel went {drained:.0f} s after the load"
        if drained is not None
        else "kernels were still live at the end"
    )
    await asyncio.sleep(max(0.0, after_s - (time.monotonic() - stopped)))
    figures["after"] = footprint(pid)
    http.close()
    return figures


if __name__ == "__main__":
    main()
