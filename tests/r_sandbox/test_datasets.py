"""Datasets shared with Python: Parquet files read lazily by R, output_df previewed and saved by name."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from nini.execution._kernel_side import preview as python_preview
from tests.r_sandbox.conftest import Workers, needs_r, new_session

pytestmark = needs_r


def datasets_dir(workers: Workers, session: str) -> Path:
    folder = workers.workspace(session) / "datasets"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def sales() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "region": ["north", "south", None, "east"],
            "units": [10, 20, 30, 40],
            "price": [1.5, float("nan"), 3.25, 4.0],
            "paid": [True, False, True, True],
        }
    )


def test_python_to_r_to_python_round_trip(workers: Workers) -> None:
    session = new_session()
    assert workers.run("1", session)["success"]  # the worker is up before the dataset exists
    sales().to_parquet(datasets_dir(workers, session) / "sales.parquet")
    code = (
        "stopifnot(identical(df, datasets$sales))\n"
        "print(datasets)\n"
        "result <- list(n = nrow(datasets$sales), na_region = sum(is.na(df$region)), na_price = sum(is.na(df$price)),\n"
        "               classes = lapply(df, function(col) class(col)[1]))\n"
        "output_df <- transform(df, revenue = units * price)"
    )
    out = workers.run(code, session, dataset_name="sales", save_as="sales_revenue")
    assert out["success"], out["error"]
    assert "datasets: sales" in out["stdout"]
    assert out["result"] == {
        "n": 4,
        "na_region": 1,
        "na_price": 1,
        "classes": {"region": "character", "units": "integer", "price": "numeric", "paid": "logical"},
    }
    assert out["datasets_saved"] == ["sales_revenue"]
    back = pd.read_parquet(datasets_dir(workers, session) / "sales_revenue.parquet")
    expected = sales().assign(revenue=lambda f: f["units"] * f["price"])
    pd.testing.assert_frame_equal(back, expected, check_dtype=False)


def test_preview_has_the_shape_of_pythons(workers: Workers) -> None:
    code = (
        "output_df <- data.frame(n = c(1L, NA, 3L), x = c(0.5, NA, 2), s = c('a', NA, 'c'), b = c(TRUE, NA, FALSE),\n"
        "  f = factor(c('lo', 'hi', NA)), d = as.Date('2024-01-01') + 0:2, stringsAsFactors = FALSE)"
    )
    out = workers.run(code)
    assert out["success"], out["error"]
    preview = out["dataframe_preview"]
    assert out["has_dataframe"] and preview["shape"] == [3, 6]
    assert preview["columns"] == ["n", "x", "s", "b", "f", "d"]
    assert preview["dtypes"][:5] == ["Int32", "float64", "str", "boolean", "category"]
    assert preview["dtypes"][5].startswith("datetime64")
    assert preview["rows"] == [
        [1, 0.5, "a", True, "lo", "2024-01-01T00:00:00"],
        [None, None, None, None, "hi", "2024-01-02T00:00:00"],
        [3, 2.0, "c", False, None, "2024-01-03T00:00:00"],
    ]
    # the same rules as Python's run_code: at most 20 rows, the full shape
    long = workers.run("output_df <- data.frame(i = 1:25, j = letters[(0:24 %% 26) + 1])")["dataframe_preview"]
    frame = pd.DataFrame({"i": range(1, 26), "j": [chr(97 + k) for k in range(25)]}).astype({"i": "int32"})
    assert long == python_preview(frame)


@pytest.mark.parametrize(
    "code",
    [
        "library(tibble)\noutput_df <- tibble(a = 1:3, b = c('x', 'y', 'z'))",
        "library(data.table)\noutput_df <- data.table(a = 1:3, b = c('x', 'y', 'z'))",
        "output_df <- data.frame(a = 1:3, b = c('x', 'y', 'z'))",
    ],
)
def test_tibbles_and_data_tables_are_data_frames(workers: Workers, code: str) -> None:
    out = workers.run(code)
    assert out["success"], out["error"]
    assert out["dataframe_preview"]["rows"] == [[1, "x"], [2, "y"], [3, "z"]]
    assert out["dataframe_preview"]["columns"] == ["a", "b"]


@pytest.mark.parametrize(
    ("code", "columns", "first_row"),
    [
        ("output_df <- data.frame(a = integer(0), b = character(0))", ["a", "b"], None),
        ("output_df <- data.frame(a = 1:2)\noutput_df$l <- list(1:3, 'x')", ["a", "l"], [1, "1, 2, 3"]),
        ("output_df <- data.frame(a = 1:2)\noutput_df$m <- matrix(1:4, 2)", ["a", "m.1", "m.2"], [1, 1, 3]),
        (
            "output_df <- data.frame(t = as.POSIXlt('2024-01-02 03:04:05', tz = 'UTC'))",
            ["t"],
            ["2024-01-02T03:04:05+00:00"],
        ),
    ],
)
def test_unusual_columns_still_make_a_preview(
    workers: Workers, code: str, columns: list[str], first_row: list[object] | None
) -> None:
    out = workers.run(code)
    assert out["success"], out["error"]
    preview = out["dataframe_preview"]
    assert preview["columns"] == columns
    assert (preview["rows"][0] if preview["rows"] else None) == first_row


def test_row_names_that_mean_something_are_kept(workers: Workers) -> None:
    session = new_session()
    out = workers.run("output_df <- head(mtcars[, 1:2], 2)", session, save_as="cars")
    assert out["dataframe_preview"]["columns"] == ["index", "mpg", "cyl"]
    assert out["dataframe_preview"]["rows"][0] == ["Mazda RX4", 21.0, 6.0]
    back = workers.run("rownames(datasets$cars)", session)
    assert back["stdout"] == '[1] "Mazda RX4"     "Mazda RX4 Wag"\n'


def test_r_types_survive_a_round_trip_through_parquet(workers: Workers) -> None:
    session = new_session()
    code = (
        "output_df <- data.frame(i = c(1L, NA), s = c('a', NA), f = factor(c('u', 'v')), b = c(TRUE, NA),\n"
        "  t = as.POSIXct(c('2024-01-02 03:04:05', NA), tz = 'UTC'))"
    )
    assert workers.run(code, session, save_as="typed")["success"]
    out = workers.run("str(datasets$typed)\nattr(datasets$typed$t, 'tzone')", session)
    assert out["success"], out["error"]
    assert "$ i: int  1 NA" in out["stdout"] and '$ s: chr  "a" NA' in out["stdout"]
    assert '$ f: Factor w/ 2 levels "u","v"' in out["stdout"] and "$ b: logi  TRUE NA" in out["stdout"]
    assert '[1] "UTC"' in out["stdout"]


def test_big_integers_and_time_zones_from_python(workers: Workers) -> None:
    session = new_session()
    frame = pd.DataFrame(
        {
            "big": [2**40, 1],
            "small": pd.array([1, None], dtype="Int64"),
            "when": pd.to_datetime(["2024-01-01 12:00", "2024-06-01 12:00"]).tz_localize("Europe/Paris"),
        }
    )
    frame.to_parquet(datasets_dir(workers, session) / "odd.parquet")
    code = "d <- datasets$odd\nresult <- list(big = d$big[1], small = d$small, when = format(d$when, tz = 'UTC'))"
    out = workers.run(code, session)
    assert out["success"], out["error"]
    assert out["result"] == {"big": 2**40, "small": [1, None], "when": ["2024-01-01 11:00:00", "2024-06-01 10:00:00"]}


def test_datasets_are_read_only_and_lazy(workers: Workers) -> None:
    session = new_session()
    folder = datasets_dir(workers, session)
    sales().to_parquet(folder / "sales.parquet")
    (folder / "broken.parquet").write_text("not parquet")
    out = workers.run("ls(datasets)\nnrow(datasets$sales)", session)  # broken is never read
    assert out["success"], out["error"]
    assert out["stdout"] == '[1] "broken" "sales" \n[1] 4\n'
    refused = workers.run("datasets$sales <- 1", session)
    assert refused["error"]["code"] == "CODE_ERROR" and "locked" in refused["error"]["message"]
    failed = workers.run("nrow(datasets$broken)", session)
    assert failed["error"]["code"] == "CODE_ERROR" and failed["error"]["line"] == 1
    assert failed["error"]["message"].startswith("Error: dataset 'broken' cannot be read: its file is damaged")
    as_df = workers.run("1", session, dataset_name="broken")
    assert as_df["error"]["code"] == "INVALID_ARGUMENT" and "cannot be read" in as_df["error"]["message"]
    assert str(folder) not in failed["error"]["message"] + as_df["error"]["message"]


def test_output_df_that_is_not_a_data_frame(workers: Workers) -> None:
    ignored = workers.run("output_df <- 1:3")
    assert ignored["success"] and not ignored["has_dataframe"]
    assert "nini: output_df is a integer, not a data.frame; ignored" in ignored["stderr"]
    refused = workers.run("output_df <- 1:3", save_as="numbers")
    assert refused["error"] == {"code": "CODE_ERROR", "message": "save_as='numbers' needs output_df to be a data.frame"}


def test_integer_row_names_left_by_ordering_are_not_a_column(workers: Workers) -> None:
    out = workers.run("d <- data.frame(a = c(3, 1, 2))\noutput_df <- d[order(d$a), , drop = FALSE]", new_session())
    assert out["dataframe_preview"]["columns"] == ["a"]
    assert out["dataframe_preview"]["rows"] == [[1.0], [2.0], [3.0]]
