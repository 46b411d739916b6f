"""Static previews of Plotly and Vega-Lite charts: images rendered offline (vl-convert, kaleido in one
Chromium), cached by content so a second report renders none, and nothing a chart's JSON names is
ever fetched (a capture server on 127.0.0.1 receives nothing). Without a renderer, or past its time,
a chart is an "interactive chart, open the file" entry, never a page that loads a CDN script."""

from __future__ import annotations

import http.server
import json
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from importlib.util import find_spec
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from nini.execution.sandbox import probe_bwrap
from nini.report import previews
from nini.report.builder import ReportOptions, build_report
from nini.report.charts import group_charts
from nini.report.model import ChartFile, ReportInput, Step
from nini.report.previews import add_previews, offline_figure, preview_cache, safe_svg
from tests.report.test_report_cli import written
from tests.test_cli import _restore_nini_logger, ok  # noqa: F401 - autouse fixture shared with test_cli
from tests.test_cli_sessions import nini  # noqa: F401 - the in-process `nini` fixture
from tests.timeouts import timeout

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
NEEDS_VL_CONVERT = pytest.mark.skipif(
    find_spec("vl_convert") is None, reason="needs vl-convert-python (the charts extra)"
)
NEEDS_KALEIDO = pytest.mark.skipif(
    CHROMIUM is None or find_spec("kaleido") is None, reason="Plotly previews need kaleido and a Chromium"
)
VEGA_LITE = {
    "$schema": "https://vega.github.io/schema/vega-lite/v5.json",
    "title": "Cars",
    "data": {"values": [{"a": "x", "b": 3}, {"a": "y", "b": 5}]},
    "mark": "bar",
    "encoding": {"x": {"field": "a", "type": "nominal"}, "y": {"field": "b", "type": "quantitative"}},
}
FIGURE = {"data": [{"type": "bar", "y": [2, 3, 1]}], "layout": {"title": {"text": "bar plot"}}}


class Capture:
    """An HTTP server on 127.0.0.1 that records every request it gets (and answers each)."""

    def __init__(self) -> None:
        self.requests: list[str] = []
        requests = self.requests

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
                requests.append(self.path)
                self.send_response(200)
                self.send_header("Content-Type", "text/csv")
                self.end_headers()
                self.wfile.write(b"a,b\nx,1\n")

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()


@pytest.fixture
def capture() -> Iterator[Capture]:
    server = Capture()
    yield server
    server.server.shutdown()
    server.server.server_close()


def charts_in(folder: Path, specs: dict[str, object]) -> ReportInput:
    """A report input whose charts are ``specs`` written as JSON files in ``folder``, one step each."""
    folder.mkdir(parents=True, exist_ok=True)
    charts, steps = [], []
    for order, (name, spec) in enumerate(specs.items()):
        (folder / name).write_text(json.dumps(spec), encoding="utf-8")
        charts.append(ChartFile(name=name, path=folder / name, order=order, step_id=f"s{order}"))
        steps.append(Step(f"s{order}", order, "python", "succeeded", "chart.show()", cell=order + 1))
    return ReportInput(source="nb.ipynb", steps=steps, charts=charts)


@NEEDS_VL_CONVERT
def test_a_vega_lite_preview_is_an_svg_and_a_second_report_renders_none(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first, stats = add_previews(charts_in(tmp_path / "one", {"cars.vegalite.json": VEGA_LITE}), cache)
    assert (stats.rendered, stats.cached, stats.missing) == (1, 0, {})
    [group] = group_charts(first.charts)
    assert group.preview is not None and group.preview.name == "cars.svg"
    svg = (tmp_path / "one" / "cars.svg").read_text(encoding="utf-8")
    assert svg.startswith("<svg") and ">Cars</text>" in svg
    again, stats = add_previews(charts_in(tmp_path / "two", {"cars.vegalite.json": VEGA_LITE}), cache)
    assert (stats.rendered, stats.cached) == (0, 1)  # the same JSON elsewhere: from the cache
    assert (tmp_path / "two" / "cars.svg").read_text(encoding="utf-8") == svg
    html = build_report(again, ReportOptions(lang="en"), link_base=tmp_path).html
    assert html.count('src="data:image/svg+xml;base64,') == 1 and "<script" not in html.split("</head>", 1)[1]


@NEEDS_KALEIDO
def test_plotly_previews_are_pngs_drawn_in_one_browser_then_cached(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    other = {"data": [{"type": "scatter", "y": [1, 4, 9]}], "layout": {"title": "squares"}}
    specs = {"bars.plotly.json": FIGURE, "squares.plotly.json": other, "same-bars.plotly.json": FIGURE}
    data, stats = add_previews(charts_in(tmp_path / "one", specs), cache)
    assert (stats.rendered, stats.missing) == (2, {})  # the same figure twice is drawn once
    for name in ("bars.png", "squares.png", "same-bars.png"):
        assert (tmp_path / "one" / name).read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert [group.preview.name for group in group_charts(data.charts) if group.preview] == [
        "bars.png",
        "squares.png",
        "same-bars.png",
    ]
    _, stats = add_previews(charts_in(tmp_path / "two", specs), cache)
    assert (stats.rendered, stats.cached) == (0, 3)


@NEEDS_KALEIDO
@NEEDS_VL_CONVERT
def test_nothing_a_chart_names_is_fetched(tmp_path: Path, capture: Capture) -> None:
    specs = {
        "remote-data.vegalite.json": {
            "data": {"url": f"{capture.url}/data.csv"},
            "mark": "bar",
            "encoding": {"x": {"field": "a", "type": "nominal"}},
        },
        "image-mark.vegalite.json": {
            "data": {"values": [{"x": 1, "u": f"{capture.url}/mark.png"}]},
            "mark": "image",
            "encoding": {"x": {"field": "x", "type": "quantitative"}, "url": {"field": "u"}, "href": {"field": "u"}},
        },
        "paint.vegalite.json": {
            "data": {"values": [{"x": 1}]},
            "mark": {"type": "point", "fill": f"url({capture.url}/p)"},
            "encoding": {"x": {"field": "x", "type": "quantitative"}},
        },
        "logo.plotly.json": {
            "data": [{"type": "bar", "y": [1, 2]}],
            "layout": {
                "images": [
                    {
                        "source": f"{capture.url}/logo.png",
                        "xref": "paper",
                        "yref": "paper",
                        "x": 0,
                        "y": 1,
                        "sizex": 1,
                        "sizey": 1,
                    },
                    {"source": "file:///etc/passwd", "x": 0, "y": 0},
                ]
            },
        },
        "map.plotly.json": {
            "data": [{"type": "scattermapbox", "lat": [1], "lon": [2]}],
            "layout": {"mapbox": {"style": f"{capture.url}/style.json"}},
        },
    }
    data, stats = add_previews(charts_in(tmp_path / "charts", specs), tmp_path / "cache", timeout_s=120)
    assert capture.requests == []
    assert stats.missing.get("remote-data") == previews.FAILED  # its data may not be fetched: no chart to draw
    for name in ("image-mark.svg", "paint.svg"):
        svg = (tmp_path / "charts" / name).read_text(encoding="utf-8")
        # the URL may stay as words (an aria-label), never as a reference the SVG would load
        assert svg.startswith("<svg") and not re.search(rf"(?:href\s*=\s*[\"']|url\()\s*{re.escape(capture.url)}", svg)
    assert (tmp_path / "charts" / "logo.png").read_bytes().startswith(b"\x89PNG")
    report = build_report(data, ReportOptions(lang="en"), link_base=tmp_path)
    assert "[Interactive chart: open the file](charts/remote-data.vegalite.json)" in report.markdown


@NEEDS_KALEIDO
def test_without_a_browser_a_plotly_chart_is_an_interactive_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BROWSER_PATH", str(tmp_path / "no-chromium-here"))  # where kaleido looks first
    data, stats = add_previews(charts_in(tmp_path / "charts", {"bars.plotly.json": FIGURE}), tmp_path / "cache")
    assert stats.missing == {"bars": previews.NO_RENDERER} and stats.rendered == 0
    assert not list((tmp_path / "cache").glob("*"))  # not remembered: a browser installed later draws it
    for lang, entry in (
        ("en", "[Interactive chart: open the file](charts/bars.plotly.json)"),
        ("zh", "[交互图表：请打开文件查看](charts/bars.plotly.json)"),
    ):
        report = build_report(data, ReportOptions(lang=lang), link_base=tmp_path)
        assert entry in report.markdown and "bar plot" in report.markdown  # captioned by its layout.title
        assert "<script" not in report.html.split("</head>", 1)[1] and "cdn.plot.ly" not in report.html


def test_a_chart_past_its_time_or_too_large_has_no_preview(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    specs = {"a.vegalite.json": VEGA_LITE, "b.plotly.json": FIGURE}
    data, stats = add_previews(charts_in(tmp_path / "charts", specs), tmp_path / "cache", timeout_s=0.001)
    assert (
        stats.missing == {"a": previews.TIMEOUT, "b": previews.TIMEOUT}
        and data.charts == charts_in(tmp_path / "charts", specs).charts
    )  # nothing added
    monkeypatch.setattr(previews, "MAX_SPEC_BYTES", 100)  # a limit, not a code path: bounded input
    _, stats = add_previews(charts_in(tmp_path / "big", {"big.vegalite.json": VEGA_LITE}), tmp_path / "cache")
    assert stats.missing == {"big": previews.TOO_LARGE}


def test_svg_and_figure_keep_no_reference_outside_themselves() -> None:
    svg = (
        '<svg><a xlink:href="https://evil.example/x"><image xlink:href="http://127.0.0.1:9/i.png"/></a>'
        '<image href="data:image/png;base64,AAAA"/><path fill="url(#grad)"/><path fill="url(https://e.example/p)"/>'
        "<use href='#shape'/></svg>"
    )
    clean = safe_svg(svg)
    assert "evil.example" not in clean and "127.0.0.1" not in clean and "e.example" not in clean
    assert 'href="data:image/png;base64,AAAA"' in clean and "url(#grad)" in clean and "href='#shape'" in clean
    figure = {
        "layout": {
            "images": [
                {"source": "https://x.example/a.png"},
                {"source": "data:image/png;base64,AA"},
                {"source": "//x.example/b.png"},
                {"source": "file:///etc/passwd"},
            ],
            "title": {"text": "keep me"},
        }
    }
    assert [image["source"] for image in offline_figure(figure)["layout"]["images"]] == [
        "",
        "data:image/png;base64,AA",
        "",
        "",
    ]
    assert offline_figure(figure)["layout"]["title"] == {"text": "keep me"}


@NEEDS_VL_CONVERT
def test_a_notebooks_second_report_renders_no_preview_again(nini, nini_home: Path, tmp_path: Path) -> None:  # noqa: ANN001
    """Through ``nini report``: the Altair chart's preview is an image file, readable like the
    report, cached under NINI_HOME; the second report takes it from there (the cache is untouched)."""
    altair = new_code_cell("alt.Chart(cars).mark_bar()", execution_count=2)
    altair.outputs = [
        new_output(
            "execute_result",
            data={"application/vnd.vegalite.v5+json": VEGA_LITE, "text/plain": "alt.Chart(...)"},
            execution_count=2,
        )
    ]
    path = tmp_path / "cars.ipynb"
    nbformat.write(new_notebook(cells=[new_markdown_cell("# Cars\n\n## Weight"), altair]), path)
    md, _ = written(ok(nini("report", str(path), "--out", str(tmp_path / "first"), "--lang", "en")))
    cache = preview_cache(nini_home)
    [cached] = list(cache.iterdir())
    text = md.read_text(encoding="utf-8")
    assert "Cars" in text.split("## Charts", 1)[1]  # the caption is the chart's own title
    preview = next(p for p in (tmp_path / "first").rglob("*.svg"))
    assert f"]({preview.relative_to(tmp_path / 'first').as_posix()})" in text
    assert preview.stat().st_mode & 0o777 == md.stat().st_mode & 0o777
    before = cached.stat().st_mtime_ns
    md2, _ = written(ok(nini("report", str(path), "--out", str(tmp_path / "second"), "--lang", "en")))
    assert list(cache.iterdir()) == [cached] and cached.stat().st_mtime_ns == before
    assert next((tmp_path / "second").rglob("*.svg")).read_bytes() == preview.read_bytes()


@NEEDS_VL_CONVERT
def test_a_session_charts_preview_is_written_in_its_workspace_without_following_a_link(tmp_path: Path) -> None:
    """A session's chart lives in a workspace agent code writes: its preview goes beside it through
    the workspace file system, which replaces a link planted at the preview's name, never follows it."""
    from nini.rooted import RootedDir

    workspace, outside = tmp_path / "workspace", tmp_path / "outside.svg"
    (workspace / "artifacts").mkdir(parents=True)
    (workspace / "artifacts" / "fit.vegalite.json").write_text(json.dumps(VEGA_LITE), encoding="utf-8")
    outside.write_text("the user's own file", encoding="utf-8")
    (workspace / "artifacts" / "fit.svg").symlink_to(outside)  # planted by agent code
    fs = RootedDir(workspace)
    chart = ChartFile(
        name="fit.vegalite.json",
        path=workspace / "artifacts" / "fit.vegalite.json",
        order=0,
        step_id="s0",
        fs=fs,
        relative="artifacts/fit.vegalite.json",
    )
    data, stats = add_previews(ReportInput(source="session s", charts=[chart]), tmp_path / "cache")
    assert stats.rendered == 1 and outside.read_text(encoding="utf-8") == "the user's own file"
    preview = workspace / "artifacts" / "fit.svg"
    assert not preview.is_symlink() and preview.read_text(encoding="utf-8").startswith("<svg")
    [group] = group_charts(data.charts)
    assert group.preview is not None and group.preview.relative == "artifacts/fit.svg" and group.preview.fs is fs
    assert group.preview.read_bytes() == preview.read_bytes()


def test_the_renderer_runs_without_the_hosts_network(tmp_path: Path, capture: Capture) -> None:
    """The boundary is the operating system: a renderer that tried to fetch what a chart names (a
    browser bug, a Vega feature nobody turned off) reaches nothing, because its child has no network."""
    works, why = probe_bwrap()
    if not works:
        pytest.skip(f"bubblewrap cannot run here ({why}): previews rely on the renderers' own guards")
    port = capture.server.server_address[1]
    fetch = (
        f"import socket, sys\ntry:\n    socket.create_connection(('127.0.0.1', {port}), timeout=5).sendall("
        "b'GET /' + sys.argv[1].encode() + b' HTTP/1.0\\r\\n\\r\\n')\n"
        "    print('reached')\nexcept OSError as error:\n    print('refused', type(error).__name__)"
    )
    direct = subprocess.run(
        [sys.executable, "-c", fetch, "control"], capture_output=True, text=True, timeout=timeout(60)
    )
    assert direct.stdout.strip() == "reached"  # the control: the server answers from the host
    confined = subprocess.run(
        previews.renderer_command([sys.executable, "-c", fetch, "leak"], tmp_path),
        capture_output=True,
        text=True,
        timeout=timeout(60),
    )
    assert confined.stdout.startswith("refused"), confined.stderr
    assert "/leak" not in capture.requests


def test_the_renderer_runs_from_an_interpreter_that_lives_in_tmp(tmp_path: Path) -> None:
    """The renderer's sandbox has a private /tmp: an interpreter reached under /tmp (a venv made or
    linked there, a checkout cloned there) is bound back, or the renderer could not start at all."""
    works, why = probe_bwrap()
    if not works:
        pytest.skip(f"bubblewrap cannot run here ({why}): the renderer runs unconfined")
    venv = Path("/tmp") / f"nini-venv-{tmp_path.name}"  # under /tmp itself, wherever pytest's tmp_path is
    venv.symlink_to(sys.prefix, target_is_directory=True)  # this venv, by a name only the host's /tmp has
    command = (
        "import subprocess, sys\nfrom pathlib import Path\nfrom nini.report.previews import renderer_command\n"
        "probe = [sys.executable, '-c', 'import nini.report.previews; print(\"started\")']\n"
        "done = subprocess.run(renderer_command(probe, Path(sys.argv[1])), capture_output=True, text=True)\n"
        "print(done.stdout.strip() or done.stderr.strip())"
    )
    try:
        ran = subprocess.run(
            [str(venv / "bin" / "python"), "-c", command, str(tmp_path)],
            capture_output=True,
            text=True,
            timeout=timeout(120),
        )
    finally:
        venv.unlink()
    assert ran.stdout.strip() == "started", ran.stdout + ran.stderr
