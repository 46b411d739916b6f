"""``nini r check FILE|-``: the policy report as JSON; exit 0 allowed, 2 denied, 1 syntax error or bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from nini.cli import app
from r_sandbox.errors import RSandboxError
from tests.r_sandbox.test_policy import needs_r
from tests.test_cli import _restore_nini_logger  # noqa: F401

pytestmark = pytest.mark.usefixtures("chinese_locale")  # the refusals' words are the spec's Chinese


@pytest.fixture
def nini(project_dir: Path):
    runner = CliRunner()

    def invoke(*args: str, input: str | bytes | None = None):
        return runner.invoke(app, ["--project-dir", str(project_dir), "r", *args], input=input)

    return invoke


def write(tmp_path: Path, text: str | bytes, name: str = "script.R") -> str:
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    return str(path)


SYSTEM_VIOLATION = {
    "rule": "denied-process",
    "name": "system",
    "line": 2,
    "column": 1,
    "message": "不允许调用函数: system (第 2 行)",
}


@needs_r
@pytest.mark.parametrize(
    ("code", "exit_code", "violations", "syntax_line", "stderr"),
    [
        ('library(ggplot2)\ndf <- read.csv("a.csv")  # 读取\n', 0, [], None, ""),
        (
            'x <- 1\nsystem("ls")\n',
            2,
            [SYSTEM_VIOLATION],
            None,
            "error [POLICY_VIOLATION]: 不允许调用函数: system (第 2 行)\n",
        ),
        ("x <- 1\ny y\n", 1, [], 2, "error [INVALID_ARGUMENT]: R 代码有语法错误: unexpected symbol (第 2 行)\n"),
    ],
)
def test_prints_the_report_and_exits_by_verdict(
    nini, tmp_path: Path, code: str, exit_code: int, violations: list, syntax_line: int | None, stderr: str
) -> None:
    result = nini("check", write(tmp_path, code))
    assert result.exit_code == exit_code, result.output
    report = json.loads(result.stdout)
    assert report["allowed"] is (exit_code == 0) and report["violations"] == violations
    syntax = report["syntax_error"]
    assert (syntax and syntax["line"]) == syntax_line
    assert syntax is None or "unexpected symbol" in syntax["message"]
    assert result.stderr == stderr


@needs_r
@pytest.mark.parametrize(("code", "exit_code"), [("summary(cars)\n", 0), ("f <- url\n", 2), ("f(\n", 1)])
def test_reads_stdin_for_dash(nini, code: str, exit_code: int) -> None:
    result = nini("check", "-", input=code)
    assert result.exit_code == exit_code, result.output
    assert json.loads(result.stdout)["allowed"] is (exit_code == 0)


@needs_r
def test_allow_package_option_and_setting_add_packages(nini, tmp_path: Path, nini_home: Path) -> None:
    script = write(tmp_path, "library(parallel)\nrequireNamespace('httr')\n")
    denied = json.loads(nini("check", script).stdout)
    assert [v["name"] for v in denied["violations"]] == ["parallel", "httr"]
    assert nini("check", script, "--allow-package", "parallel").exit_code == 2
    assert nini("check", script, "--allow-package", "parallel", "--allow-package", "httr").exit_code == 0
    nini_home.mkdir(parents=True, exist_ok=True)
    (nini_home / "settings.json").write_text(json.dumps({"r": {"extra_packages": ["httr"]}}))
    assert nini("check", script, "--allow-package", "parallel").exit_code == 0


def test_missing_file_exits_1(nini, tmp_path: Path) -> None:
    result = nini("check", str(tmp_path / "nope.R"))
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr.startswith("error [NOT_FOUND]: no such file:")


@pytest.mark.parametrize("kind", ["binary", "directory"])
def test_unreadable_input_exits_1(nini, tmp_path: Path, kind: str) -> None:
    target = write(tmp_path, b"x <- '\xff\xfe'\n") if kind == "binary" else str(tmp_path)
    result = nini("check", target)
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr.startswith("error [INVALID_ARGUMENT]:")


def test_r_unavailable_exits_1_with_its_code(nini, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_r(code, allowed_packages=None, language="zh"):
        raise RSandboxError("R_UNAVAILABLE", "R is not available: ImportError: no rpy2")

    monkeypatch.setattr("nini.cli.r.check_r_code", no_r)
    result = nini("check", write(tmp_path, "x <- 1\n"))
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr.startswith("error [R_UNAVAILABLE]: cannot check R code: R is not available")
    assert "nini doctor" in result.stderr and "Traceback" not in result.output


@needs_r
def test_every_violation_is_listed_in_the_language_of_the_settings(nini, tmp_path: Path, nini_home: Path) -> None:
    script = write(tmp_path, 'library(parallel)\nx <- get(n)\nsystem("ls")\n')
    zh = nini("check", script)
    assert zh.stderr == (
        "error [POLICY_VIOLATION]: 不允许使用 R 包: parallel (第 1 行)\n"
        "不允许用计算出的名字取函数: get (第 2 行)\n不允许调用函数: system (第 3 行)\n"
    )
    assert [(v["line"], v["column"]) for v in json.loads(zh.stdout)["violations"]] == [(1, 9), (2, 6), (3, 1)]
    nini_home.mkdir(parents=True, exist_ok=True)
    (nini_home / "settings.json").write_text(json.dumps({"ui": {"language": "en"}}))
    en = nini("check", script)
    assert en.stderr.splitlines()[0] == "error [POLICY_VIOLATION]: R package not allowed: parallel (line 1)"
    assert "function not allowed: system (line 3)" in en.stderr
