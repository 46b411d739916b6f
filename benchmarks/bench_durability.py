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


def kills(env: dict[str, str], cwd: Path) -> None:
    """(a) SIGKILL ``--save-as`` runs at random moments of their life, then check record against files."""
    from nini.config import load_settings
    from nini.execution.runtime_dirs import OWNER_FILE, token_alive
    from nini.execution.sandbox import runtime_base
    from nini.history.store import HistoryStore

    print(f"(a) {KILLS} runs of nini run-code --save-as killed with SIGKILL at random moments")
    nini(env, "run-code", "-", "--session", "k", stdin="x = 1\n")
    folder = Path(env["NINI_HOME"]) / "sessions" / "k" / "workspace"
    rng, between, started = random.Random(18), 0, time.perf_counter()
    for run in range(KILLS):
        code = f"import pandas as pd\noutput_df = pd.DataFrame({{'writer': [{run}] * 1000}})\n"
        cli = subprocess.Popen([NINI, "run-code", "-", "--session", "k", "--save-as", f"ds{run % 5}"], env=env, cwd=cwd,
                               stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
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
    stale = [p for base in (runtime_base(), Path("/tmp")) for p in base.glob("nini-*-*")
             if (p / OWNER_FILE).is_file() and not token_alive("{pid}-{start}".format(**json.loads((p / OWNER_FILE).read_text())))]
    print(f"  datasets that differ from their record: {wrong} of {len(rows)}; files left in datasets/: "
          f"{len(leftovers)}; runtime folders of dead processes: {len(stale)} (goal: 0, 0, 0)")


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="nini-bench-durability-") as tmp:
        env = {**os.environ, "NINI_HOME": str(Path(tmp) / "home")}
        kills(env, Path(tmp))
        bounded_record(env)


if __name__ == "__main__":
    main()
