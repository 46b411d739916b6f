"""Several processes writing one database at once (two nini servers on one PostgreSQL, or the CLI
beside a server on one SQLite file): no row lost or doubled, and each session's seq order holds."""

from __future__ import annotations

import subprocess
import sys

import pytest

from nini.history.store import HistoryStore
from tests.conftest import REPO_ROOT
from tests.timeouts import timeout

pytestmark = pytest.mark.slow
PROCESSES, WRITES = 3, 60

WRITER = """
import asyncio, sys
from nini.history.store import HistoryStore

url, shared, name, writes = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
store = HistoryStore(url)
own = store.create_session(title=name)["id"]
print("ready", flush=True)
sys.stdin.readline()  # the go comes once every process is ready: all write at the same moment

async def turn(n):
    call = await store.call(store.start_tool_call, own, "run_code", {"n": n})
    await store.call(store.append_event, shared, "step", {"writer": name, "n": n})
    await store.call(store.finish_tool_call, call["id"], status="succeeded", result={"n": n})

async def main():
    for start in range(0, writes, 4):  # four turns at a time, as a server with several sessions
        await asyncio.gather(*(turn(n) for n in range(start, min(start + 4, writes))))

asyncio.run(main())
store.close()
print(own)
"""


def test_processes_writing_at_once_lose_and_double_nothing(db_url: str, store: HistoryStore) -> None:
    shared = store.create_session(title="watched by everyone")["id"]
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, db_url, shared, f"w{n}", str(WRITES)],
            cwd=REPO_ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(PROCESSES)
    ]
    for writer in writers:  # each says ready once it has started and made its session, then waits
        assert writer.stdout is not None
        assert writer.stdout.readline() == "ready\n", writer.communicate(timeout=timeout(120))
    for writer in writers:
        assert writer.stdin is not None
        writer.stdin.write("go\n")
        writer.stdin.flush()
    outcomes = [writer.communicate(timeout=timeout(300)) for writer in writers]
    assert [w.returncode for w in writers] == [0] * PROCESSES, [err[-2000:] for _, err in outcomes]

    events = store.list_events(shared)
    assert [e["seq"] for e in events] == list(range(1, PROCESSES * WRITES + 1))
    seen = sorted((e["data"]["writer"], e["data"]["n"]) for e in events)
    assert seen == sorted((f"w{p}", n) for p in range(PROCESSES) for n in range(WRITES))  # none lost or doubled
    for out, _ in outcomes:
        calls = store.list_tool_calls(out.strip())
        assert sorted(c["arguments"]["n"] for c in calls) == list(range(WRITES))
        assert {c["status"] for c in calls} == {"succeeded"}
