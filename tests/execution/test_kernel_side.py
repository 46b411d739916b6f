"""The pure helpers of a run, without a kernel: names, JSON values, traceback lines, rich outputs."""

from __future__ import annotations

import datetime as dt
import math

import numpy as np
import pandas as pd
import pytest

from nini.execution._kernel_side import StemAllocator, json_safe, preview, slugify
from nini.execution.python_runner import _rich_types, code_error, strip_ansi, user_line


@pytest.mark.parametrize(
    ("label", "slug"),
    [
        ("Sales by Month", "sales-by-month"),
        ("  revenue/cost (2024)! ", "revenue-cost-2024"),
        ("销售 趋势", "销售-趋势"),
        ("../../etc/passwd", "etc-passwd"),
        ("!!!", ""),
        ("x" * 100, "x" * 60),
    ],
)
def test_slugify(label: str, slug: str) -> None:
    assert slugify(label) == slug


def test_stem_allocator_never_reuses_a_name() -> None:
    names = StemAllocator(["chart.png", "figure-1.svg"])
    assert [names.next("Chart", "figure") for _ in range(3)] == ["chart-2", "chart-3", "chart-4"]
    assert [names.next(None, "figure") for _ in range(2)] == ["figure-2", "figure-3"]
    assert names.next("!!!", "output") == "output-1"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"a": [1, 2.5, None, True]}, {"a": [1, 2.5, None, True]}),
        (float("nan"), None),
        (math.inf, None),
        (np.int64(3), 3),
        (np.array([1.0, np.nan]), [1.0, None]),
        ((1, "x"), [1, "x"]),
        ({1: "int key"}, {"1": "int key"}),
        (dt.date(2024, 1, 2), "2024-01-02"),
        (pd.Timestamp("2024-01-02 03:04"), "2024-01-02T03:04:00"),
    ],
)
def test_json_safe(value: object, expected: object) -> None:
    assert json_safe(value) == expected


def test_json_safe_refuses_other_objects() -> None:
    with pytest.raises(TypeError):
        json_safe(object())


def test_preview_shapes_and_missing_values() -> None:
    frame = pd.DataFrame({"k": ["a", "b"], "v": [1.0, None], "when": [pd.NaT, pd.Timestamp("2024-05-01")]})
    shown = preview(frame)
    assert shown["columns"] == ["k", "v", "when"]
    assert shown["rows"] == [["a", 1.0, None], ["b", None, "2024-05-01T00:00:00"]]
    assert shown["shape"] == [2, 3]
    grouped = preview(frame.groupby("k")[["v"]].sum())
    assert grouped["columns"] == ["k", "v"] and grouped["shape"] == [2, 1]  # the index is shown


@pytest.mark.parametrize(
    ("lines", "count", "line"),
    [
        (["Cell In[4], line 3", "----> 3 1/0"], 4, 3),
        (["Cell In[7], line 9", "Cell In[8], line 2", "File lib.py:10, in f"], 8, 2),
        (["Cell In[8], line 2", "Cell In[8], line 5"], 8, 5),
        (["Cell In[3], line 1"], 8, None),  # a frame of an earlier cell only
        (['File "<ipython-input-12-0a1b2c>", line 6, in <module>'], 12, 6),
        (["  Cell In[2], line 4", "    x = (", "SyntaxError: incomplete input"], None, 4),
        (["no frames at all"], 1, None),
    ],
)
def test_user_line(lines: list[str], count: int | None, line: int | None) -> None:
    assert user_line(lines, count) == line


def test_code_error_strips_ansi_and_the_temp_file_name() -> None:
    error = code_error(
        "SyntaxError", "invalid syntax (2519.py, line 2)", ["\x1b[0;36m  Cell In[5], line 2\x1b[0m\n    x = (\n"], 5
    )
    assert error["message"] == "SyntaxError: invalid syntax"
    assert error["line"] == 2
    assert error["evalue"] == "invalid syntax (2519.py, line 2)"
    assert error["traceback"] == ["  Cell In[5], line 2", "    x = ("]


def test_strip_ansi() -> None:
    assert strip_ansi("\x1b[0;31mred\x1b[0m \x1b]8;;http://x\x07link\x1b]8;;\x07 plain") == "red link plain"


@pytest.mark.parametrize(
    ("data", "types"),
    [
        ({"text/plain": "<IPython.core.display.HTML object>", "text/html": "<b>x</b>"}, ["text/html"]),
        ({"text/plain": "   a\n0  1", "text/html": "<table/>"}, []),
        ({"text/plain": "<Figure size 640x480 with 1 Axes>", "image/png": "AA=="}, ["image/png"]),
        ({"image/svg+xml": "<svg/>", "image/png": "AA==", "text/plain": "x"}, ["image/png", "image/svg+xml"]),
        ({"application/pdf": "AA=="}, ["application/pdf"]),
        ({"text/plain": "42"}, []),
    ],
)
def test_rich_types(data: dict, types: list[str]) -> None:
    assert _rich_types(data) == types
