"""Plots of R runs as artifacts: base graphics and ggplot, pages, names, formats."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.r_sandbox.conftest import Workers, needs_r, new_session

pytestmark = [needs_r, pytest.mark.slow]  # ggplot2 and cairo take a second or two per test

GGPLOT = "library(ggplot2)\n"
POINTS = "ggplot(mtcars, aes(mpg, wt)) + geom_point()"


def names(out: dict[str, Any]) -> list[str]:
    return [a["name"] for a in out["artifacts"]]


def assert_valid_files(workers: Workers, session: str, out: dict[str, Any]) -> None:
    root = workers.workspace(session)
    for artifact in out["artifacts"]:
        assert artifact["path"] == f"artifacts/{artifact['name']}" and artifact["kind"] == "chart"
        data = (root / artifact["path"]).read_bytes()
        signature = {"png": b"\x89PNG\r\n\x1a\n", "svg": b"<?xml", "pdf": b"%PDF"}[artifact["format"]]
        assert data.startswith(signature) and len(data) > 1000, artifact
        if artifact["format"] == "svg":
            assert b"<svg" in data
    assert not [p for p in (root / "artifacts").iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize(
    ("code", "label", "expected"),
    [
        (f"{GGPLOT}print({POINTS})", "Fuel & Weight", ["fuel-weight.png", "fuel-weight.svg"]),
        (GGPLOT + POINTS, None, ["figure-1.png", "figure-1.svg"]),  # a bare ggplot is autoprinted
        (f"{GGPLOT}p <- {POINTS}", "assigned", ["assigned.png", "assigned.svg"]),  # assigned, never printed
        ("plot(1:10)", "base", ["base.png", "base.svg"]),
        (
            "plot(1:10)\nhist(rnorm(100))",
            "two pages",
            ["two-pages.png", "two-pages.svg", "two-pages-2.png", "two-pages-2.svg"],
        ),
        ("par(mfrow = c(1, 2))\nplot(1:3)\nplot(3:1)", None, ["figure-1.png", "figure-1.svg"]),  # one page, two panels
        ("x <- 1:3\ny <- sum(x)", None, []),
    ],
)
def test_plots_become_png_and_svg_artifacts(
    workers: Workers, code: str, label: str | None, expected: list[str]
) -> None:
    session = new_session()
    out = workers.run(code, session, label=label)
    assert out["success"], out["error"]
    assert names(out) == expected
    assert_valid_files(workers, session, out)


def test_a_printed_ggplot_is_not_drawn_twice_and_pages_keep_their_order(workers: Workers) -> None:
    session = new_session()
    code = GGPLOT + f"p <- {POINTS}\nprint(p)\nplot(1:3)\nq <- p + ggtitle('later')\nr <- 1"
    out = workers.run(code, session)
    assert out["success"], out["error"]
    # p printed once; the base plot; q assigned and never printed
    assert names(out) == [f"figure-{n}.{fmt}" for n in (1, 2, 3) for fmt in ("png", "svg")]
    svg = (workers.workspace(session) / "artifacts" / "figure-3.svg").read_text()
    assert "later" in svg or "<path" in svg  # the title is drawn as glyphs in cairo's SVG


def test_a_ggplot_from_an_earlier_run_is_not_drawn_again(workers: Workers) -> None:
    session = new_session()
    assert names(workers.run(GGPLOT + f"p <- {POINTS}", session)) == ["figure-1.png", "figure-1.svg"]
    assert workers.run("n <- 2", session)["artifacts"] == []


def test_names_in_use_are_never_overwritten(workers: Workers) -> None:
    session = new_session()
    first = workers.run("plot(1:3)", session, label="trend")
    second = workers.run("plot(3:1)", session, label="trend")
    third = workers.run("plot(1:2)", session)
    fourth = workers.run("plot(2:1)", session)
    assert names(first) == ["trend.png", "trend.svg"]
    assert names(second) == ["trend-2.png", "trend-2.svg"]
    assert names(third) == ["figure-1.png", "figure-1.svg"] and names(fourth) == ["figure-2.png", "figure-2.svg"]


def test_pdf_on_request(workers: Workers) -> None:
    session = new_session()
    out = workers.run("options(nini.plot_formats = c('png', 'svg', 'pdf'))\nplot(1:10)", session)
    assert names(out) == ["figure-1.png", "figure-1.svg", "figure-1.pdf"]
    assert_valid_files(workers, session, out)


def test_plots_drawn_before_an_error_are_kept(workers: Workers) -> None:
    session = new_session()
    out = workers.run("plot(1:3)\nstop('after the plot')", session)
    assert out["error"]["line"] == 2
    assert names(out) == ["figure-1.png", "figure-1.svg"]


def test_a_ggplot_that_cannot_be_built_is_reported_not_fatal(workers: Workers) -> None:
    out = workers.run(GGPLOT + "bad <- ggplot(mtcars, aes(nope, wt)) + geom_point()\nplot(1:2)", new_session())
    assert out["success"], out["error"]
    assert names(out) == ["figure-1.png", "figure-1.svg"]
    assert "nini: the ggplot `bad` could not be drawn" in out["stderr"]


def test_a_plot_file_the_code_writes_itself_is_left_alone(workers: Workers) -> None:
    session = new_session()
    out = workers.run("png('mine.png')\nplot(1:3)\ndev.off()", session)
    assert out["success"], out["error"]
    assert out["artifacts"] == []
    assert (workers.workspace(session) / "mine.png").read_bytes().startswith(b"\x89PNG")


def test_parquet_dplyr_and_ggplot_fit_the_default_memory_limit(workers: Workers, tmp_path: Path) -> None:
    import pandas as pd

    session = new_session()
    folder = workers.workspace(session) / "datasets"
    folder.mkdir(parents=True, exist_ok=True)
    pd.DataFrame({"g": ["a", "b"] * 5000, "v": range(10000)}).to_parquet(folder / "big.parquet")
    code = GGPLOT + (
        "library(dplyr)\nsummary_df <- datasets$big |> group_by(g) |> summarise(v = mean(v))\n"
        "print(ggplot(summary_df, aes(g, v)) + geom_col())\noutput_df <- summary_df"
    )
    out = workers.run(code, session, save_as="summary")
    assert out["success"], out["error"]
    assert out["datasets_saved"] == ["summary"] and len(out["artifacts"]) == 2
    assert workers.pool.memory_limit_mb == 1024
