"""Chart files grouped by base name: one preview per chart, of the best format present."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nini.report.charts import chart_title, group_charts, preview_kind, split_name
from nini.report.model import ChartFile, Step


def files(*names: str, start: int = 0) -> list[ChartFile]:
    return [ChartFile(name=name, path=Path("/ws/artifacts") / name, order=start + i) for i, name in enumerate(names)]


def test_png_svg_pdf_of_one_chart_is_one_group_previewed_as_png() -> None:
    [group] = group_charts(files("sales.pdf", "sales.svg", "sales.png"))
    assert group.base == "sales"
    assert group.preview is not None and group.preview.name == "sales.png"
    assert [f.name for f in group.files] == ["sales.png", "sales.svg", "sales.pdf"]


@pytest.mark.parametrize(
    ("names", "preview"),
    [
        (("a.svg", "a.pdf"), "a.svg"),
        (("a.pdf",), "a.pdf"),
        (("a.jpg", "a.webp", "a.svg"), "a.jpg"),
        (("a.jpeg", "a.png"), "a.png"),
        (("a.webp", "a.svg", "a.html"), "a.webp"),
        (("a.svg", "a.html", "a.plotly.json"), "a.svg"),
        (("a.html", "a.plotly.json", "a.pdf"), "a.html"),
        (("a.plotly.json", "a.pdf"), "a.plotly.json"),
        (("a.eps", "a.pdf"), "a.pdf"),
    ],
)
def test_preview_is_the_highest_priority_format(names: tuple[str, ...], preview: str) -> None:
    [group] = group_charts(files(*names))
    assert group.preview is not None and group.preview.name == preview
    assert len(group.files) == len(names)


def test_plotly_json_is_one_extension() -> None:
    assert split_name("a.plotly.json") == ("a", "json")
    [group] = group_charts(files("a.plotly.json", "a.png"))
    assert group.base == "a" and group.preview is not None and group.preview.name == "a.png"


@pytest.mark.parametrize(
    ("name", "split"),
    [
        ("q1.v2.png", ("q1.v2", "png")),
        ("Chart.PNG", ("Chart", "png")),
        ("README", ("README", "")),
        (".plotly.json", (".plotly", "json")),
        ("fit.Plotly.JSON", ("fit", "json")),
        ("c.vega.json", ("c", "json")),
    ],
)
def test_split_name(name: str, split: tuple[str, str]) -> None:
    assert split_name(name) == split


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("a.png", "image"),
        ("a.JPG", "image"),
        ("a.webp", "image"),
        ("a.svg", "image"),
        ("a.html", "html"),
        ("a.pdf", "file"),
        ("a.plotly.json", "interactive"),
        ("a.vegalite.json", "interactive"),
        ("a.vega.json", "interactive"),
        ("a.json", "file"),
    ],
)
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


# -- captions -----------------------------------------------------------------------------------


def step(
    code: str, *, cell: int = 7, section: str | None = None, label: str | None = None, language: str = "python"
) -> Step:
    return Step("s1", 0, language, "succeeded", code, label=label, cell=cell, section=section)


def drawn(*names: str, step_id: str = "s1") -> list[ChartFile]:
    return [
        ChartFile(name=name, path=Path("/nb/files") / name, order=i, step_id=step_id) for i, name in enumerate(names)
    ]


@pytest.mark.parametrize(
    ("code", "caption"),
    [
        ("ax.set_title('Revenue by month')\nplt.show()", "Revenue by month"),
        ("plt.title(label='Loss')", "Loss"),
        ("fig.suptitle('Overview')\nax[0].set_title('left')\nax[1].set_title('right')", "Overview"),
        (
            "ax[0].set_title('Adaline - Learning rate 0.1')\nax[1].set_title('Adaline - Learning rate 0.0001')",
            "Adaline - Learning rate 0.1",
        ),
        ("%matplotlib inline\nplt.suptitle(t='Grid')", "Grid"),
        ("ax.set(xlabel='x', title='Set title')", "Set title"),
    ],
)
def test_caption_is_the_title_the_cell_sets(code: str, caption: str) -> None:
    [group] = group_charts(drawn("cell-7.png"))
    assert chart_title(group, [step(code, section="A heading")]) == caption


@pytest.mark.parametrize(
    "code", ["plt.title(f'Fold {k}')", "plt.title(name)", "plt.title('a' + b)", "plt.title(", "plot()"]
)
def test_a_title_that_is_not_a_string_literal_gives_the_heading(code: str) -> None:
    [group] = group_charts(drawn("cell-7.png"))
    assert chart_title(group, [step(code, section="Learning curves")]) == "Learning curves"


def test_without_title_or_heading_the_caption_is_the_cell_never_a_slug() -> None:
    [group] = group_charts(drawn("cell-20.png"))
    assert chart_title(group, [step("plot(x)", cell=20)]) == "cell 20"
    [markdown_image] = group_charts([ChartFile(name="cell-3-image.png", path=Path("/nb/f/cell-3-image.png"), order=0)])
    assert chart_title(markdown_image, []) == "cell 3"


def test_each_figure_a_cell_shows_gets_its_own_title() -> None:
    code = (
        "plot_decision_regions(X, y)\nplt.title('Adaline - Gradient descent')\nplt.show()\n\n"
        "plt.plot(losses)\nplt.ylabel('Mean squared error')\nplt.show()\n"
    )
    groups = group_charts(drawn("cell-9-1.png", "cell-9-2.png"))
    captions = [chart_title(group, [step(code, cell=9, section="Gradient descent")]) for group in groups]
    assert captions == ["Adaline - Gradient descent", "Gradient descent"]  # the second figure sets none


def test_r_titles() -> None:
    [group] = group_charts(drawn("cell-4.png"))
    assert chart_title(group, [step('ggplot(df) + ggtitle("Cars by weight")', language="r")]) == "Cars by weight"
    assert chart_title(group, [step('plot(x, main = "Sine")', language="r")]) == "Sine"


@pytest.mark.parametrize(
    ("name", "spec", "caption"),
    [
        ("f.plotly.json", {"data": [], "layout": {"title": "bar plot"}}, "bar plot"),
        ("f.plotly.json", {"data": [], "layout": {"title": {"text": "<b>bar</b> plot"}}}, "bar plot"),
        ("f.vegalite.json", {"mark": "bar", "title": "Cars"}, "Cars"),
        ("f.vegalite.json", {"mark": "bar", "title": ["Two", "lines"]}, "Two lines"),
        ("f.vega.json", {"marks": [], "title": {"text": "Vega"}}, "Vega"),
        ("f.plotly.json", {"data": [], "layout": {}}, "Heading above"),
    ],
)
def test_caption_from_the_charts_json(tmp_path: Path, name: str, spec: dict, caption: str) -> None:
    (tmp_path / name).write_text(json.dumps(spec))
    [group] = group_charts([ChartFile(name=name, path=tmp_path / name, order=0, step_id="s1")])
    assert chart_title(group, [step("fig.show()", section="Heading above")]) == caption
