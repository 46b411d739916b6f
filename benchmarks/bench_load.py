"""Data as it comes (issue 35, item 6): what detecting a CSV's encoding and separator costs.

1. A 50 MB UTF-8 CSV read as ``load_dataset``'s reader reads it (``_csv_side.read_table``: the
   first MiB sampled, encoding and separator detected, then ``pandas.read_csv``) against
   ``pandas.read_csv`` given the encoding and separator, the two taking turns on the same file.
   Goal: <= 1.2x.
2. Detection alone on a 1 MiB sample: UTF-8 (the fast path: one decode) and GBK (charset-normalizer),
   for scale.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from goals import goal

from nini.execution._csv_side import SAMPLE_BYTES, detect_encoding, read_table

TARGET_MB = 50
ROUNDS = 5
GOAL = 1.2


def write_csv(path: Path) -> None:
    """At least ``TARGET_MB`` MB of sales-like rows (dates, text, integers, floats), in blocks of about 5 MB."""
    rng = np.random.default_rng(7)
    rows = 110_000  # about 5 MB a block
    frame = pd.DataFrame(
        {
            "date": pd.date_range("2020-01-01", periods=rows, freq="min").strftime("%Y-%m-%d %H:%M"),
            "region": rng.choice(["north", "south", "east", "west"], rows),
            "product": rng.choice(["reagent kit", "pipette", "centrifuge", "microscope"], rows),
            "units": rng.integers(1, 500, rows),
            "price": rng.random(rows).round(4) * 1000,
        }
    )
    frame.to_csv(path, index=False)
    while path.stat().st_size < TARGET_MB * 10**6:
        frame.to_csv(path, index=False, header=False, mode="a")


def timed(action) -> float:  # noqa: ANN001
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="nini-bench-load-") as folder:
        path = Path(folder) / "sales.csv"
        write_csv(path)
        size_mb = path.stat().st_size / 10**6

        def detected() -> None:
            with path.open("rb") as source:
                frame, how = read_table(source, path.name, ".csv")
            assert (how["encoding"], how["sep"], frame.shape[1]) == ("utf-8", ",", 5), how

        def given() -> None:
            pd.read_csv(path, encoding="utf-8", sep=",")

        ours, plain = [], []
        given()  # the file in the page cache, pandas' parser warm
        for _ in range(ROUNDS):
            ours.append(timed(detected))
            plain.append(timed(given))
        ratio = statistics.median(ours) / statistics.median(plain)
        print(
            f"{size_mb:.0f} MB UTF-8 CSV: detected {statistics.median(ours):.2f} s, "
            f"pandas.read_csv with encoding and sep given {statistics.median(plain):.2f} s "
            f"(median of {ROUNDS}): {ratio:.2f}x (goal <= {GOAL}x)"
        )
        goal("bench_load", f"{size_mb:.0f} MB CSV detected <= {GOAL}x pandas given", f"{ratio:.2f}x", ratio <= GOAL)

    utf8 = ("a,b,c\n" + "x,1,2.5\n" * (SAMPLE_BYTES // 8)).encode()[:SAMPLE_BYTES]
    gbk = ("地区,销售额,产品\n" + "华北,120,苹果\n华南,98,香蕉\n" * (SAMPLE_BYTES // 40)).encode("gbk")[:SAMPLE_BYTES]
    detect_encoding(gbk, complete=False)  # charset-normalizer imported
    for label, sample in (("UTF-8", utf8), ("GBK", gbk)):
        seconds = statistics.median(timed(lambda s=sample: detect_encoding(s, complete=False)) for _ in range(ROUNDS))
        print(f"detecting the encoding of a 1 MiB {label} sample: {seconds * 1000:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
