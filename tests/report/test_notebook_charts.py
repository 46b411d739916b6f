"""Every kind of chart a notebook output holds becomes a chart of the report, grouped and ranked
like session charts: images shown, interactive pages and other files linked."""

from __future__ import annotations

import base64
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_notebook, new_output

from nini.report.builder import ReportOptions, build_report
from nini.report.sources import from_notebook

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)
GIF = b"GIF89a\x01\x00\x01\x00\x80\x00\x00\x00\x00\x00\xff\xff\xff!\xf9\x04\x01\x00\x00\x00\x00,\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;"
WEBP = b"RIFF\x1a\x00\x00\x00WEBPVP8L\r\x00\x00\x00/\x00\x00\x00\x10\x07\x10\x11\x11\x88\x88\xfe\x07\x00"
PDF = b"%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n"
PLOTLY_HTML = '<div id="p"></div><script type="text/javascript">Plotly.newPlot("p", [])</script>'
TABLE_HTML = "<table><tr><th>a</th></tr><tr><td>1</td></tr></table>"


def encoded(data: bytes) -> str:
    return base64.b64encode(data).decode()


def cell(label: str, *bundles: dict) -> nbformat.NotebookNode:
    code = new_code_cell(f"# {label}\nshow()", execution_count=1)
    code.outputs = [new_output("display_data", data=bundle) for bundle in bundles]
    return code


def test_each_output_kind_is_a_chart_with_its_preview_or_link(tmp_path: Path) -> None:
    notebook = new_notebook(cells=[
        cell("gif chart", {"image/gif": encoded(GIF)}),
        cell("webp chart", {"image/webp": encoded(WEBP), "text/plain": "<Figure>"}),
        cell("pdf only", {"application/pdf": encoded(PDF)}),
        cell("plotly chart", {"application/vnd.plotly.v1+json": {"data": [], "layout": {}}, "text/html": PLOTLY_HTML}),
        cell("vega chart", {"application/vnd.vegalite.v5+json": {"mark": "bar", "data": {"values": []}}}),
        cell("a table", {"text/html": TABLE_HTML, "text/plain": "   a\n0  1"}),
        cell("png plus svg", {"image/png": encoded(PNG), "image/svg+xml": "<svg xmlns='http://www.w3.org/2000/svg'/>"}),
    ])  # fmt: skip
    path = tmp_path / "charts.ipynb"
    nbformat.write(notebook, path)
    data, files = from_notebook(path, files_dir=tmp_path / "files")
    assert sorted(p.name for p in files.iterdir()) == [
        "gif-chart.gif", "pdf-only.pdf", "plotly-chart.html", "plotly-chart.plotly.json",
        "png-plus-svg.png", "png-plus-svg.svg", "vega-chart.vegalite.json", "webp-chart.webp",
    ]  # the DataFrame's HTML runs no script: it is not a chart
    assert (files / "gif-chart.gif").read_bytes() == GIF and (files / "pdf-only.pdf").read_bytes() == PDF
    report = build_report(data, ReportOptions(lang="zh"), link_base=tmp_path)
    headings = [line for line in report.markdown.splitlines() if line.startswith("### 图 ")]
    assert headings == ["### 图 1：gif-chart", "### 图 2：webp-chart", "### 图 3：pdf-only", "### 图 4：plotly-chart",
                        "### 图 5：vega-chart", "### 图 6：png-plus-svg"]  # fmt: skip
    assert "[查看图表文件](files/pdf-only.pdf)" in report.markdown
    assert "[打开交互图表（HTML）](files/plotly-chart.html)" in report.markdown
    assert "[查看图表文件](files/vega-chart.vegalite.json)" in report.markdown
    assert report.html.count('src="data:image/gif;base64,') == 1 and report.html.count('src="data:image/webp;base64,') == 1
    assert report.html.count('src="data:image/png;base64,') == 1  # png outranks svg: one preview per chart
