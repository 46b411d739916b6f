"""The workspace budget during a run (issue 32, item 3): what the watch costs, and a flooded workspace.

1. Warm round trip of ``x = 1`` through ``invoke(session, "run_code", ...)`` with the run watched
   (``disk_watch.RunWatch``: a task sampling free space, the guard between runs) versus the same
   kernel unwatched (``runs.WATCHED`` emptied), interleaved in alternating order; and what the
   watch itself adds to a run (entering and leaving it, median of many). Goal: nothing measurable,
   the watch's own cost at most 1% of the warm call (the two medians differ by the machine's noise).
2. A workspace of 200,000 files under the default limit (20,000): the check that refuses the next
   run (a count capped at twice the limit) versus a count of everything (what the check did before),
   and, when nini runs as root, the kernel start's ownership step (``sandbox.prepare``) once the
   workspace was walked for its uid versus a walk at every start (as before).
"""

from __future__ import annotations

import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path

from goals import goal

from nini.config import load_settings
from nini.errors import NiniError
from nini.execution import runs, sandbox
from nini.execution.disk_watch import measure
from nini.rooted import RootedDir
from nini.runtime import Runtime
from nini.skills.invoke import invoke

ROUND_TRIPS = 200
FLOOD = 200_000
OWN_COST_GOAL = 0.01


async def warm_round_trips(home: Path) -> tuple[list[float], list[float], float]:
    async with Runtime(load_settings(home=home), project_dir=home) as runtime:
        session = runtime.create_session(title="warm")
        assert (await invoke(session, "run_code", {"code": "x = 1"})).success
        watched, unwatched = [], []
        for n in range(ROUND_TRIPS):
            pair = [(runs.WATCHED, watched), ((), unwatched)]
            for kinds, times in pair if n % 2 else reversed(pair):
                runs.WATCHED = kinds
                start = time.perf_counter()
                assert (await invoke(session, "run_code", {"code": "x = 1"})).success
                times.append(time.perf_counter() - start)
            runs.WATCHED = pair[0][0]
        own = []
        for _ in range(2000):
            start = time.perf_counter()
            async with runs.watch_run(session):
                await asyncio.sleep(0)
            own.append(time.perf_counter() - start)
        return watched, unwatched, statistics.median(own)


async def flooded(home: Path) -> None:
    async with Runtime(load_settings(home=home), project_dir=home) as runtime:
        session = runtime.create_session(title="flooded")
        folder = session.workspace.root / "flood"
        folder.mkdir()
        for n in range(FLOOD):
            os.close(os.open(folder / f"f{n}", os.O_CREAT | os.O_WRONLY, 0o644))
        start = time.perf_counter()
        try:
            await runs.check_quota(session)
        except NiniError as exc:
            refused = exc.code.value
        else:
            refused = "not refused"
        check_s = time.perf_counter() - start
        start = time.perf_counter()
        measure(session.workspace.root)
        whole_s = time.perf_counter() - start
        print(
            f"check of a workspace of {FLOOD:,} files (limit 20,000): {check_s * 1000:.0f} ms ({refused}); "
            f"a count of everything: {whole_s * 1000:.0f} ms"
        )
        if sandbox.running_as_root():  # sandbox.prepare: a walk at every start before, a stat once walked now
            root, uid = session.workspace.root, sandbox.ROOT_UID_BASE
            start = time.perf_counter()
            RootedDir(root).chown_tree(uid, uid)
            walk_s = time.perf_counter() - start
            start = time.perf_counter()
            os.stat(root)
            stat_s = time.perf_counter() - start
            print(
                f"kernel start's ownership step on it: {walk_s * 1000:.0f} ms walking it (before, every start), "
                f"{stat_s * 1e6:.0f} us once walked for its uid (now)"
            )


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="nini-bench-disk-") as folder:
        home = Path(folder)
        watched, unwatched, own = asyncio.run(warm_round_trips(home / "warm"))
        warm = statistics.median(unwatched)
        print(
            f"warm x = 1, {ROUND_TRIPS} each: watched {statistics.median(watched) * 1000:.2f} ms, unwatched "
            f"{warm * 1000:.2f} ms (median): {statistics.median(watched) / warm:.3f}x; the watch itself: "
            f"{own * 1e6:.0f} us a run, {own / warm:.2%} of the warm call (goal <= {OWN_COST_GOAL:.0%})"
        )
        goal(
            "bench_disk_watch",
            f"the watch <= {OWN_COST_GOAL:.0%} of a warm call",
            f"{own / warm:.2%}",
            own / warm <= OWN_COST_GOAL,
        )
        asyncio.run(flooded(home / "flooded"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
