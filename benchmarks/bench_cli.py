"""How fast the ``nini`` command answers: ``nini --help`` and a group's help against the bare interpreter.

Goal (issue 35): ``nini --help`` under 300 ms, which needs lazy imports (no settings, store, pandas
or model client is loaded to print help). Baselines measured in the same run, interleaved with the
commands so a busy machine slows them alike: ``python -c pass`` (starting Python at all) and
``python -c "import typer"`` (the floor of any typer command). ``nini skills list`` is for
reference: it loads settings and every skill, as any command that does work does.
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from goals import goal

RUNS = 15
HELP_GOAL_S = 0.300
NINI = Path(sys.executable).with_name("nini")


def timed(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall time, CPU time of the child): on a busy machine the CPU time says more of the command itself."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed: {done.stderr.decode(errors='replace')}")
    return elapsed, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    if not NINI.exists():
        print(f"bench_cli: no console script at {NINI} (pip install -e . first)")
        return 1
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "NINI_HOME": home, "LANG": "C.UTF-8"}
        commands = {
            "python -c pass": [sys.executable, "-c", "pass"],
            'python -c "import typer"': [sys.executable, "-c", "import typer"],
            "nini --help": [str(NINI), "--help"],
            "nini skills --help": [str(NINI), "skills", "--help"],
            "nini skills list": [str(NINI), "skills", "list"],
        }
        timed(commands["nini skills list"], env)  # the first run creates NINI_HOME's files and caches
        samples: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
        for _ in range(RUNS):
            for name, command in commands.items():
                samples[name].append(timed(command, env))
    wall = {name: statistics.median(w for w, _ in times) for name, times in samples.items()}
    cpu = {name: statistics.median(c for _, c in times) for name, times in samples.items()}
    floor = wall["python -c pass"]
    print(
        f"bench_cli: the real console script, median of {RUNS} interleaved runs (load average {os.getloadavg()[0]:.1f})"
    )
    print(f"  {'':<28} {'wall':>8}     {'ratio':>6}               {'CPU':>8}")
    for name in commands:
        line = (
            f"  {name:<28} {wall[name] * 1000:6.0f} ms  {wall[name] / floor:6.1f}x python -c "
            f"pass  {cpu[name] * 1000:6.0f} ms"
        )
        if name in ("nini --help", "nini skills --help"):
            line += f"   goal < {HELP_GOAL_S * 1000:.0f} ms: {'met' if wall[name] < HELP_GOAL_S else 'MISSED'}"
        print(line)
    for name in ("nini --help", "nini skills --help"):
        goal(
            "bench_cli",
            f"{name} < {HELP_GOAL_S * 1000:.0f} ms",
            f"{wall[name] * 1000:.0f} ms",
            wall[name] < HELP_GOAL_S,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
