"""Durability and bounded records (issue 18), each against a baseline measured in the same run.

(a) kill -9 of ``nini run-code --save-as`` at random moments (``NINI_BENCH_KILLS``, default 200):
    afterwards every dataset is readable and equal to what its record says, and the next start
    leaves no temp file, stale runtime folder or unrecorded dataset version behind;
(b) peak RSS of nini for a small ``--label``/``--save-as`` run in a session that already holds a
    ``NINI_BENCH_BIG_MB`` (default 200) MB output, as a ratio to the same run in a fresh session
    (goal <= 1.2x);
(c) ``nini sessions show`` on that session (goal < 1 s), as a ratio to a fresh session's.

Memory is VmHWM of the process running nini's CLI (the kernel is a process of its own).
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
    nini(env, "run-code", "-", "--session", "fresh", stdin="print('warm')\n")
    start = time.perf_counter()
    nini(env, "run-code", "-", "--session", "big", stdin=f"print('x' * {BIG_MB} * 1024 * 1024)\n")
    print(f"  writing it: {time.perf_counter() - start:.1f} s")
    database = Path(env["NINI_HOME"]) / "nini.db"
    print(f"  database: {database.stat().st_size / 2**20:.1f} MB")
    small = ("run-code", "-", "--label", "small", "--save-as", "small")
    fresh = peak_mb(env, *small, "--session", "fresh", stdin=SMALL_RUN)
    big = peak_mb(env, *small, "--session", "big", stdin=SMALL_RUN)
    print(f"  (b) peak RSS of a small run: {big:.0f} MB vs {fresh:.0f} MB fresh = {big / fresh:.2f}x (goal <= 1.2x)")
    fresh_s = min(timed(env, "sessions", "show", "fresh") for _ in range(3))
    big_s = min(timed(env, "sessions", "show", "big") for _ in range(3))
    print(f"  (c) sessions show: {big_s:.2f} s vs {fresh_s:.2f} s fresh = {big_s / fresh_s:.2f}x (goal < 1 s)")


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="nini-bench-durability-") as tmp:
        env = {**os.environ, "NINI_HOME": str(Path(tmp) / "home")}
        bounded_record(env)


if __name__ == "__main__":
    main()
