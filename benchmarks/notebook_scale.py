"""Notebook reports at scale, for bench_report.py: a 1,000-cell notebook with 300 charts, and one
with a 25 MB text output. Each report (read, charts written, Markdown + HTML written) runs in a
fresh process, so its peak memory (ru_maxrss) is its own; the baseline is nbformat's bare read of
the same file in the same kind of process. Goal (issue 17): under 3 s and 150 MB each."""

from __future__ import annotations

import base64
import random
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat
from goals import goal
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

GOAL_S, GOAL_MB = 3.0, 150.0
# Memory is the process's peak resident set (VmHWM: reset at exec, unlike ru_maxrss, which a child
# inherits from the forked parent), imports included; their part is printed too.
CHILD = """
import re, sys, time
from pathlib import Path
def peak():
    return int(re.search(r"VmHWM:\\s+(\\d+)", Path("/proc/self/status").read_text()).group(1)) / 1024
path, mode = Path(sys.argv[1]), sys.argv[2]
import nbformat
if mode == "report":
    from nini.report.builder import ReportOptions, build_report
    from nini.report.output import write_report
    from nini.report.previews import add_previews
    from nini.report.sources import from_notebook
imported = peak()
start = time.perf_counter()
if mode == "read":
    nbformat.read(path, as_version=4)
else:
    data, _ = from_notebook(path, files_dir=path.parent / f"{path.stem}_files")
    data, _ = add_previews(data, path.parent / "previews")  # as the service does (PNG charts need none)
    report = build_report(data, ReportOptions(), link_base=path.parent)
    write_report(report, path.parent, formats=["md", "html"], stem=path.stem)
print(time.perf_counter() - start, peak(), imported)
"""


def many_cells(path: Path, png: bytes) -> None:
    """1,000 cells: every tenth a heading, 300 drawing a chart, the rest printing a labelled number."""
    rng = random.Random(3)
    cells = []
    for index in range(1000):
        if index % 10 == 0:
            cells.append(new_markdown_cell(f"## Section {index // 10}\n\nWhat this part looks at, in a sentence."))
            continue
        code = new_code_cell(f"# step {index}\nvalue_{index} = compute({index})", execution_count=index)
        if (
            len(cells) % 3 == 0
            and sum(1 for c in cells if c.get("outputs") and "image/png" in c.outputs[0].get("data", {})) < 300
        ):
            code.outputs = [
                new_output("display_data", data={"image/png": base64.b64encode(png).decode(), "text/plain": "<Figure>"})
            ]
        else:
            code.outputs = [
                new_output("stream", name="stdout", text=f"mean of part {index}: {rng.random() * 100:.4f}\n")
            ]
        cells.append(code)
    nbformat.write(new_notebook(cells=cells), path)


def huge_output(path: Path) -> None:
    """One cell whose output is 25 MB of text (a log printed in full), among a few ordinary ones."""
    line = "epoch 00000 loss 0.123456 accuracy 0.987654 lr 0.001000 batch 0000 of 9999\n"
    text = line * (25 * 2**20 // len(line))
    cells = [new_code_cell("# training log\ntrain()", execution_count=1)]
    cells[0].outputs = [new_output("stream", name="stdout", text=text)]
    cells.append(
        new_code_cell(
            "# final accuracy\nprint('accuracy:', 0.9876)",
            execution_count=2,
            outputs=[new_output("stream", name="stdout", text="accuracy: 0.9876\n")],
        )
    )
    nbformat.write(new_notebook(cells=cells), path)


def measure(path: Path, mode: str) -> tuple[float, float, float]:
    """(seconds, peak MB, MB held once the imports were done) of one run in a fresh process."""
    run = subprocess.run([sys.executable, "-c", CHILD, str(path), mode], capture_output=True, text=True, check=True)
    seconds, peak, imported = run.stdout.split()
    return float(seconds), float(peak), float(imported)


def run(png: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        cases = {
            "1,000 cells, 300 charts": Path(tmp) / "many" / "many.ipynb",
            "25 MB text output": Path(tmp) / "huge" / "huge.ipynb",
        }
        for folder in cases.values():
            folder.parent.mkdir()
        many_cells(cases["1,000 cells, 300 charts"], png)
        huge_output(cases["25 MB text output"])
        for name, path in cases.items():
            read_s, read_mb, _ = measure(path, "read")
            report_s, report_mb, imports_mb = measure(path, "report")
            met = report_s < GOAL_S and report_mb < GOAL_MB
            print(
                f"  notebook {name:<24} ({path.stat().st_size / 2**20:5.1f} MiB): report {report_s * 1000:7.0f} ms, "
                f"peak {report_mb:4.0f} MB ({imports_mb:.0f} of it imports); nbformat.read "
                f"{read_s * 1000:6.0f} ms, {read_mb:4.0f} MB -> "
                f"{report_s / read_s:4.1f}x the time, {report_mb / max(read_mb, 1):3.1f}x the memory "
                f"(goal < {GOAL_S:.0f} s and < {GOAL_MB:.0f} MB: {'met' if met else 'MISSED'})"
            )
            what = f"report of a notebook of {name} < {GOAL_S:.0f} s and < {GOAL_MB:.0f} MB"
            goal("bench_report", what, f"{report_s:.1f} s, {report_mb:.0f} MB", met)
