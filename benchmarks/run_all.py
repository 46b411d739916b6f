"""Run every benchmarks/bench_*.py in its own process and report which ones failed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

# Scripts too slow for a full run here, run in their quick mode (each says so when it starts).
QUICK_ARGS = {"bench_install.py": ["--quick"], "bench_durability.py": ["--quick"]}


def main() -> int:
    failed = []
    for script in sorted(Path(__file__).parent.glob("bench_*.py")):
        print(f"== {script.name}", flush=True)
        if subprocess.run([sys.executable, str(script), *QUICK_ARGS.get(script.name, [])]).returncode != 0:
            failed.append(script.name)
    if failed:
        print(f"failed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
