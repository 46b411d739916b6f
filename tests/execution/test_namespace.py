"""describe_namespace: a notebook kernel's variables for the prompt, bounded, largest first, without
copying data and without failing on hostile objects."""

from __future__ import annotations

import os
import tracemalloc

import numpy as np
import pandas as pd

from nini.execution.namespace import describe_namespace
from nini.tokens import count_tokens


class Hostile:
    def __len__(self) -> int:
        raise RuntimeError("no")

    def __repr__(self) -> str:
        raise RuntimeError("no repr either")


def test_data_is_described_and_the_rest_left_out() -> None:
    sales = pd.DataFrame({"region": ["East", "West"] * 5, "revenue": np.arange(10.0)})
    text = describe_namespace(
        {
            "sales": sales,
            "growth": sales["revenue"],
            "matrix": np.zeros((3, 4)),
            "rate": 0.25,
            "title": "Q3",
            "os": os,
            "helper": lambda: 1,
            "_private": 5,
            "In": ["x"],
            "Hostile": Hostile,
            "broken": [Hostile()],
            "evil": HostileSized(),
        },
        2000,
    )
    region = sales.dtypes["region"]  # str in pandas 3, object before
    assert (
        f"- `sales`: DataFrame, 10 rows × 2 columns: `region` {region} ('East', 'West', 'East'); "
        "`revenue` float64 (0.0, 1.0, 2.0)" in text
    )
    assert (
        "`growth`: Series, length 10, dtype float64" in text
        and "`matrix`: ndarray, shape (3, 4), dtype float64" in text
    )
    assert "`rate` = 0.25 (float)" in text and "`title` = 'Q3' (str, 2 characters)" in text
    for absent in ("`os`", "`helper`", "_private", "`In`", "`Hostile`", "`evil`"):
        assert absent not in text


class HostileSized(list):
    def __len__(self) -> int:
        raise RuntimeError("no length")


def test_largest_first_and_within_the_budget_with_200_variables() -> None:
    namespace = {
        f"frame_{n:03d}": pd.DataFrame({"a": np.arange(n + 1), "b": np.arange(n + 1) * 2.0}) for n in range(200)
    }
    text = describe_namespace(namespace, 2000)
    assert count_tokens(text) <= 2000
    names = [line.split("`")[1] for line in text.splitlines() if line.startswith("- `")]
    assert names[:3] == ["frame_199", "frame_198", "frame_197"] and len(names) < 200
    assert text.splitlines()[-1].startswith(f"- … and {200 - len(names)} more")
    assert describe_namespace(namespace, 0) == "" and describe_namespace({"os": os}, 2000) == ""


def test_describing_a_huge_frame_copies_nothing() -> None:
    # 2 GB of float64 seen through a view of one small block: any copy of its data would show
    base = np.zeros((1, 64))
    huge = np.lib.stride_tricks.as_strided(base, shape=(4_000_000, 64), strides=(0, 8), writeable=False)
    frame = pd.DataFrame(huge, copy=False)
    tracemalloc.start()
    try:
        text = describe_namespace({"huge": frame}, 2000)
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert "`huge`: DataFrame, 4,000,000 rows × 64 columns" in text and "and 44 more columns" in text
    assert peak < 5 * 2**20, peak
