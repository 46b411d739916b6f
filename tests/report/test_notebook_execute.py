"""``nini report NOTEBOOK --execute``: failures are never silent, and a file that is not a notebook
is refused with nbformat's reason. Run as the real command, so the kernel's own output is seen too."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from nini.errors import ErrorCode, NiniError
from nini.report.sources import from_notebook

NINI = Path(sys.executable).with_name("nini")
CELLS = [
    "x = 21\nprint('x doubled:', x * 2)",
    "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\nfrom IPython.display import display\n"
    "fig = plt.figure()\nplt.plot([1, 2, 3])\ndisplay(fig)\nundefined_name",  # draws, then fails
    "import time\ntime.sleep(60)",  # past --timeout
    "print('after:', x + 1)",
]


def report(folder: Path, *args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NINI_HOME": str(home)}
    return subprocess.run([str(NINI), "report", "failing.ipynb", *args], cwd=folder, env=env, capture_output=True,
                          text=True, timeout=180)  # fmt: skip


@pytest.fixture
def failing(tmp_path: Path) -> Path:
    notebook = new_notebook(cells=[new_code_cell(code) for code in CELLS])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(notebook, tmp_path / "failing.ipynb")
    return tmp_path


@pytest.mark.slow
def test_failed_and_timed_out_cells_are_reported_and_strict_exits_3(failing: Path, tmp_path: Path) -> None:
    run = report(failing, "--execute", "--timeout", "4", "--strict", "--with-observability", "--format", "md",
                 home=tmp_path / "home")  # fmt: skip
    assert run.returncode == 3, run.stderr
    lines = run.stderr.splitlines()
    assert [line.split(" ", 2)[:2] for line in lines[:4]] == [["cell", f"{n}/4"] for n in range(1, 5)]
    assert lines[-1] == "2 of 4 cells failed: cell 2 (NameError), cell 3 (timeout)"
    assert "without encryption" not in run.stderr and "WARNING" not in run.stderr
    (md,) = [Path(line) for line in run.stdout.splitlines() if line.endswith(".md")]
    text = md.read_text(encoding="utf-8")
    assert "x doubled: 42" in text and "after: 22" in text  # the cells after the failures still ran
    assert "运行时失败的单元格：2 / 4（cell 2 (NameError)、cell 3 (超时)）" in text
    files = failing / "failing_report_files"
    assert not list(files.glob("*.png"))  # the failed cell's chart is not a result
    assert (files / "failing.executed.ipynb").is_file()
    # without --strict the same run writes the same report and exits 0, still saying what failed
    again = report(failing, "--execute", "--timeout", "4", "--format", "md", home=tmp_path / "home")
    assert again.returncode == 0 and again.stderr.splitlines()[-1].startswith("2 of 4 cells failed")


@pytest.mark.parametrize(
    ("content", "reason"),
    [({}, "missing a key: cells"),
     ({"cells": [{"cell_type": "code", "source": "1"}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5},
      "missing an expected key: metadata")],  # fmt: skip
)
def test_json_that_is_not_a_notebook_is_invalid_argument(tmp_path: Path, content: dict, reason: str) -> None:
    path = tmp_path / "broken.ipynb"
    path.write_text(json.dumps(content))
    with pytest.raises(NiniError) as refused:
        from_notebook(path, files_dir=tmp_path / "files")
    assert refused.value.code is ErrorCode.INVALID_ARGUMENT
    assert reason in refused.value.message and str(tmp_path) not in refused.value.message
    run = subprocess.run([str(NINI), "report", str(path)], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "NINI_HOME": str(tmp_path / "home")})  # fmt: skip
    assert run.returncode != 0 and "INVALID_ARGUMENT" in run.stderr and "INTERNAL" not in run.stderr


def test_a_long_log_is_read_at_its_ends_and_ordinary_comments_still_name_steps(tmp_path: Path) -> None:
    log = "epoch 1 loss 0.5\n" * 400_000 + "final accuracy: 0.98765\n"  # 6.8 MB of output
    cell = new_code_cell("# Revenue and costs\ntrain()", execution_count=1)
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=log)]
    nbformat.write(new_notebook(cells=[cell]), tmp_path / "log.ipynb")
    (step,) = from_notebook(tmp_path / "log.ipynb", files_dir=tmp_path / "f")[0].steps
    assert step.label == "Revenue and costs"  # it parses as Python, but it is words
    from nini.report.findings import key_findings, scan_window

    assert len(scan_window(step.stdout)) < 70_000 and scan_window(step.stdout).endswith("final accuracy: 0.98765\n")
    assert any("final accuracy: 0.9877" in finding.text for finding in key_findings([step]))
