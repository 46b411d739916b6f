"""run_r_code through ``invoke``: parity with run_code, shared datasets, records, events, registration."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from typer.testing import CliRunner

from nini.cli import app
from nini.config import load_settings
from nini.execution.outcome import CONTRACT_KEYS
from nini.skills.builtin.run_r import r_status
from nini.skills.registry import SkillRegistry
from tests.conftest import REPO_ROOT, Harness, runtime_harness
from tests.test_cli import _restore_nini_logger  # noqa: F401 - autouse fixture shared with test_cli

SALES = REPO_ROOT / "examples" / "data" / "sales.csv"
R_USABLE, R_WHY = r_status(load_settings(home="/nonexistent-nini-home"))
needs_r = pytest.mark.skipif(not R_USABLE, reason=f"R cannot be used here: {R_WHY}")


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Harness]:
    yield from runtime_harness(tmp_path_factory)


@needs_r
def test_a_run_has_the_same_contract_and_records_as_python(harness: Harness) -> None:
    session = harness.session()
    r = harness.call(session, "run_r_code", code="x <- mean(1:10)\nprint(x)\nresult <- list(x = x)", label="mean")
    py = harness.call(session, "run_code", code="x = sum(range(1, 11)) / 10\nprint(x)\nresult = {'x': x}")
    assert r.success, r.error
    assert tuple(r.result) == tuple(py.result) == CONTRACT_KEYS
    assert r.result["stdout"] == "[1] 5.5\n" and r.result["result"] == py.result["result"] == {"x": 5.5}
    execution = harness.runtime.store.get_execution(r.execution_id)
    assert execution["language"] == "r" and execution["tool_name"] == "run_r_code" and execution["label"] == "mean"
    events = [e for e in harness.runtime.store.list_events(session.id) if e["type"] == "code_execution"]
    assert [(e["data"]["language"], e["data"]["tool_name"]) for e in events] == [
        ("r", "run_r_code"),
        ("python", "run_code"),
    ]


@needs_r
def test_a_dataset_goes_from_python_to_r_and_back(harness: Harness) -> None:
    session = harness.session()
    assert harness.call(session, "load_dataset", path=session.upload(SALES), name="sales").success
    r = harness.call(
        session,
        "run_r_code",
        dataset_name="sales",
        save_as="by_region",
        label="by region",
        code=(
            "agg <- aggregate(revenue ~ region, data = df, FUN = sum)\n"
            "stopifnot(nrow(datasets$sales) == nrow(df))\n"
            "output_df <- agg[order(agg$region), ]\n"
        ),
    )
    assert r.success, r.error
    assert r.result["datasets_saved"] == ["by_region"] and r.result["has_dataframe"]
    py = harness.call(session, "run_code", code="output_df = datasets['by_region']\nresult = output_df.to_dict('list')")
    expected = pd.read_csv(SALES).groupby("region")["revenue"].sum()
    got = py.result["result"]
    assert dict(zip(got["region"], got["revenue"], strict=True)) == pytest.approx(expected.to_dict())
    dataset = harness.runtime.store.get_dataset(session.id, "by_region")
    assert dataset["rows"] == len(expected) and dataset["source_execution_id"] == r.execution_id


@needs_r
def test_a_chart_is_recorded_as_png_and_svg_artifacts(harness: Harness) -> None:
    session = harness.session()
    code = "library(ggplot2)\np <- ggplot(data.frame(x = 1:5, y = (1:5)^2), aes(x, y)) + geom_line()\nprint(p)\n"
    result = harness.call(session, "run_r_code", code=code, label="Squares", purpose="visualization")
    assert result.success, result.error
    stored = harness.runtime.store.list_artifacts(session.id)
    assert sorted(a["name"] for a in stored) == ["squares.png", "squares.svg"]
    assert all(a["size_bytes"] > 0 and a["execution_id"] == result.execution_id for a in stored)


@pytest.fixture(scope="module")
def failures_session(harness: Harness) -> Any:
    """One session (one R worker) for every failure below: a worker start each proved nothing more, and
    a marker any case left is seen by every later one."""
    return harness.session()


@needs_r
@pytest.mark.parametrize(
    ("code", "error_code"),
    [
        ('system("touch pwned")', "POLICY_VIOLATION"),
        ("f <- system\nf('ls')", "POLICY_VIOLATION"),
        ("x <- 1\nstop('boom')", "CODE_ERROR"),
        ("x <- (1 +", "CODE_ERROR"),
    ],
)
def test_failures_are_recorded_with_their_code(
    harness: Harness, failures_session: Any, code: str, error_code: str
) -> None:
    session = failures_session
    result = harness.call(session, "run_r_code", code=code)
    assert not result.success and result.error["code"] == error_code and result.error.get("line")
    assert harness.runtime.store.get_tool_call(result.tool_call_id)["error_code"] == error_code
    assert not (session.workspace.root / "pwned").exists()


@needs_r
def test_unknown_dataset_is_refused_before_r_runs(harness: Harness) -> None:
    result = harness.call(harness.session(), "run_r_code", code="1", dataset_name="nothing")
    assert result.error["code"] == "NOT_FOUND" and "nothing" in result.error["message"]


def registered(settings_home: Path) -> bool:
    return "run_r_code" in {s["name"] for s in SkillRegistry(load_settings(home=settings_home)).list(type="function")}


def test_not_registered_when_turned_off(tmp_path: Path) -> None:
    (tmp_path / "settings.json").write_text(json.dumps({"r_enabled": False}))
    assert not registered(tmp_path)
    assert r_status(load_settings(home=tmp_path)) == (False, "turned off by settings (r_enabled = false)")


def test_not_registered_when_r_is_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    monkeypatch.delenv("R_HOME", raising=False)
    assert not registered(tmp_path)
    usable, why = r_status(load_settings(home=tmp_path))
    assert not usable and "R is not on PATH" in why


@needs_r
def test_registered_where_r_works_and_found_through_r_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import subprocess

    r_home = subprocess.run(["R", "RHOME"], capture_output=True, text=True, check=True).stdout.strip()
    assert registered(tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    monkeypatch.setenv("R_HOME", r_home)
    assert registered(tmp_path)


def test_doctor_and_run_r_say_why_when_r_is_off(tmp_path: Path, project_dir: Path, nini_home: Path) -> None:
    nini_home.mkdir(parents=True, exist_ok=True)
    (nini_home / "settings.json").write_text(json.dumps({"r_enabled": False}))
    runner = CliRunner()
    doctor = runner.invoke(app, ["--project-dir", str(project_dir), "doctor", "--json"])
    (r_check,) = [c for c in json.loads(doctor.stdout) if c["name"] == "R"]
    assert not r_check["ok"] and "r_enabled = false" in r_check["detail"]
    run = runner.invoke(app, ["--project-dir", str(project_dir), "run-r", "-"], input="1\n")
    assert run.exit_code == 1 and "R_UNAVAILABLE" in run.stderr and "r_enabled = false" in run.stderr


@needs_r
@pytest.mark.usefixtures("chinese_locale")  # the R policy's refusal in the spec's Chinese
def test_run_r_command_exit_codes(project_dir: Path) -> None:
    runner = CliRunner()

    def run(code: str):  # noqa: ANN202
        return runner.invoke(
            app, ["--project-dir", str(project_dir), "run-r", "-", "--session", "rcli", "--new"], input=code
        )

    ok = run("cat(sum(1:4), '\\n')\n")
    assert ok.exit_code == 0 and ok.stdout.strip() == "10"
    refused = run("library(parallel)\nsystem('ls')\n")
    assert refused.exit_code == 2
    assert "不允许使用 R 包: parallel (第 1 行)\n不允许调用函数: system (第 2 行)" in refused.stderr
    failed = run("stop('nope')\n")
    assert failed.exit_code == 1 and "nope" in failed.stderr


CORRUPTIONS = {"garbage": lambda data: b"\x00not parquet\xff" * 40, "truncated": lambda data: data[: len(data) // 2]}


@needs_r
@pytest.mark.parametrize("corrupt", CORRUPTIONS.values(), ids=CORRUPTIONS.keys())
def test_a_damaged_dataset_is_the_same_error_from_python_and_r(harness: Harness, corrupt) -> None:  # noqa: ANN001
    session = harness.session()
    assert harness.call(session, "load_dataset", path=session.upload(SALES), name="sales").success
    stored = session.workspace.root / session.dataset_file("sales")
    stored.write_bytes(corrupt(stored.read_bytes()))

    py = harness.call(session, "run_code", code="print(len(df))", dataset_name="sales")
    r = harness.call(session, "run_r_code", code="print(nrow(df))", dataset_name="sales")
    described = harness.call(session, "describe_dataset", name="sales")

    for failed in (py, r, described):
        assert not failed.success and failed.error["code"] == "INVALID_ARGUMENT", failed.error
        message = failed.error["message"]
        assert message.startswith("dataset 'sales' cannot be read: its file is damaged or not Parquet"), message
        assert message.endswith("save it again from its source") and str(session.workspace.root) not in message
    # both sessions' runners go on: the next run that does not read the dataset works
    assert harness.call(session, "run_code", code="print(1 + 1)").result["stdout"] == "2\n"
    assert harness.call(session, "run_r_code", code="print(1 + 1)").result["stdout"] == "[1] 2\n"
