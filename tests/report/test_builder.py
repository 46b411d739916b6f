"""The layered report: business sections, the observability appendix, charts and escaping."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from markdown_it import MarkdownIt

from nini.report.builder import ReportOptions, build_report, md_inline, md_prose
from nini.report.model import ChartFile, DatasetInfo, ReportInput, Step, ToolCallInfo

ZH_SECTIONS = ["## 数据集概览", "## 分析方法", "## 分析摘要", "## 图表", "## 关键发现", "## 结论与建议"]
EN_SECTIONS = [
    "## Dataset overview",
    "## Methods",
    "## Summary",
    "## Charts",
    "## Key findings",
    "## Conclusions and recommendations",
]
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "sessions" / "s1" / "workspace"
    (path / "artifacts").mkdir(parents=True)
    (path / "reports").mkdir()
    return path


def charts(workspace: Path, *names: str) -> list[ChartFile]:
    out = []
    for order, name in enumerate(names):
        path = workspace / "artifacts" / name
        path.write_bytes(PNG if name.endswith(".png") else b"<svg xmlns='http://www.w3.org/2000/svg'/>")
        out.append(ChartFile(name=name, path=path, order=order))
    return out


def step(id: str, order: int, **fields: Any) -> Step:
    return Step(
        id=id,
        order=order,
        language=fields.pop("language", "python"),
        status=fields.pop("status", "succeeded"),
        code="x",
        **fields,
    )


def session(workspace: Path) -> ReportInput:
    """A session full of system detail that must stay out of the business sections."""
    steps = [
        step(
            "a",
            0,
            label="load",
            purpose=f"read {workspace}/sales.csv with run_code",
            tool_name="run_code",
            duration_ms=1234,
            stdout=f"loaded {workspace}/sales.csv\nrows: 1200\n",
        ),
        step(
            "b",
            1,
            language="r",
            label="model",
            purpose="fit a regression with run_r_code",
            tool_name="run_r_code",
            duration_ms=877,
            status="failed",
            error={"code": "RuntimeError"},
        ),
        step(
            "c",
            2,
            language="r",
            label="model",
            purpose="fit a regression",
            tool_name="run_r_code",
            duration_ms=950,
            result={"r2": 0.91},
        ),
    ]
    calls = [
        ToolCallInfo("run_code", "succeeded", 1234),
        ToolCallInfo("run_r_code", "failed", 877),
        ToolCallInfo("run_r_code", "succeeded", 950),
    ]
    return ReportInput(
        source="session s1",
        steps=steps,
        charts=charts(workspace, "sales.png", "sales.svg"),
        datasets=[DatasetInfo("sales", 1200, ["region", "revenue"])],
        tool_calls=calls,
    )


def build(data: ReportInput, workspace: Path, **options: Any) -> Any:
    return build_report(data, ReportOptions(**options), link_base=workspace / "reports")


def positions(markdown: str, headings: list[str]) -> list[int]:
    lines = markdown.splitlines()
    return [lines.index(heading) for heading in headings]


def test_sections_in_order_with_the_default_title(workspace: Path) -> None:
    report = build(session(workspace), workspace)
    assert report.title == "科研数据分析报告"
    assert report.markdown.startswith("# 科研数据分析报告\n")
    found = positions(report.markdown, ZH_SECTIONS)
    assert found == sorted(found)
    assert "## 分析统计（系统观测）" not in report.markdown
    assert report.markdown == report.body_markdown


def test_english_headings(workspace: Path) -> None:
    report = build(session(workspace), workspace, lang="en", include_session_stats=True)
    assert report.markdown.startswith("# Data Analysis Report\n")
    found = positions(report.markdown, [*EN_SECTIONS, "## Analysis statistics (system observability)"])
    assert found == sorted(found)
    assert "### Figure 1: sales" in report.markdown and "### Chart files" in report.markdown
    assert not re.search(r"[\u4e00-\u9fff]", report.markdown), "Chinese wording in an English report"


def test_title_from_options_then_source(workspace: Path) -> None:
    data = session(workspace)
    data.title = "Sales review"
    assert build(data, workspace).title == "Sales review"
    assert build(data, workspace, title="Q3 revenue").markdown.startswith("# Q3 revenue\n")


@pytest.mark.parametrize(
    ("option", "heading"), [("include_charts", "## 图表"), ("include_key_findings", "## 关键发现")]
)
def test_sections_can_be_left_out(workspace: Path, option: str, heading: str) -> None:
    data = session(workspace)
    assert heading in build(data, workspace).markdown.splitlines()
    left_out = build(data, workspace, **{option: False})
    assert heading not in left_out.markdown.splitlines()
    # the steps the findings come from are listed with their code, after the conclusions
    referred = ["## 引用的步骤"] if option != "include_key_findings" else []
    assert [h for h in ZH_SECTIONS if h != heading] + referred == [
        line for line in left_out.markdown.splitlines() if line.startswith("## ")
    ]


OBSERVABILITY = [
    "run_code",
    "run_r_code",
    " ms",
    "1234",
    "877",
    "token",
    "Token",
    "令牌",
    "/tmp",
    "workspace",
    "sessions/s1",
    "工具调用",
    "tool call",
    "耗时",
    "失败",
    "RuntimeError",
    "session s1",
    "1 次",
    "2 次",
]


def test_the_body_holds_no_observability_and_the_appendix_does(workspace: Path) -> None:
    report = build(session(workspace), workspace, include_session_stats=True)
    for item in OBSERVABILITY:
        assert item not in report.body_markdown, f"{item!r} in the business sections"
    assert str(workspace) not in report.body_markdown
    appendix = report.markdown[len(report.body_markdown) :]
    assert appendix.startswith("\n## 分析统计（系统观测）\n")
    for item in [
        "run_code：1 次，失败 0 次，耗时合计 1.2 s",
        "run_r_code：2 次，失败 1 次，耗时合计 1.8 s",
        "R：2 次，失败 1 次",
        "失败步骤：1（RuntimeError 1）",
        "sales：1,200 行",
        "session s1",
    ]:
        assert item in appendix, item


def test_the_body_is_byte_identical_with_and_without_the_appendix(workspace: Path) -> None:
    data = session(workspace)
    plain, observed = build(data, workspace), build(data, workspace, include_session_stats=True)
    assert plain.body_markdown == observed.body_markdown == plain.markdown
    assert observed.markdown.startswith(observed.body_markdown) and len(observed.markdown) > len(plain.markdown)
    assert "分析统计（系统观测）" in observed.html and "分析统计（系统观测）" not in plain.html


def test_defaults_derive_methods_summary_and_conclusions(workspace: Path) -> None:
    report = build(session(workspace), workspace)
    body = report.body_markdown
    assert "本次分析使用 Python 和 R 完成，主要步骤如下：" in body
    assert "1. load：read sales.csv with Python" in body and "2. model：fit a regression\n" in body
    assert "分析基于数据集 sales。" in body and "本次分析得到 2 项主要结果" in body
    assert "- model: r2: 0.91" in body
    assert "- model: r2: 0.91（步骤 3）" in body  # the step it comes from
    assert body.split("\n## 结论与建议\n")[1].startswith("\n本次会话未给出结论。\n")  # never a made-up conclusion


def test_empty_input_gives_sensible_text() -> None:
    report = build_report(ReportInput(source="empty.ipynb"), ReportOptions())
    for text in [
        "未记录数据集。",
        "未记录分析步骤。",
        "本次分析没有可汇总的结果。",
        "本次分析没有生成图表。",
        "没有可报告的关键发现。",
    ]:
        assert text in report.markdown


def test_given_texts_are_used_and_notes_feed_methods_and_conclusions(workspace: Path) -> None:
    data = session(workspace)
    data.title = "Sales study"
    data.notes = ["# Sales study\nWe compare regions.", "## Data\n42 stores.", "## 结论\nNorth leads."]
    data.conclusion = "North leads."  # the notebook's own concluding section (sources.from_notebook)
    report = build(data, workspace)
    methods = report.markdown.split("\n## 分析方法\n")[1].split("\n## 分析摘要\n")[0]
    # no second title, and the concluding section is the conclusions' only
    assert methods.startswith("\nWe compare regions.\n\n#### Data\n42 stores.\n\n本次分析使用")
    assert report.markdown.split("\n## 结论与建议\n")[1].split("\n## 引用的步骤\n")[0] == "\nNorth leads.\n"
    given = build(
        data,
        workspace,
        methods="Two-sample t-test.",
        summary_text="Revenue grew.",
        conclusions="Invest north.",
        dataset_names=["sales", "targets"],
    )
    assert "Two-sample t-test." in given.markdown and "We compare regions." not in given.markdown
    assert "Revenue grew." in given.markdown and "Invest north." in given.markdown
    assert "- **targets**" in given.markdown


def test_one_preview_and_every_format_in_the_manifest(workspace: Path) -> None:
    data = ReportInput(source="s", charts=charts(workspace, "sales.pdf", "sales.svg", "sales.png"))
    report = build(data, workspace)
    section = report.markdown.split("## 图表")[1].split("### 图表清单")[0]
    assert section.count("### 图 ") == 1 and section.count("![") == 1
    assert "![sales](../artifacts/sales.png)" in section
    manifest = report.markdown.split("### 图表清单")[1].split("## ")[0]
    assert manifest.strip() == (
        "- sales：[sales.png](../artifacts/sales.png)、[sales.svg](../artifacts/sales.svg)、"
        "[sales.pdf](../artifacts/sales.pdf)"
    )


def test_svg_and_pdf_preview_the_svg(workspace: Path) -> None:
    report = build(ReportInput(source="s", charts=charts(workspace, "a.pdf", "a.svg")), workspace)
    assert "![a](../artifacts/a.svg)" in report.markdown and "查看图表文件" not in report.markdown


def test_a_pdf_only_chart_gets_exactly_one_link_entry(workspace: Path) -> None:
    report = build(ReportInput(source="s", charts=charts(workspace, "fit.pdf")), workspace)
    section = report.markdown.split("## 图表")[1].split("### 图表清单")[0]
    assert report.markdown.count("查看图表文件") == 1
    assert section.count("](") == 1 and "[查看图表文件](../artifacts/fit.pdf)" in section
    assert report.html.count("查看图表文件") == 1


def test_html_charts_get_an_interactive_link(workspace: Path) -> None:
    report = build(ReportInput(source="s", charts=charts(workspace, "map.html", "map.plotly.json")), workspace)
    assert "[打开交互图表（HTML）](../artifacts/map.html)" in report.markdown
    assert report.markdown.count("### 图 ") == 1
    assert "[map.plotly.json](../artifacts/map.plotly.json)" in report.markdown


def test_plotly_json_and_png_are_one_chart(workspace: Path) -> None:
    report = build(ReportInput(source="s", charts=charts(workspace, "a.plotly.json", "a.png")), workspace)
    assert report.markdown.count("### 图 ") == 1 and "### 图 1：a\n" in report.markdown
    assert [g.base for g in report.charts] == ["a"]


def test_figures_are_numbered_in_order_of_creation(workspace: Path) -> None:
    files = charts(workspace, "first.png", "second.pdf", "third.svg", "first.svg")
    report = build(ReportInput(source="s", charts=files[::-1]), workspace)
    headings = [line for line in report.markdown.splitlines() if line.startswith("### 图 ")]
    assert headings == ["### 图 1：first", "### 图 2：second", "### 图 3：third"]


def test_links_are_bare_file_names_without_a_link_base(workspace: Path) -> None:
    report = build_report(ReportInput(source="s", charts=charts(workspace, "my chart (1).png")), ReportOptions())
    assert "![my chart (1)](my%20chart%20%281%29.png)" in report.markdown


def test_html_embeds_images_as_data_uris(workspace: Path) -> None:
    data = ReportInput(source="s", charts=charts(workspace, "a.png", "b.svg", "b.pdf", "c.pdf"))
    embedded = build(data, workspace).html
    assert embedded.count('src="data:image/png;base64,') == 1
    assert embedded.count('src="data:image/svg+xml;base64,') == 1
    assert "<svg" not in embedded
    assert '<a href="../artifacts/c.pdf" rel="noopener noreferrer nofollow">查看图表文件</a>' in embedded
    linked = build_report(data, ReportOptions(), embed_images=False, link_base=workspace / "reports").html
    # not embedded, an image is a link: the page's policy shows data: images only
    assert "<img" not in linked and '<a href="../artifacts/a.png" rel="noopener noreferrer nofollow">a</a>' in linked
    assert linked.startswith("<!DOCTYPE html>") and "<style>" in linked


def test_a_missing_image_file_stays_a_link(workspace: Path) -> None:
    files = charts(workspace, "gone.png")
    files[0].path.unlink()
    assert (
        '<a href="../artifacts/gone.png" rel="noopener noreferrer nofollow">gone</a>'
        in build(ReportInput(source="s", charts=files), workspace).html
    )


HOSTILE = ["<script>alert(1)</script>", "<img src=x onerror=alert(1)>"]


class TagCollector(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def assert_inert(html: str) -> None:
    """No script element, no event handler, no javascript: URL, no image but our data: previews."""
    lowered = html.lower()
    assert "<script" not in lowered and "<img src=x" not in lowered
    collector = TagCollector()
    collector.feed(html)
    for tag, attrs in collector.tags:
        assert tag != "script"
        assert not [name for name in attrs if name.startswith("on")], (tag, attrs)
        for name in ("href", "src"):
            assert not str(attrs.get(name, "")).lower().startswith("javascript"), (tag, attrs)
        if tag == "img":
            assert str(attrs["src"]).startswith("data:image/"), attrs


@pytest.mark.parametrize("hostile", HOSTILE)
def test_hostile_values_are_escaped_everywhere(workspace: Path, hostile: str) -> None:
    data = ReportInput(
        source=hostile,
        steps=[step("a", 0, label=hostile, purpose=hostile, result={"region": hostile}, stdout=hostile)],
        charts=charts(workspace, f"{hostile.replace('/', '_')}.png"),
        datasets=[DatasetInfo(hostile, 3, [hostile])],
        tool_calls=[ToolCallInfo(hostile, "succeeded", 5)],
        notes=[hostile],
        title=hostile,
    )
    for options in [
        {},
        {
            "methods": hostile,
            "summary_text": hostile,
            "conclusions": hostile,
            "title": hostile,
            "dataset_names": [hostile],
            "include_session_stats": True,
        },
    ]:
        report = build(data, workspace, **options)
        assert_inert(report.html)
        assert "&lt;" in report.html


def test_a_chart_name_cannot_inject_a_link(workspace: Path) -> None:
    name = "[click](javascript:alert(1)) ![x](http:__evil.example_t.png)"
    report = build(ReportInput(source="s", charts=charts(workspace, f"{name}.png")), workspace)
    tokens = MarkdownIt("commonmark").parseInline(report.markdown.split("### 图表清单")[1])[0].children or []
    hrefs = [t.attrGet("href") for t in tokens if t.type == "link_open"]
    assert all(str(href).startswith("../artifacts/") for href in hrefs)
    assert 'href="javascript' not in report.html and 'evil.example_t.png"' not in report.html


def test_prose_cannot_break_the_report_structure(workspace: Path) -> None:
    report = build(session(workspace), workspace, methods="# Methods\n```python\nunclosed = True", conclusions="Done.")
    assert "<h2>结论与建议</h2>" in report.html and "<h1>Methods</h1>" not in report.html
    assert "<h4>Methods</h4>" in report.html


@pytest.mark.parametrize(
    ("text", "markdown"),
    [
        ("a*b*", "a\\*b\\*"),
        ("[x](y)", "\\[x\\](y)"),
        ("1. one", "1\\. one"),
        ("- item", "\\- item"),
        ("snake_case", "snake_case"),
        ("_lead", "\\_lead"),
        ("R&D &amp;", "R&D \\&amp;"),
        ("$5 and $6", "\\$5 and \\$6"),
        ("two\nlines", "two\\\n  lines"),
        ("# h", "\\# h"),
        ("a|b", "a\\|b"),
    ],
)
def test_md_inline_escapes_markup(text: str, markdown: str) -> None:
    assert md_inline(text) == markdown


def test_md_prose_keeps_markdown_but_escapes_tags() -> None:
    assert md_prose("**bold** <b>x</b> `<code>`") == "**bold** \\<b>x\\</b> `<code>`"
    assert md_prose("title\n===") == "title\n\n==="


def test_md_prose_turns_images_into_links_that_no_viewer_fetches() -> None:
    """A report's .md is opened in JupyterLab, whose sanitizer lets remote images through: an image a
    model wrote into the conclusions would be fetched from wherever it names (issue 31)."""
    prose = md_prose(
        "See ![chart](http://127.0.0.1:9/leak.png?d=secret) and ![x][ref]\n\n[ref]: http://127.0.0.1:9/r.png\n"
        "and `![kept](in-code)` and ![](http://127.0.0.1:9/x.png) and ![dot](data:image/png;base64,AA==)"
    )
    html = MarkdownIt("commonmark").render(prose)
    assert re.findall(r'<img src="([^"]*)"', html) == ["data:image/png;base64,AA=="]  # embedded: loads nothing
    assert (
        '<a href="http://127.0.0.1:9/leak.png?d=secret">chart</a>' in html and "<code>![kept](in-code)</code>" in html
    )
    assert '<a href="http://127.0.0.1:9/x.png">http://127.0.0.1:9/x.png</a>' in html  # no alt: the address as its text


def cell_step(cell: int, status: str = "succeeded", error: dict | None = None, **fields: Any) -> Step:
    """A notebook's code cell as a step: its id and its number are the cell's position."""
    return Step(
        id=f"c{cell}",
        order=cell,
        language=fields.pop("language", "python"),
        status=status,
        code=fields.pop("code", f"x{cell}"),
        error=error,
        tool_name="notebook",
        cell=cell,
        **fields,
    )


FAILED = {"code": "CODE_ERROR", "message": "NameError: name 'df' is not defined", "ename": "NameError"}


def many_failures() -> ReportInput:
    """121 cells of which 72 failed: raised, timed out, never ran; one failed cell drew a chart."""
    reasons = [
        FAILED,
        {"code": "TIMEOUT", "message": "the cell ran past its time limit"},
        {"code": "CANCELED", "message": "the cell was never run"},
    ]
    steps = [
        cell_step(n, "failed", reasons[n % 3]) if n <= 72 else cell_step(n, stdout=f"total: {n}\n", label=f"total {n}")
        for n in range(1, 122)
    ]
    return ReportInput(source="big.ipynb", steps=steps)


@pytest.mark.parametrize(
    ("lang", "sentence", "named", "more"),
    [
        (
            "en",
            "72 of 121 cells failed; results are partial.",
            "Failed cells: cell 1 (timeout), cell 2 (not run), cell 3 (NameError), cell 4 (timeout)",
            " and 62 more.",
        ),
        (
            "zh",
            "121 个单元格中有 72 个失败，结果不完整。",
            "失败的单元格：单元格 1（超时）、单元格 2（未运行）、单元格 3（NameError）、单元格 4（超时）",
            "，另有 62 个。",
        ),
    ],
)
def test_failed_cells_are_said_and_named_first_in_the_summary(lang: str, sentence: str, named: str, more: str) -> None:
    report = build_report(many_failures(), ReportOptions(lang=lang))
    summary = report.markdown.split("\n## " + ("Summary" if lang == "en" else "分析摘要") + "\n")[1].split("\n## ")[0]
    assert summary.startswith("\n" + sentence) and named in summary
    assert (
        summary.count("(" if lang == "en" else "（", 0, summary.index(more)) == 10
    )  # ten named, then the rest counted
    assert len(report.failures) == 72 and all(f.step.cell <= 72 for f in report.failures)
    assert not any(finding.step_id in {f"c{n}" for n in range(1, 73)} for finding in report.findings)


def test_a_failed_cells_chart_is_left_out_and_listed(workspace: Path) -> None:
    drawn = [
        ChartFile(name=name, path=file.path, order=file.order, step_id=step)
        for file, name, step in zip(
            charts(workspace, "broken.png", "fine.png"), ("broken.png", "fine.png"), ("c51", "c52"), strict=True
        )
    ]
    data = ReportInput(
        source="nb.ipynb", steps=[cell_step(51, "failed", FAILED), cell_step(52, label="Trend")], charts=drawn
    )
    report = build(data, workspace, lang="en")
    assert [group.base for group in report.charts] == ["fine"] and "broken.png" not in report.markdown
    assert (
        "Failed cells: cell 51 (NameError). Their findings and charts are left out of this report. "
        "Charts left out with them: broken." in report.markdown
    )
    # the figure names the cell the way the failure list does
    assert "### Figure 1: Trend (cell 52)\n" in report.markdown


def test_a_session_names_its_failed_steps_and_a_corrected_one_is_no_failure(workspace: Path) -> None:
    steps = [
        step("a", 0, label="load", result={"rows": 10}),
        step("b", 1, label="fit", status="failed", error=FAILED),
        step("c", 2, label="plot", status="failed", error={"code": "TIMEOUT", "message": "timed out"}),
        step("d", 3, label="fit", result={"r2": 0.91}),
    ]  # corrects b
    report = build(ReportInput(source="session s1", steps=steps), workspace, lang="en")
    summary = report.markdown.split("\n## Summary\n")[1]
    assert summary.startswith("\n1 of 4 steps failed; results are partial. Failed steps: step 3 (timeout).")
    assert "- fit: r2: 0.91 (step 4)" in report.markdown and "step 2" not in report.markdown
    whole = build(ReportInput(source="session s1", steps=[steps[0], steps[1], steps[3]]), workspace, lang="en")
    assert "failed" not in whole.body_markdown  # corrected: the results are not partial


def test_each_finding_names_its_cell_and_the_page_links_to_its_code(workspace: Path) -> None:
    code = "# Final RMSE\nprint('RMSE:', 47730.2)  # </code><script>alert(1)</script> ```"
    data = ReportInput(
        source="nb.ipynb",
        steps=[cell_step(3, code="import pandas"), cell_step(12, code=code, stdout="RMSE: 47730.2\n")],
    )
    report = build(data, workspace, lang="en")
    assert "- RMSE: 47730 (cell 12)" in report.markdown  # named, not linked, in the Markdown
    assert "The analysis produced one main result:" in report.markdown  # not "1 main results"
    assert "](#cell-12)" not in report.markdown
    cited = report.markdown.split("\n## Cells referred to\n")[1]
    assert "### cell 12\n\n````\n# Final RMSE\n" in cited and "### cell 3" not in cited  # only the cells named
    page = report.html
    assert '<a href="#cell-12"' in page and '<h3 id="cell-12">cell 12</h3>' in page
    assert "<script>" not in page and "&lt;/code&gt;&lt;script&gt;" in page  # the code is shown, escaped


def test_a_model_cannot_plant_an_anchor(workspace: Path) -> None:
    """Ids are set only on the headings of "Cells referred to", which the report writes."""
    data = ReportInput(source="nb.ipynb", steps=[cell_step(12, stdout="RMSE: 4\n", label="fit")])
    report = build(data, workspace, lang="en", conclusions="### cell 12\n\n## Cells referred to\n\n### cell 12")
    assert report.html.count('id="cell-12"') == 1
    assert report.html.index('id="cell-12"') > report.html.index("<h2>Cells referred to</h2>")


def test_methods_read_words_not_html_and_r_magic_cells_are_r(workspace: Path) -> None:
    data = ReportInput(
        source="nb.ipynb",
        notes=[
            '# Study\n\n<a href="https://mybinder.org"><img src="https://mybinder.org/badge.svg"></a>\n\n'
            'We fit <b>a linear model</b> &amp; compare groups.\n\n<p align="center">Second paragraph.</p>',
            "## Setup\n\n[![Colab](https://colab.research.google.com/badge.svg)](https://colab.example)\n\n"
            "Install the packages.",
            "## Overview\n\n- [Reading the data](#Reading-the-data)\n- [Fitting](#Fitting)",
            "## Chapter 3",
            "### Fitting",
        ],
        steps=[
            cell_step(2, code="import pandas as pd\ndf = pd.DataFrame()"),
            cell_step(3, code="%%R -i df\nlibrary(MASS)\nsummary(lm(y ~ x, df))"),
        ],
    )
    report = build(data, workspace, lang="en")
    methods = report.markdown.split("\n## Methods\n")[1].split("\n## Summary\n")[0]
    assert "We fit a linear model & compare groups." in methods and "Install the packages." in methods
    for markup in ("<", "img", "href", "badge", "Colab", "&amp;"):
        assert markup not in methods, markup
    for outline in ("Overview", "Reading the data", "Chapter 3", "Fitting"):  # headings alone, a table of contents
        assert outline not in methods, outline
    assert "analysed with Python (pandas) and R (MASS)." in methods


@pytest.mark.parametrize(
    ("lang", "source", "line"),
    [
        ("en", "nb.ipynb", "The notebook states no conclusion."),
        ("zh", "nb.ipynb", "笔记本未给出结论。"),
        ("en", "session s1", "The session states no conclusion."),
        ("zh", "session s1", "本次会话未给出结论。"),
    ],
)
def test_no_conclusion_is_made_up(workspace: Path, lang: str, source: str, line: str) -> None:
    """A note that merely mentions a summary is not the conclusion (rasbt's was "Check recommended
    package versions:"): only the source's own concluding section is."""
    data = ReportInput(source=source, notes=["## Summary of the setup\n\nCheck recommended package versions:"])
    heading = "\n## Conclusions and recommendations\n" if lang == "en" else "\n## 结论与建议\n"
    assert build(data, workspace, lang=lang).markdown.split(heading)[1] == f"\n{line}\n"
    data.conclusion = "The model generalises: test RMSE 47,730."
    assert (
        build(data, workspace, lang=lang).markdown.split(heading)[1] == "\nThe model generalises: test RMSE 47,730.\n"
    )
