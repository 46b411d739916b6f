"""Report build time for a large session, with and without embedding the chart images.

A synthetic ``ReportInput``: 2,000 steps (10% failed, 10% superseded by a later correction, noisy
stdout) and 500 charts saved as png+svg+pdf (1,500 real files; each PNG a valid 20-40 KB image of
random pixels, so it does not compress). ``build_report`` makes Markdown and HTML; timed with
``embed_images=True`` (every preview read and base64-encoded into the HTML) and ``False`` (links).
Goal: Markdown+HTML under 1 s, and image embedding not the dominant cost. Median of 3 runs.

Then notebook reports at scale (``notebook_scale``: 1,000 cells / 300 charts, a 25 MB output; goal
< 3 s and < 150 MB each), and a notebook of Vega-Lite and Plotly charts reported twice through the
service's steps (read, previews, Markdown + HTML written) with one preview cache: the first report
renders every preview, the second takes them all from the cache (renders counted, ratio printed).
Plotly's part is skipped with its reason where kaleido or a Chromium is missing.
"""

from __future__ import annotations

import random
import shutil
import statistics
import struct
import sys
import tempfile
import time
import zlib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import nbformat  # noqa: E402
import notebook_scale  # noqa: E402 - a sibling module of this script
from goals import goal
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output  # noqa: E402

from nini.report.builder import ReportOptions, build_report  # noqa: E402
from nini.report.model import ChartFile, DatasetInfo, ReportInput, Step, ToolCallInfo  # noqa: E402
from nini.report.output import write_report  # noqa: E402
from nini.report.previews import add_previews  # noqa: E402
from nini.report.sources import from_notebook  # noqa: E402

STEPS = 2_000
CHARTS = 500
VEGA_CHARTS, PLOTLY_CHARTS = 20, 10  # the charts notebook
RUNS = 3
GOAL_S = 1.0
NOISY_STDOUT = (
    "[stdout] mean revenue: {value:.2f}\n"
    "/opt/conda/lib/python3.11/site-packages/pandas/core/groupby.py:12: FutureWarning: observed=False is deprecated\n"
    "  grouped = df.groupby('region')\n"
    " 45%|████▌     | 45/100 [00:01<00:02, 30.00it/s]\r100%|██████████| 100/100\n"
    "regions compared: {regions}\n"
)


def png(width: int, height: int, rng: random.Random) -> bytes:
    """A valid RGB PNG of random pixels (incompressible, so its size is about 3 * width * height)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\x00" + rng.randbytes(width * 3) for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows, 1)) + chunk(b"IEND", b"")


SVG = (
    '<svg xmlns="http://www.w3.org/2000/svg" width="640" height="480" viewBox="0 0 640 480">'
    '<rect width="640" height="480" fill="#fff"/>{bars}</svg>'
)
PDF = (
    b"%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj\n"
    b"3 0 obj<</Type/Page/Parent 2 0 R/MediaBox[0 0 640 480]>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n"
)


def synthetic_input(folder: Path) -> tuple[ReportInput, int]:
    """The benchmark session, its chart files written under ``folder``; and the bytes of PNG written."""
    rng = random.Random(7)
    steps = []
    for index in range(STEPS):
        kind = index % 10
        label = f"step {index // 10}-{kind}"
        if kind == 0:  # failed
            steps.append(
                Step(
                    id=f"s{index}",
                    order=index,
                    language="python",
                    status="failed",
                    code="x",
                    label=label,
                    stderr="Traceback (most recent call last):\nValueError: bad",
                    tool_name="run_code",
                    duration_ms=rng.randint(5, 500),
                    error={"code": "RuntimeError"},
                )
            )
            continue
        # kind 2 re-runs kind 1's label: kind 1 is superseded by its correction
        label = f"step {index // 10}-1" if kind == 2 else label
        language = "r" if kind in (5, 6) else "python"
        steps.append(
            Step(
                id=f"s{index}",
                order=index,
                language=language,
                status="succeeded",
                code="x",
                label=label,
                purpose=f"compare revenue by region, batch {index // 10}",
                stdout=NOISY_STDOUT.format(value=rng.random() * 1000, regions=rng.randint(2, 9)),
                result={"mean": rng.random() * 100, "p_value": rng.random() / 10, "n": rng.randint(50, 5000)},
                tool_name="run_r_code" if language == "r" else "run_code",
                duration_ms=rng.randint(5, 2000),
            )
        )
    charts = []
    png_bytes = 0
    for index in range(CHARTS):
        side = rng.randint(82, 115)  # 20-40 KB
        image = png(side, side, rng)
        png_bytes += len(image)
        bars = "".join(
            f'<rect x="{40 + i * 60}" y="{480 - h}" width="40" height="{h}" fill="#2f6fde"/>'
            for i, h in enumerate(rng.randint(20, 400) for _ in range(9))
        )
        for offset, (extension, data) in enumerate(
            (("png", image), ("svg", SVG.format(bars=bars).encode()), ("pdf", PDF))
        ):
            path = folder / f"chart-{index:03d}.{extension}"
            path.write_bytes(data)
            charts.append(ChartFile(name=path.name, path=path, order=index * 3 + offset, step_id=f"s{index * 4 + 1}"))
    datasets = [
        DatasetInfo(name=f"table_{i}", rows=rng.randint(100, 10**6), columns=["region", "month", "revenue"])
        for i in range(20)
    ]
    calls = [
        ToolCallInfo(name=step.tool_name or "run_code", status=step.status, duration_ms=step.duration_ms)
        for step in steps
    ]
    return ReportInput(
        source="session bench", steps=steps, charts=charts, datasets=datasets, tool_calls=calls
    ), png_bytes


def median_seconds(data: ReportInput, options: ReportOptions, *, embed: bool, link_base: Path) -> tuple[float, int]:
    times, size = [], 0
    for _ in range(RUNS):
        start = time.perf_counter()
        report = build_report(data, options, embed_images=embed, link_base=link_base)
        times.append(time.perf_counter() - start)
        size = len(report.html)
    return statistics.median(times), size


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "artifacts"
        folder.mkdir()
        data, png_bytes = synthetic_input(folder)
        options = ReportOptions(include_session_stats=True)
        report = build_report(data, options, link_base=Path(tmp) / "reports")  # warm-up (templates, regexes)
        assert len(report.findings) == 12 and len(report.charts) == CHARTS
        linked, linked_size = median_seconds(data, options, embed=False, link_base=Path(tmp) / "reports")
        embedded, embedded_size = median_seconds(data, options, embed=True, link_base=Path(tmp) / "reports")
    embedding = embedded - linked
    print(
        f"bench_report: {STEPS:,} steps (10% failed, 10% superseded), {CHARTS} charts x png+svg+pdf "
        f"({png_bytes / 2**20:.1f} MiB of PNG), Markdown+HTML, median of {RUNS}"
    )
    print(
        f"  embed_images=False (links)          {linked * 1000:8.1f} ms   HTML {linked_size / 2**20:6.2f} MiB   "
        f"(goal < {GOAL_S:.0f} s: {'met' if linked < GOAL_S else 'MISSED'})"
    )
    print(
        f"  embed_images=True (data: URIs)      {embedded * 1000:8.1f} ms   HTML {embedded_size / 2**20:6.2f} MiB   "
        f"(goal < {GOAL_S:.0f} s: {'met' if embedded < GOAL_S else 'MISSED'})"
    )
    goal("bench_report", f"report with linked images < {GOAL_S:.0f} s", f"{linked * 1000:.0f} ms", linked < GOAL_S)
    goal(
        "bench_report", f"report with embedded images < {GOAL_S:.0f} s", f"{embedded * 1000:.0f} ms", embedded < GOAL_S
    )
    print(
        f"  ratio embedded / linked             {embedded / linked:8.2f}x   image embedding costs "
        f"{embedding * 1000:.1f} ms, {embedding / embedded:.0%} of the embedded build: "
        f"{'it dominates' if embedding > embedded / 2 else 'it does not dominate'}"
    )
    notebook_scale.run(png(100, 80, random.Random(5)))
    preview_cache_bench()
    return 0


def charts_notebook(path: Path, plotly: bool) -> None:
    """Sections of Altair (Vega-Lite) and Plotly charts, each with its own data and title, as saved outputs."""
    rng = random.Random(11)
    cells = [new_markdown_cell("# Charts at scale")]
    for index in range(VEGA_CHARTS + (PLOTLY_CHARTS if plotly else 0)):
        values = [{"month": m, "revenue": round(rng.random() * 1000, 2)} for m in range(1, 13)]
        if index < VEGA_CHARTS:
            mime, spec = (
                "application/vnd.vegalite.v5+json",
                {
                    "$schema": "https://vega.github.io/schema/vega-lite/v5.json",
                    "title": f"Revenue {index}",
                    "data": {"values": values},
                    "mark": "line",
                    "encoding": {
                        "x": {"field": "month", "type": "ordinal"},
                        "y": {"field": "revenue", "type": "quantitative"},
                    },
                },
            )
        else:
            mime, spec = (
                "application/vnd.plotly.v1+json",
                {
                    "data": [{"type": "bar", "x": [v["month"] for v in values], "y": [v["revenue"] for v in values]}],
                    "layout": {"title": {"text": f"Revenue {index}"}},
                },
            )
        cell = new_code_cell(f"chart_{index}.show()", execution_count=index + 1)
        cell.outputs = [new_output("display_data", data={mime: spec, "text/plain": "<Chart>"})]
        cells += [new_markdown_cell(f"## Part {index}"), cell]
    nbformat.write(new_notebook(cells=cells), path)


def report_with_previews(path: Path, out: Path, cache: Path) -> tuple[float, int, int]:
    """(seconds, previews rendered, previews from the cache) of one notebook report, as the service makes it."""
    start = time.perf_counter()
    data, _ = from_notebook(path, files_dir=out / f"{path.stem}_files")
    data, stats = add_previews(data, cache)
    write_report(
        build_report(data, ReportOptions(lang="en"), link_base=out), out, formats=["md", "html"], stem=path.stem
    )
    return time.perf_counter() - start, stats.rendered, stats.cached


def preview_cache_bench() -> None:
    from importlib.util import find_spec

    if find_spec("vl_convert") is None:
        print("  previews: skipped: vl-convert-python is not installed (the charts extra)")
        return
    chromium = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    plotly = find_spec("kaleido") is not None and chromium is not None
    if not plotly:
        print(
            "  previews: Plotly part skipped: "
            + ("no Chromium on PATH" if chromium is None else "kaleido is not installed")
        )
    with tempfile.TemporaryDirectory() as tmp:
        path, cache = Path(tmp) / "charts.ipynb", Path(tmp) / "cache"
        charts_notebook(path, plotly)
        first, rendered, _ = report_with_previews(path, Path(tmp) / "first", cache)
        second, again, cached = report_with_previews(path, Path(tmp) / "second", cache)
    kinds = f"{VEGA_CHARTS} Vega-Lite" + (f" + {PLOTLY_CHARTS} Plotly" if plotly else "")
    print(
        f"  previews: notebook of {kinds} charts: first report {first * 1000:7.0f} ms ({rendered} rendered), "
        f"second {second * 1000:6.0f} ms ({again} rendered, {cached} from the cache) -> first / second "
        f"{first / second:5.1f}x (goal: the second renders none: {'met' if again == 0 else 'MISSED'})"
    )
    goal("bench_report", "previews: the second report renders none", f"{again} rendered", again == 0)


if __name__ == "__main__":
    sys.exit(main())
