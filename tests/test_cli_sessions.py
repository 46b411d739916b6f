"""``nini run-code`` and ``nini sessions list|show|export``, in-process, with real kernels."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
from typer.testing import CliRunner

from nini.cli import app
from tests.conftest import REPO_ROOT
from tests.test_cli import _restore_nini_logger  # noqa: F401 - autouse fixture shared with test_cli

SALES = REPO_ROOT / "examples" / "data" / "sales.csv"


@pytest.fixture
def nini(project_dir: Path):
    runner = CliRunner()

    def run(*args: str, input: str | None = None):
        return runner.invoke(app, ["--project-dir", str(project_dir), *args], input=input)

    return run


def test_run_code_from_stdin_then_list_show_and_export(nini, tmp_path: Path) -> None:
    first = nini(
        "run-code",
        "-",
        "--session",
        "cli1",
        "--new",
        "--data",
        str(SALES),
        "--dataset",
        "sales",
        "--label",
        "total",
        "--json",
        input="result = float(df['revenue'].sum())\nprint(len(df))\n",
    )
    assert first.exit_code == 0, first.output
    payload = json.loads(first.stdout)
    assert payload["session_id"] == "cli1" and payload["success"] and payload["result"]["stdout"] == "144\n"
    import pandas as pd

    assert payload["result"]["result"] == pytest.approx(float(pd.read_csv(SALES)["revenue"].sum()))
    # each command has its own kernel; the session's datasets outlive it
    second = nini("run-code", "-", "--session", "cli1", "--new", input="print(datasets['sales']['units'].sum())\n")
    assert second.exit_code == 0, second.output
    assert int(second.stdout) == int(pd.read_csv(SALES)["units"].sum())

    listed = nini("sessions", "list", "--json")
    (row,) = json.loads(listed.stdout)
    assert row["id"] == "cli1" and row["tool_call_count"] == 3 and row["execution_count"] == 2

    shown = json.loads(nini("sessions", "show", "cli1", "--json").stdout)
    assert [c["tool_name"] for c in shown["tool_calls"]] == ["load_dataset", "run_code", "run_code"]

    out = tmp_path / "cli1.ipynb"
    exported = nini("sessions", "export", "cli1", "--format", "ipynb", "--out", str(out))
    assert exported.exit_code == 0, exported.output
    notebook = nbformat.read(out, as_version=4)
    nbformat.validate(notebook)
    sources = [c.source for c in notebook.cells if c.cell_type == "code"]
    assert any("df['revenue'].sum()" in s for s in sources) and any("datasets['sales']['units']" in s for s in sources)
    # the datasets it reads are beside it, named by relative path only
    assert (tmp_path / "cli1_files" / "datasets" / "sales.parquet").is_file()
    assert "cli1_files" in sources[0] and str(tmp_path) not in out.read_text()


@pytest.mark.usefixtures("chinese_locale")  # the header's spec wording in Chinese: auto under a zh locale
def test_export_says_the_code_is_the_agent_s_and_re_runs_it_sandboxed(nini, tmp_path: Path) -> None:
    """Issue 31: the export named no author and re-ran the agent's code unsandboxed without a word."""
    quiet = (
        "try:\n    open(bytes.fromhex('2f6e6f2f73756368').decode(), 'w')\nexcept OSError:\n    pass\nprint(len(df))\n"
    )
    assert (
        nini(
            "run-code", "-", "--session", "cli2", "--new", "--data", str(SALES), "--label", "count", input=quiet
        ).exit_code
        == 0
    )
    assert (
        nini("run-code", "-", "--session", "cli2", "--new", "--label", "shell", input="import subprocess\n").exit_code
        == 2
    )

    plain = nini("sessions", "export", "cli2")
    assert plain.exit_code == 0, plain.output
    notebook = nbformat.reads(plain.stdout, as_version=4)
    header = notebook.cells[0].source
    assert "这些代码由 nini 的智能体" in header and "没有沙箱" in header and "--sandboxed" in header
    assert "第 2 步 `shell`（python）（被拒绝，未运行）" in header and "'subprocess'" in header
    steps = [c for c in notebook.cells if "nini-agent-code" in c.metadata.get("tags", [])]
    assert [c.metadata["nini"]["label"] for c in steps] == ["count"]

    out = tmp_path / "cli2.ipynb"
    sandboxed = nini("sessions", "export", "cli2", "--sandboxed", "--out", str(out))
    assert sandboxed.exit_code == 0, sandboxed.output
    notebook = nbformat.read(out, as_version=4)
    assert (
        "%%nini_run" in notebook.cells[0].source
        and "%nini load cli2_files/datasets/sales.parquet" in notebook.cells[1].source
    )
    (step,) = [c for c in notebook.cells if "nini-agent-code" in c.metadata.get("tags", [])]
    assert step.source.startswith("%%nini_run --dataset=sales --label=count --purpose=exploration\ntry:")
    assert (tmp_path / "cli2_files" / "datasets" / "sales.parquet").is_file()

    markdown = nini("sessions", "export", "cli2", "--format", "md")
    assert "这些代码由 nini 的智能体" in markdown.stdout and "在沙箱之外运行" in markdown.stdout
    refused = nini("sessions", "export", "cli2", "--format", "md", "--sandboxed")
    assert refused.exit_code == 1 and "[INVALID_ARGUMENT]" in refused.stderr and "ipynb" in refused.stderr


def test_run_code_from_a_file_prints_output_and_artifacts(nini, tmp_path: Path) -> None:
    script = tmp_path / "chart.py"
    script.write_text("import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nprint('drawn')\n")
    result = nini("run-code", str(script), "--label", "line chart")
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == "drawn"
    assert "artifact: artifacts/line-chart.png" in result.stderr and result.stderr.count("artifact:") == 2


@pytest.mark.parametrize(
    ("code", "exit_code", "error"),
    [
        ("import socket\n", 2, "[POLICY_VIOLATION] (line 1)"),
        ("x = 1\n1 / 0\n", 1, "[CODE_ERROR] (line 2): ZeroDivisionError"),
    ],
)
def test_failures_exit_with_their_code(nini, code: str, exit_code: int, error: str) -> None:
    result = nini("run-code", "-", input=code)
    assert result.exit_code == exit_code, result.output
    assert error in result.stderr
    assert "site-packages" not in result.stderr and "nini/" not in result.stderr  # the user's traceback, not nini's


def test_missing_file_and_unknown_session_are_user_errors(nini, tmp_path: Path) -> None:
    missing = nini("run-code", str(tmp_path / "nope.py"))
    assert missing.exit_code == 1 and "no such file" in missing.stderr
    for args in (("sessions", "show", "nosuch"), ("sessions", "export", "nosuch")):
        result = nini(*args)
        assert result.exit_code == 1 and "NOT_FOUND" in result.stderr, args
    assert nini("run-code", "-", "--session", "../x", input="1").exit_code == 1


def test_listing_without_sessions_says_so(nini) -> None:
    result = nini("sessions", "list")
    assert result.exit_code == 0 and result.stdout.strip() == "no sessions yet"


@pytest.mark.slow
def test_one_data_file_is_df_in_python_and_in_r(nini) -> None:
    """Issue 22: `nini run-code --data sales.csv` used to fail with NameError: df, and run-r printed NULL."""
    python = nini("run-code", "-", "--data", str(SALES), input="print(df.shape)\n")
    assert python.exit_code == 0, python.output
    assert python.stdout.startswith("(144, 6)\n")
    from nini.config import load_settings
    from nini.skills.builtin.run_r import r_status

    if not r_status(load_settings())[0]:
        pytest.skip(f"R is not usable here: {r_status(load_settings())[1]}")
    r = nini("run-r", "-", "--data", str(SALES), input="print(dim(df))\n")
    assert r.exit_code == 0, r.output
    assert r.stdout.startswith("[1] 144   6\n")
