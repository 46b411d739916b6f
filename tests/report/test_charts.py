"""Chart files grouped by base name: one preview per chart, of the best format present."""

from __future__ import annotations

from pathlib import Path

import pytest

from nini.report.charts import group_charts, preview_kind, split_name
from nini.report.model import ChartFile


def files(*names: str, start: int = 0) -> list[ChartFile]:
    return [ChartFile(name=name, path=Path("/ws/artifacts") / name, order=start + i) for i, name in enumerate(names)]


def test_png_svg_pdf_of_one_chart_is_one_group_previewed_as_png() -> None:
    [group] = group_charts(files("sales.pdf", "sales.svg", "sales.png"))
    assert group.base == "sales"
    assert group.preview is not None and group.preview.name == "sales.png"
    assert [f.name for f in group.files] == ["sales.png", "sales.svg", "sales.pdf"]


@pytest.mark.parametrize(("names", "preview"), [
    (("a.svg", "a.pdf"), "a.svg"),
    (("a.pdf",), "a.pdf"),
    (("a.jpg", "a.webp", "a.svg"), "a.jpg"),
    (("a.jpeg", "a.png"), "a.png"),
    (("a.webp", "a.svg", "a.html"), "a.webp"),
    (("a.svg", "a.html", "a.plotly.json"), "a.svg"),
    (("a.html", "a.plotly.json", "a.pdf"), "a.html"),
    (("a.plotly.json", "a.pdf"), "a.plotly.json"),
    (("a.eps", "a.pdf"), "a.pdf"),
])  # fmt: skip
def test_preview_is_the_highest_priority_format(names: tuple[str, ...], preview: str) -> None:
    [group] = group_charts(files(*names))
    assert group.preview is not None and group.preview.name == preview
    assert len(group.files) == len(names)


def test_plotly_json_is_one_extension() -> None:
    assert split_name("a.plotly.json") == ("a", "json")
    [group] = group_charts(files("a.plotly.json", "a.png"))
    assert group.base == "a" and group.preview is not None and group.preview.name == "a.png"


@pytest.mark.parametrize(("name", "split"), [
    ("q1.v2.png", ("q1.v2", "png")), ("Chart.PNG", ("Chart", "png")), ("README", ("README", "")),
    (".plotly.json", (".plotly", "json")), ("fit.Plotly.JSON", ("fit", "json")),
])  # fmt: skip
def test_split_name(name: str, split: tuple[str, str]) -> None:
    assert split_name(name) == split


@pytest.mark.parametrize(("name", "kind"), [
    ("a.png", "image"), ("a.JPG", "image"), ("a.webp", "image"), ("a.svg", "image"), ("a.html", "html"),
    ("a.pdf", "file"), ("a.plotly.json", "file"),
])  # fmt: skip
def test_preview_kind(name: str, kind: str) -> None:
    assert preview_kind(files(name)[0]) == kind


def test_groups_come_in_order_of_creation() -> None:
    charts = files("b.png", "a.png", "b.svg", "c.pdf")
    charts = [charts[3], charts[2], charts[1], charts[0]]  # the input order does not matter
    groups = group_charts(charts)
    assert [g.base for g in groups] == ["b", "a", "c"]
    assert [g.order for g in groups] == [0, 1, 3]


def test_a_chart_overwritten_keeps_its_first_position_and_its_last_record() -> None:
    first = files("a.png", "b.png")
    again = ChartFile(name="a.png", path=Path("/ws/artifacts/a.png"), order=5, step_id="later")
    groups = group_charts([*first, again])
    assert [g.base for g in groups] == ["a", "b"]
    assert groups[0].files == [again] and groups[0].order == 0


def test_no_files_no_groups() -> None:
    assert group_charts([]) == []
