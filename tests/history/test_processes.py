"""Several processes writing one database at once (two nini servers on one PostgreSQL, or the CLI
beside a server on one SQLite file): no row lost or doubled, and each session's seq order holds."""

from __future__ import annotations

import pytest

from nini.history.store import HistoryStore
from tests.history.conftest import run_together

pytestmark = pytest.mark.slow
PROCESSES, WRITES = 3, 60

WRITER = """
import asyncio, sys
from nini.history.store import HistoryStore

url, shared, name, writes = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
store = HistoryStore(url)
own = store.create_session(title=name)["id"]
print("ready", flush=True)
sys.stdin.readline()  # the go (run_together): all write at the same moment

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
    outcomes = run_together(WRITER, [[db_url, shared, f"w{n}", str(WRITES)] for n in range(PROCESSES)], 300)
    assert [code for code, _, _ in outcomes] == [0] * PROCESSES, [err[-2000:] for _, _, err in outcomes]

    events = store.list_events(shared)
    assert [e["seq"] for e in events] == list(range(1, PROCESSES * WRITES + 1))
    seen = sorted((e["data"]["writer"], e["data"]["n"]) for e in events)
    assert seen == sorted((f"w{p}", n) for p in range(PROCESSES) for n in range(WRITES))  # none lost or doubled
    for _, out, _ in outcomes:
        calls = store.list_tool_calls(out.strip())
        assert sorted(c["arguments"]["n"] for c in calls) == list(range(WRITES))
        assert {c["status"] for c in calls} == {"succeeded"}
