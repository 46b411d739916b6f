"""run_r_code speed against the two usual ways of running R from Python, measured in one run.

- Warm round trip of ``mean(1:10)`` through ``invoke(session, "run_r_code", ...)`` (policy check
  with R's parser, the session's sandboxed worker, store rows and events), median of 50.
- Baseline 1: ``Rscript -e 'mean(1:10)'`` per call, the usual subprocess approach. Goal: the warm
  call at least 20x faster.
- Baseline 2: a direct in-process rpy2 eval (no isolation, no policy, no record). Goal: within 5 ms.
- Worker cold start (first call of a new session: process, sandbox, R and rpy2 start-up).
- The static policy's time per snippet over the real-code corpus (the help-page examples of the
  installed base, recommended and tidyverse packages, as its test extracts them). Goal: < 5 ms.
"""

from __future__ import annotations

import asyncio
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from goals import goal

from nini.config import load_settings
from nini.runtime import Runtime
from nini.skills.builtin.run_r import r_status
from nini.skills.invoke import invoke

WARM_CALLS = 50
RSCRIPT_CALLS = 10
COLD_STARTS = 3
CODE = "mean(1:10)"
CORPUS_SCRIPT = Path(__file__).resolve().parents[1] / "tests" / "r_sandbox" / "extract_examples.R"
CORPUS_PACKAGES = (
    "base,stats,utils,graphics,grDevices,methods,datasets,grid,splines,stats4,MASS,Matrix,"
    "lattice,mgcv,nlme,dplyr,tidyr,ggplot2,readr,data.table,tibble,stringr,purrr,jsonlite,magrittr,scales"
)


async def through_nini(home: Path) -> tuple[list[float], list[float], str]:
    """(cold starts, warm round trips) in seconds, and the sandbox mode."""
    async with Runtime(load_settings(home=home), project_dir=home) as runtime:
        cold = []
        for _ in range(COLD_STARTS):
            session = runtime.create_session()
            start = time.perf_counter()
            first = await invoke(session, "run_r_code", {"code": CODE})
            cold.append(time.perf_counter() - start)
            assert first.success and first.result["stdout"] == "[1] 5.5\n", first.error
        warm = []
        for _ in range(WARM_CALLS):
            start = time.perf_counter()
            result = await invoke(session, "run_r_code", {"code": CODE})
            warm.append(time.perf_counter() - start)
            assert result.success
        mode = "bwrap" if runtime.r_workers.wrap_command is not None else "none"
        return cold, warm, mode


def rscript_calls() -> list[float]:
    rscript = shutil.which("Rscript") or "Rscript"
    times = []
    for _ in range(RSCRIPT_CALLS):
        start = time.perf_counter()
        out = subprocess.run([rscript, "-e", CODE], capture_output=True, text=True, check=True).stdout
        times.append(time.perf_counter() - start)
        assert out.strip() == "[1] 5.5"
    return times


def rpy2_calls() -> list[float]:
    import rpy2.robjects as ro

    ro.r(CODE)
    times = []
    for _ in range(WARM_CALLS):
        start = time.perf_counter()
        value = ro.r(CODE)[0]
        times.append(time.perf_counter() - start)
        assert value == 5.5
    return times


def policy_over_corpus() -> tuple[int, float, float]:
    """(examples, mean ms per example, median ms) of ``check_r_code`` over the corpus."""
    import json

    from r_sandbox.policy import check_r_code

    rscript = shutil.which("Rscript") or "Rscript"
    done = subprocess.run([rscript, str(CORPUS_SCRIPT), CORPUS_PACKAGES], capture_output=True, text=True, check=True)
    codes = [example["code"] for example in json.loads(done.stdout)]
    check_r_code("x <- 1")  # R started
    times = []
    for code in codes:
        start = time.perf_counter()
        check_r_code(code)
        times.append(time.perf_counter() - start)
    return len(codes), sum(times) / len(times) * 1000, ms(times)


def ms(values: list[float]) -> float:
    return statistics.median(values) * 1000


def main() -> int:
    usable, why = r_status(load_settings(home="/nonexistent-nini-home"))
    if not usable:
        print(f"bench_r: skipped, R cannot be used here: {why}")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        cold, warm, mode = asyncio.run(through_nini(Path(tmp)))
    rscript, rpy2 = ms(rscript_calls()), ms(rpy2_calls())
    nini = ms(warm)
    print(f"bench_r: `{CODE}`, medians (warm: {WARM_CALLS} calls, Rscript: {RSCRIPT_CALLS}, cold: {COLD_STARTS})")
    print(f"  baseline 1: Rscript -e per call                      {rscript:9.2f} ms")
    print(f"  baseline 2: in-process rpy2 eval                     {rpy2:9.2f} ms")
    print(
        f"  invoke run_r_code, warm (sandbox {mode}, recorded)    {nini:9.2f} ms   "
        f"{rscript / nini:6.1f}x faster than Rscript (goal >= 20x: {'met' if rscript / nini >= 20 else 'MISSED'}), "
        f"+{nini - rpy2:.2f} ms over rpy2 (goal <= 5 ms: {'met' if nini - rpy2 <= 5 else 'MISSED'})"
    )
    goal("bench_r", "warm run_r_code >= 20x faster than Rscript", f"{rscript / nini:.1f}x", rscript / nini >= 20)
    goal("bench_r", "warm run_r_code <= 5 ms over rpy2", f"+{nini - rpy2:.2f} ms", nini - rpy2 <= 5)
    print(
        f"  worker cold start (first call of a session)          {ms(cold):9.0f} ms   "
        f"{ms(cold) / rscript:5.2f}x one Rscript call"
    )
    count, mean, median = policy_over_corpus()
    print(
        f"  policy check, {count} help-page examples: mean {mean:.2f} ms, median {median:.2f} ms per snippet "
        f"(goal < 5 ms: {'met' if mean < 5 else 'MISSED'})"
    )
    goal("bench_r", "R policy check < 5 ms a snippet (mean)", f"{mean:.2f} ms", mean < 5)
    return 0


if __name__ == "__main__":
    sys.exit(main())
