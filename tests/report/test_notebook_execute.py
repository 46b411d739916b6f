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
from tests.timeouts import timeout

NINI = Path(sys.executable).with_name("nini")
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
CELLS = [
    "x = 21\nprint('x doubled:', x * 2)",
    "import base64\nfrom IPython.display import Image, display\n"
    f"display(Image(base64.b64decode({PNG!r})))\nundefined_name",  # draws, then fails
    "import time\ntime.sleep(3600)",  # past --timeout, whatever the machine's load
    "print('after:', x + 1)",
]
# --timeout: a limit the quick cells (an assignment, a print, a tiny image) stay far under on a loaded
# machine (each is counted failed or not by what it does, not by how fast it ran); the sleeping cell
# never ends by itself, so it is past any limit: a short one only makes the test wait less
CELL_TIMEOUT_S = timeout(10)  # 4 s once failed a quick cell at 8x overload
CELL_TIMEOUT = str(round(CELL_TIMEOUT_S))


def report(folder: Path, *args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NINI_HOME": str(home)}
    return subprocess.run(
        [str(NINI), "report", "failing.ipynb", *args],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout(300),
    )


@pytest.fixture
def failing(tmp_path: Path) -> Path:
    notebook = new_notebook(cells=[new_code_cell(code) for code in CELLS])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(notebook, tmp_path / "failing.ipynb")
    return tmp_path


@pytest.mark.slow
def test_failed_and_timed_out_cells_are_reported_and_strict_exits_3(failing: Path, tmp_path: Path) -> None:
    run = report(
        failing,
        "--execute",
        "--timeout",
        CELL_TIMEOUT,
        "--strict",
        "--with-observability",
        "--format",
        "md",
        "--lang",
        "en",
        home=tmp_path / "home",
    )
    assert run.returncode == 3, run.stderr
    lines = run.stderr.splitlines()
    assert [line.split(" ", 2)[:2] for line in lines[:4]] == [["cell", f"{n}/4"] for n in range(1, 5)]
    assert lines[-1] == "2 of 4 cells failed: cell 2 (NameError), cell 3 (timeout)"
    assert "without encryption" not in run.stderr and "WARNING" not in run.stderr
    (md,) = [Path(line) for line in run.stdout.splitlines() if line.endswith(".md")]
    text = md.read_text(encoding="utf-8")
    assert "x doubled: 42" in text and "after: 22" in text  # the cells after the failures still ran
    summary = text.split("## Summary", 1)[1].split("\n## ", 1)[0]  # the body says it, in the words
    assert "2 of 4 cells failed; results are partial" in summary and "cell 2 (NameError), cell 3 (timeout)" in summary
    files = failing / "failing_report_files"
    assert not list(files.glob("*.png"))  # the failed cell's chart is not a result
    assert (files / "failing.executed.ipynb").is_file()
    # without --strict the same run writes the same report and exits 0, still saying what failed
    again = report(failing, "--execute", "--timeout", CELL_TIMEOUT, "--format", "md", home=tmp_path / "home")
    assert again.returncode == 0 and again.stderr.splitlines()[-1].startswith("2 of 4 cells failed")


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ({}, "missing a key: cells"),
        (
            {"cells": [{"cell_type": "code", "source": "1"}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5},
            "missing an expected key: metadata",
        ),
    ],
)
def test_json_that_is_not_a_notebook_is_invalid_argument(tmp_path: Path, content: dict, reason: str) -> None:
    path = tmp_path / "broken.ipynb"
    path.write_text(json.dumps(content))
    with pytest.raises(NiniError) as refused:
        from_notebook(path, files_dir=tmp_path / "files")
    assert refused.value.code is ErrorCode.INVALID_ARGUMENT
    assert reason in refused.value.message and str(tmp_path) not in refused.value.message
    run = subprocess.run(
        [str(NINI), "report", str(path)],
        capture_output=True,
        text=True,
        timeout=timeout(60),
        env={**os.environ, "NINI_HOME": str(tmp_path / "home")},
    )
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


# which kernel runs the notebook (issue 34, item 7), and cells named by their place among all cells


def saved_notebook(tmp_path: Path, kernelspec: dict[str, str], name: str = "saved.ipynb") -> Path:
    """A notebook as its author saved it: run, with outputs, a Markdown cell first."""
    cells = [
        nbformat.v4.new_markdown_cell("# Saved"),
        new_code_cell(
            "print('total:', 55)",
            execution_count=1,
            outputs=[nbformat.v4.new_output("stream", name="stdout", text="total: 55\n")],
        ),
        new_code_cell(
            "1 / 0",
            execution_count=2,
            outputs=[
                nbformat.v4.new_output("error", ename="ZeroDivisionError", evalue="division by zero", traceback=[])
            ],
        ),
    ]
    nbformat.write(new_notebook(cells=cells, metadata={"kernelspec": kernelspec}), tmp_path / name)
    return tmp_path / name


@pytest.mark.parametrize(
    ("kernelspec", "kernel_name"),
    [
        ({"name": "python2", "display_name": "Python 2", "language": "python"}, None),
        ({"name": "ir", "display_name": "R", "language": "R"}, None),
        ({"name": "ir", "display_name": "R", "language": "R"}, "auto"),
    ],  # no IRkernel here: auto has none to use
)
def test_a_missing_kernel_falls_back_to_the_saved_outputs_and_says_so(
    tmp_path: Path, kernelspec: dict[str, str], kernel_name: str | None
) -> None:
    path = saved_notebook(tmp_path, kernelspec)
    data, files = from_notebook(path, execute=True, kernel_name=kernel_name, files_dir=tmp_path / "out")
    run = data.execution
    assert run is not None and run.kernel is None and run.missing_kernel == kernelspec["name"] and run.failed == []
    assert run.message() == f"ran from saved outputs: kernel {kernelspec['name']} is not installed"
    assert [(s.cell, s.status, s.stdout) for s in data.steps] == [(2, "succeeded", "total: 55\n"), (3, "failed", "")]
    assert not (files / "saved.executed.ipynb").exists()  # nothing ran


@pytest.mark.slow
def test_kernel_auto_runs_a_python_notebook_on_python3(tmp_path: Path) -> None:
    path = saved_notebook(tmp_path, {"name": "pymc_env", "display_name": "PyMC", "language": "python"})
    progress: list[str] = []
    data, files = from_notebook(
        path, execute=True, kernel_name="auto", timeout_s=120, files_dir=tmp_path / "out", progress=progress.append
    )
    run = data.execution
    assert run.kernel == "python3" and run.missing_kernel == "pymc_env" and run.cells == 2
    assert run.failed == [(3, "ZeroDivisionError")]  # the cell's place among all cells, as Step.cell
    assert run.message() == (
        "ran with kernel python3: kernel pymc_env is not installed\n1 of 2 cells failed: cell 3 (ZeroDivisionError)"
    )
    assert [line.split(" ", 2)[:2] for line in progress] == [["cell", "2/3"], ["cell", "3/3"]]
    assert [(s.cell, s.status) for s in data.steps] == [(2, "succeeded"), (3, "failed")]
    assert (files / "saved.executed.ipynb").is_file()


def test_an_unknown_kernel_named_on_purpose_is_not_found_with_the_installed_ones(tmp_path: Path) -> None:
    path = saved_notebook(tmp_path, {"name": "python3", "display_name": "Python 3", "language": "python"})
    with pytest.raises(NiniError) as refused:
        from_notebook(path, execute=True, kernel_name="pyhton3", files_dir=tmp_path / "out")
    assert refused.value.code is ErrorCode.NOT_FOUND and "'pyhton3'" in refused.value.message
    assert "python3" in refused.value.details["installed"] and str(tmp_path) not in refused.value.message


@pytest.mark.slow
def test_a_kernel_that_dies_leaves_the_later_cells_not_run_and_the_report_is_written(tmp_path: Path) -> None:
    cells = [
        new_code_cell("print('before')"),
        nbformat.v4.new_markdown_cell("## The end"),
        new_code_cell("import os\nos._exit(1)"),
        # saved outputs of an earlier run must not pass for this run's
        new_code_cell(
            "print('after')",
            execution_count=9,
            outputs=[nbformat.v4.new_output("stream", name="stdout", text="stale: 42\n")],
        ),
        new_code_cell("", execution_count=10, outputs=[nbformat.v4.new_output("stream", name="stdout", text="kept\n")]),
    ]
    notebook = new_notebook(
        cells=cells, metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}
    )
    nbformat.write(notebook, tmp_path / "dies.ipynb")
    data, files = from_notebook(tmp_path / "dies.ipynb", execute=True, timeout_s=120, files_dir=tmp_path / "out")
    before, died, after, empty = data.steps
    assert before.stdout == "before\n" and before.status == "succeeded"
    assert (died.cell, died.status, died.error["code"]) == (3, "failed", "KERNEL_DIED")
    assert (after.cell, after.status, after.error["code"], after.stdout) == (4, "failed", "CANCELED", "")
    assert empty.stdout == "kept\n"  # an empty-source cell never runs: its saved output is what it shows
    assert data.execution.failed == [(3, "kernel died"), (4, "not run")]
    assert nbformat.read(files / "dies.executed.ipynb", as_version=4).cells[3].outputs == []


@pytest.mark.slow
def test_a_cell_past_its_time_is_a_timeout(tmp_path: Path) -> None:
    cells = [
        nbformat.v4.new_markdown_cell("# Slow"),
        new_code_cell("x = 1"),
        new_code_cell("import time\ntime.sleep(3600)"),
        new_code_cell("x + 1"),
    ]
    nbformat.write(
        new_notebook(
            cells=cells, metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}
        ),
        tmp_path / "slow.ipynb",
    )
    data, _ = from_notebook(tmp_path / "slow.ipynb", execute=True, timeout_s=CELL_TIMEOUT_S, files_dir=tmp_path / "out")
    first, slow, last = data.steps
    assert (slow.cell, slow.status, slow.error["code"]) == (3, "failed", "TIMEOUT")
    assert first.status == last.status == "succeeded" and data.execution.failed == [(3, "timeout")]


def test_a_kernel_that_cannot_start_falls_back_to_the_saved_outputs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An installed kernelspec whose program is gone: no INTERNAL error with the program's path,
    the saved outputs are reported and the note says the kernel could not start."""
    spec = tmp_path / "jupyter" / "kernels" / "broken"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [str(tmp_path / "gone" / "python"), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": "Broken",
                "language": "python",
            }
        )
    )
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    path = saved_notebook(tmp_path, {"name": "broken", "display_name": "Broken", "language": "python"})
    data, files = from_notebook(path, execute=True, files_dir=tmp_path / "out")
    assert (
        data.execution.kernel is None
        and data.execution.message() == "ran from saved outputs: kernel broken could not start"
    )
    assert [(s.cell, s.status, s.stdout) for s in data.steps] == [(2, "succeeded", "total: 55\n"), (3, "failed", "")]
    assert not (files / "saved.executed.ipynb").exists()
