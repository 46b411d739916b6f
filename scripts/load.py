"""Keep the machine busy while something else runs: N processes spinning on the CPU, for a bounded time.

How the suite is shown to hold on a loaded machine (issue 37): ``make test`` with the 2 cores
oversubscribed by 6 busy processes. Run it beside the tests, e.g.::

    .venv/bin/python scripts/load.py --workers 6 --minutes 60 &
    make test
    kill %1

It ends by itself after ``--minutes``, on Ctrl-C or SIGTERM, and when the shell that started it goes
away (its workers end with it: each one checks that its parent is still this process), so no busy
process outlives it.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import signal
import sys
import time
from types import FrameType


def spin(parent: int, until: float) -> None:
    """Burn CPU until ``until`` (monotonic) or until the parent is gone (its orphan is re-parented)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole group: the parent ends us
    checked = 0
    while True:
        checked += 1
        if checked % 200_000 == 0 and (os.getppid() != parent or time.monotonic() >= until):
            return


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=6, help="busy processes (default 6)")
    parser.add_argument("--minutes", type=float, default=60.0, help="how long at most (default 60)")
    args = parser.parse_args(argv)
    if args.workers < 1 or args.minutes <= 0:
        parser.error("--workers must be at least 1 and --minutes more than 0")

    until = time.monotonic() + args.minutes * 60
    shell = os.getppid()
    workers = [
        multiprocessing.Process(target=spin, args=(os.getpid(), until), daemon=True) for _ in range(args.workers)
    ]
    for worker in workers:
        worker.start()

    def stop(signum: int, _frame: FrameType | None) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGHUP, stop)
    print(f"load: {args.workers} busy processes for at most {args.minutes:g} min (pid {os.getpid()})", flush=True)
    try:
        while time.monotonic() < until and os.getppid() == shell and any(w.is_alive() for w in workers):
            time.sleep(1)  # the load's own clock: not a test waiting on something
    except KeyboardInterrupt:
        pass
    finally:
        for worker in workers:
            worker.terminate()
        for worker in workers:
            worker.join(5)
            if worker.is_alive():
                worker.kill()
                worker.join()
        print("load: stopped", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
