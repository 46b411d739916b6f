"""Run every benchmarks/bench_*.py in its own process, then print one summary table of their goals.

Each script prints its own report as it goes and one ``GOAL {...}`` line per goal it judges
(benchmarks/goals.py); the table at the end gathers those lines: benchmark, goal, figure, met or
not (a script that only reports figures has a row saying so). The exit status is non-zero only
when a benchmark crashed (exited non-zero), never because a goal was missed: a missed goal is a
finding to read, on a machine whose load the numbers depend on.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from goals import parse

# Scripts too slow for a full run here, run in their quick mode (each says so when it starts).
QUICK_ARGS = {
    "bench_install.py": ["--quick"],
    "bench_durability.py": ["--quick"],
    "bench_long_session.py": ["--quick"],
}
MET = {True: "met", False: "NOT met", None: "-"}


def run(script: Path) -> tuple[int, list[dict]]:
    """Run one benchmark, passing its output through; its exit status and the goals it reported."""
    found: list[dict] = []
    command = [sys.executable, str(script), *QUICK_ARGS.get(script.name, [])]
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True, bufsize=1) as process:
        assert process.stdout is not None
        for line in process.stdout:
            print(line, end="", flush=True)
            if (reported := parse(line)) is not None:
                found.append(reported)
    return process.returncode, found


def table(rows: list[list[str]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)) for row in rows)


def main() -> int:
    rows = [["benchmark", "goal", "figure", "met"]]
    crashed = []
    for script in sorted(Path(__file__).parent.glob("bench_*.py")):
        print(f"== {script.name}", flush=True)
        status, found = run(script)
        if status != 0:
            crashed.append(script.name)
            rows.append([script.stem, "(crashed)", f"exit {status}", "crashed"])
        elif not found:
            rows.append([script.stem, "(figures only, no goal)", "-", "-"])
        rows += [[g["bench"], str(g["goal"]), str(g["figure"]), MET.get(g["met"], str(g["met"]))] for g in found]
    print("\n== summary\n" + table(rows))
    missed = sum(row[3] == "NOT met" for row in rows[1:])
    print(f"\n{len(rows) - 1} goals, {missed} not met; crashed: {', '.join(crashed) or 'none'}")
    return 1 if crashed else 0


if __name__ == "__main__":
    sys.exit(main())
