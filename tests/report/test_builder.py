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
EN_SECTIONS = ["## Dataset overview", "## Methods", "## Summary", "## Charts", "## Key findings",
               "## Conclusions and recommendations"]
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
    return Step(id=id, order=order, language=fields.pop("language", "python"), status=fields.pop("status", "succeeded"),
                code="x", **fields)


def session(workspace: Path) -> ReportInput:
    """A session full of system detail that must stay out of the business sections."""
    steps = [
        step("a", 0, label="load", purpose=f"read {workspace}/sales.csv with run_code", tool_name="run_code",
             duration_ms=1234, stdout=f"loaded {workspace}/sales.csv\nrows: 1200\n"),
        step("b", 1, language="r", label="model", purpose="fit a regression with run_r_code", tool_name="run_r_code",
             duration_ms=877, status="failed", error={"code": "RuntimeError"}),
        step("c", 2, language="r", label="model", purpose="fit a regression", tool_name="run_r_code", duration_ms=950,
             result={"r2": 0.91}),
    ]
    calls = [ToolCallInfo("run_code", "succeeded", 1234), ToolCallInfo("run_r_code", "failed", 877),
             ToolCallInfo("run_r_code", "succeeded", 950)]
    return ReportInput(source="session s1", steps=steps, charts=charts(workspace, "sales.png", "sales.svg"),
                       datasets=[DatasetInfo("sales", 1200, ["region", "revenue"])], tool_calls=calls)


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


@pytest.mark.parametrize(("option", "heading"), [("include_charts", "## 图表"), ("include_key_findings", "## 关键发现")])
def test_sections_can_be_left_out(workspace: Path, option: str, heading: str) -> None:
    data = session(workspace)
    assert heading in build(data, workspace).markdown.splitlines()
    left_out = build(data, workspace, **{option: False})
    assert heading not in left_out.markdown.splitlines()
    # the steps the findings come from are listed with their code, after the conclusions
    referred = ["## 引用的步骤"] if option != "include_key_findings" else []
    assert [h for h in ZH_SECTIONS if h != heading] + referred == [
        line for line in left_out.markdown.splitlines() if line.startswith("## ")]


OBSERVABILITY = ["run_code", "run_r_code", " ms", "1234", "877", "token", "Token", "令牌", "/tmp", "workspace",
                 "sessions/s1", "工具调用", "tool call", "耗时", "失败", "RuntimeError", "session s1", "1 次", "2 次"]


def test_the_body_holds_no_observability_and_the_appendix_does(workspace: Path) -> None:
    report = build(session(workspace), workspace, include_session_stats=True)
    for item in OBSERVABILITY:
        assert item not in report.body_markdown, f"{item!r} in the business sections"
    assert str(workspace) not in report.body_markdown
    appendix = report.markdown[len(report.body_markdown):]
    assert appendix.startswith("\n## 分析统计（系统观测）\n")
    for item in ["run_code：1 次，失败 0 次，耗时合计 1.2 s", "run_r_code：2 次，失败 1 次，耗时合计 1.8 s",
                 "R：2 次，失败 1 次", "失败步骤：1（RuntimeError 1）", "sales：1,200 行", "session s1"]:
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
    for text in ["未记录数据集。", "未记录分析步骤。", "本次分析没有可汇总的结果。", "本次分析没有生成图表。", "没有可报告的关键发现。"]:
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
    given = build(data, workspace, methods="Two-sample t-test.", summary_text="Revenue grew.", conclusions="Invest north.",
                  dataset_names=["sales", "targets"])
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
    assert manifest.strip() == ("- sales：[sales.png](../artifacts/sales.png)、[sales.svg](../artifacts/sales.svg)、"
                                "[sales.pdf](../artifacts/sales.pdf)")


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
    assert '<a href="../artifacts/gone.png" rel="noopener noreferrer nofollow">gone</a>' in build(ReportInput(source="s", charts=files), workspace).html


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
    for options in [{}, {"methods": hostile, "summary_text": hostile, "conclusions": hostile, "title": hostile,
                         "dataset_names": [hostile], "include_session_stats": True}]:
        report = build(data, workspace, **options)
        assert_inert(report.html)
        assert "&lt;" in report.html


def test_a_chart_name_cannot_inject_a_link(workspace: Path) -> None:
    name = "[click](javascript:alert(1)) ![x](http:__evil.example_t.png)"
    report = build(ReportInput(source="s", charts=charts(workspace, f"{name}.png")), workspace)
    tokens = MarkdownIt("commonmark").parseInline(report.markdown.split("### 图表清单")[1])[0].children or []
    hrefs = [t.attrGet("href") for t in tokens if t.type == "link_open"]
    assert all(str(href).startswith("../artifacts/") for href in hrefs)
    assert 'href="javascript' not in report.html and "evil.example_t.png\"" not in report.html


def test_prose_cannot_break_the_report_structure(workspace: Path) -> None:
    report = build(session(workspace), workspace, methods="# Methods\n```python\nunclosed = True", conclusions="Done.")
    assert "<h2>结论与建议</h2>" in report.html and "<h1>Methods</h1>" not in report.html
    assert "<h4>Methods</h4>" in report.html


@pytest.mark.parametrize(("text", "markdown"), [
    ("a*b*", "a\\*b\\*"), ("[x](y)", "\\[x\\](y)"), ("1. one", "1\\. one"), ("- item", "\\- item"),
    ("snake_case", "snake_case"), ("_lead", "\\_lead"), ("R&D &amp;", "R&D \\&amp;"), ("$5 and $6", "\\$5 and \\$6"),
    ("two\nlines", "two\\\n  lines"), ("# h", "\\# h"), ("a|b", "a\\|b"),
])  # fmt: skip
def test_md_inline_escapes_markup(text: str, markdown: str) -> None:
    assert md_inline(text) == markdown


def test_md_prose_keeps_markdown_but_escapes_tags() -> None:
    assert md_prose("**bold** <b>x</b> `<code>`") == "**bold** \\<b>x\\</b> `<code>`"
    assert md_prose("title\n===") == "title\n\n==="


def test_md_prose_turns_images_into_links_that_no_viewer_fetches() -> None:
    """A report's .md is opened in JupyterLab, whose sanitizer lets remote images through: an image a
    model wrote into the conclusions would be fetched from wherever it names (issue 31)."""
    prose = md_prose("See ![chart](http://127.0.0.1:9/leak.png?d=secret) and ![x][ref]\n\n[ref]: http://127.0.0.1:9/r.png\n"
                     "and `![kept](in-code)` and ![](http://127.0.0.1:9/x.png) and ![dot](data:image/png;base64,AA==)")  # fmt: skip
    html = MarkdownIt("commonmark").render(prose)
    assert re.findall(r'<img src="([^"]*)"', html) == ["data:image/png;base64,AA=="]  # embedded: loads nothing
    assert '<a href="http://127.0.0.1:9/leak.png?d=secret">chart</a>' in html and "<code>![kept](in-code)</code>" in html
    assert '<a href="http://127.0.0.1:9/x.png">http://127.0.0.1:9/x.png</a>' in html  # no alt: the address as its text
