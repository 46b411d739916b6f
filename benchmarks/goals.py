"""How a benchmark tells run_all.py what it measured: one line per goal, printed as it is judged.

``goal("bench_cli", "nini --help < 300 ms", "212 ms", True)`` prints
``GOAL {"bench": "bench_cli", "goal": "nini --help < 300 ms", "figure": "212 ms", "met": true}``;
run_all.py collects these lines from each script's output into its summary table. A missed goal is
a line with ``"met": false``, never an exit status: a benchmark exits non-zero only when it crashed.
"""

from __future__ import annotations

import json

PREFIX = "GOAL "


def goal(bench: str, goal: str, figure: str, met: bool | None) -> bool | None:
    """Print the line for one goal (``met`` None: not judged here, e.g. skipped); ``met`` back."""
    print(PREFIX + json.dumps({"bench": bench, "goal": goal, "figure": figure, "met": met}), flush=True)
    return met


def parse(line: str) -> dict | None:
    """The goal a line of a benchmark's output reports, or None for any other line."""
    if not line.startswith(PREFIX):
        return None
    try:
        found = json.loads(line[len(PREFIX) :])
    except json.JSONDecodeError:
        return None
    return found if isinstance(found, dict) and {"bench", "goal", "figure", "met"} <= set(found) else None
