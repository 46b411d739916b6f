"""What describing the notebook's variables for the prompt costs, against a small DataFrame's, measured in the same run.

Issue 19: the prompt describes the kernel's DataFrames (shape, dtypes, a few values) and "a 10 GB
DataFrame must cost the same as a small one". Each case runs describe_namespace (what %%nini runs
in the kernel, and the sidebar's ask through KernelPool.evaluate) at the default 2,000-token budget;
time is the median of several runs, memory the tracemalloc peak of one. Cases: 1,000 × 64 (the
baseline), 10 GB seen through a strided view (any copy would show), 400 MB of real values, 200
variables. For scale, ``DataFrame.describe()`` on the 400 MB frame is what a naive summary costs.
"""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
from bench_skills import median_time

from nini.execution.namespace import describe_namespace
from nini.tokens import count_tokens

BUDGET = 2000


def peak_bytes(work: Callable[[], Any]) -> int:
    tracemalloc.start()
    try:
        work()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def cases() -> dict[str, dict[str, Any]]:
    rng = np.random.default_rng(0)
    small = pd.DataFrame(rng.normal(size=(1_000, 64)))
    base = np.zeros((1, 64))
    ten_gb = pd.DataFrame(
        np.lib.stride_tricks.as_strided(base, shape=(20_000_000, 64), strides=(0, 8), writeable=False), copy=False
    )
    real = pd.DataFrame(rng.normal(size=(800_000, 64)))
    many = {f"frame_{n:03d}": pd.DataFrame({"a": np.arange(n + 1), "b": np.arange(n + 1) * 2.0}) for n in range(200)}
    return {
        "1,000 × 64 (baseline)": {"df": small},
        "10 GB view": {"df": ten_gb},
        "400 MB of values": {"df": real},
        "200 variables": many,
    }


def main() -> None:
    rows = []
    for name, namespace in cases().items():
        seconds = median_time(lambda ns=namespace: describe_namespace(ns, BUDGET), repeat=5)
        peak = peak_bytes(lambda ns=namespace: describe_namespace(ns, BUDGET))
        tokens = count_tokens(describe_namespace(namespace, BUDGET))
        rows.append((name, seconds, peak, tokens))
    real = cases()["400 MB of values"]["df"]
    naive_s = median_time(real.describe, repeat=3)
    naive_peak = peak_bytes(real.describe)

    base_s, base_peak = rows[0][1], rows[0][2]
    print(f"{'case':<22}{'time':>10}{'x base':>9}{'peak memory':>14}{'x base':>9}{'tokens':>8}")
    for name, seconds, peak, tokens in rows:
        print(
            f"{name:<22}{seconds * 1000:>8.1f}ms{seconds / base_s:>8.2f}x{peak / 2**20:>11.2f} "
            f"MB{peak / base_peak:>8.2f}x{tokens:>8}"
        )
    print(
        f"{'describe() on 400 MB':<22}{naive_s * 1000:>8.1f}ms{naive_s / base_s:>8.1f}x"
        f"{naive_peak / 2**20:>11.2f} MB{naive_peak / base_peak:>8.1f}x"
    )


if __name__ == "__main__":
    main()
