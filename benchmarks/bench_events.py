"""Live events across processes: how long an event another process stores takes to reach a
subscriber here, on SQLite (the watcher polls every POLL_S) and on PostgreSQL (LISTEN/NOTIFY).

Each figure is from the moment the publisher calls append_event / publish to the moment the
subscription yields the event (time.monotonic, one clock for all processes on Linux), p50 and p95
of N_EVENTS events paced INTERVAL_S apart. Baseline measured in the same run: publish in this
process, delivered directly. The ratio says what crossing processes costs; on SQLite it is bounded
by the poll interval (about POLL_S / 2 on average). PostgreSQL runs in a throwaway cluster
(tests/pg_cluster.py); it is skipped, saying why, where PostgreSQL is not installed.
"""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from nini.history.events import EventBus  # noqa: E402
from nini.history.store import HistoryStore  # noqa: E402
from nini.history.watch import POLL_S  # noqa: E402
from tests import pg_cluster  # noqa: E402

N_EVENTS = 200
INTERVAL_S = 0.013  # not a divisor of POLL_S: the events land all over the poll cycle
CHILD = """
import sys, time
from nini.history.store import HistoryStore

url, session_id, count, interval = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
store = HistoryStore(url)
sys.stdin.readline()  # the subscriber is ready
for _ in range(count):
    store.append_event(session_id, "tick", {"t": time.monotonic()})
    time.sleep(interval)
store.close()
"""


def latencies(url: str, remote: bool) -> list[float]:
    """Milliseconds from publishing to delivery, for N_EVENTS events (stored by a child process
    when ``remote``, else published through this process's bus)."""
    store = HistoryStore(url)
    bus = EventBus(store)
    session_id = store.create_session(title="bench")["id"]

    def publish_here() -> None:
        for _ in range(N_EVENTS):
            bus.publish(session_id, "tick", {"t": time.monotonic()})
            time.sleep(INTERVAL_S)

    async def main() -> list[float]:
        received = []
        async with bus.subscribe(session_id, since=0) as subscription:
            if remote:
                child = subprocess.Popen(
                    [sys.executable, "-c", CHILD, url, session_id, str(N_EVENTS), str(INTERVAL_S)],
                    stdin=subprocess.PIPE,
                    text=True,
                    cwd=Path(__file__).resolve().parents[1],
                )
                child.stdin.write("go\n")
                child.stdin.flush()
            else:
                publisher = threading.Thread(target=publish_here)
                publisher.start()
            async for event in subscription:
                received.append((time.monotonic() - event["data"]["t"]) * 1000)
                if len(received) == N_EVENTS:
                    break
            if remote:
                child.stdin.close()
                child.wait()
            else:
                publisher.join()
        return received

    try:
        return asyncio.run(main())
    finally:
        bus.close()
        store.close()


def report(backend: str, url: str) -> None:
    here, there = latencies(url, remote=False), latencies(url, remote=True)
    p50_here, p50_there = statistics.median(here), statistics.median(there)
    p95_here, p95_there = (statistics.quantiles(xs, n=20)[-1] for xs in (here, there))
    print(f"{backend}: in-process publish -> deliver p50 {p50_here:.2f} ms, p95 {p95_here:.2f} ms")
    print(
        f"{backend}: other process append -> deliver p50 {p50_there:.2f} ms, p95 {p95_there:.2f} ms "
        f"(ratio p50 {p50_there / p50_here:.0f}x, p95 {p95_there / p95_here:.0f}x)"
    )


def main() -> int:
    print(f"{N_EVENTS} events, {INTERVAL_S * 1000:.0f} ms apart; SQLite poll every {POLL_S * 1000:.0f} ms")
    with tempfile.TemporaryDirectory(prefix="nini-bench-events-") as tmp:
        report("SQLite (poll)", f"sqlite:///{Path(tmp) / 'events.db'}")

    reason = pg_cluster.unavailable()
    if reason:
        print(f"PostgreSQL: skipped ({reason})")
        return 0
    with pg_cluster.running() as cluster:
        report("PostgreSQL (LISTEN/NOTIFY)", cluster.create_database())
    return 0


if __name__ == "__main__":
    sys.exit(main())
