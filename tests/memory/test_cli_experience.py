"""``nini remember`` and ``nini experience``: the scripted deposit, the refusals with their exit
codes, the dialogue on stdin, and the library commands."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from nini.cli import app


@pytest.fixture
def nini(nini_home: Path, tmp_path: Path) -> Any:
    project = tmp_path / "project"
    project.mkdir()

    def run(*args: str, input: str | None = None) -> Any:
        return CliRunner().invoke(app, ["--project-dir", str(project), *args], input=input)

    run.project = project  # type: ignore[attr-defined]
    return run


def test_a_scripted_deposit_then_list_show_deprecate_and_rollback(nini: Any, nini_home: Path) -> None:
    added = nini("remember", "--add", "use the median, the revenue column has outliers", "--level", "team", "--yes")
    assert added.exit_code == 0, added.output
    assert added.output.splitlines() == ["[独立保存] Use the median, the revenue column has outliers → team",
                                         "已沉淀 1 条经验：EXP-0001（team）。回滚：nini experience rollback team"]  # fmt: skip
    listed = nini("experience", "list")
    assert listed.output.split()[:3] == ["team", "EXP-0001", "knowledge"]
    assert "- Decision being made: use the median" in nini("experience", "show", "EXP-0001").output
    assert nini("experience", "validate").output == "team: ok\nproject: ok\n"
    deprecated = nini("experience", "deprecate", "EXP-0001", "--level", "team", "--yes")
    assert deprecated.exit_code == 0 and nini("experience", "list").output == "no experience yet\n"
    assert nini("experience", "rollback", "team").exit_code == 0
    assert "active" in nini("experience", "list").output
    assert (nini_home / "experience" / "team" / "knowledge" / "EXP-0001.md").is_file()


def test_refusals_exit_1_with_the_reason(nini: Any) -> None:
    dropped = nini("remember", "--add", "the data looks odd", "--yes")
    assert dropped.exit_code == 1 and "NO_ALTERNATIVES" in dropped.output
    assert nini("remember", "--yes").exit_code == 1
    assert nini("experience", "show", "EXP-0042").exit_code == 1
    assert nini("experience", "rollback", "project").exit_code == 1


def test_the_dialogue_reads_stdin_and_a_no_writes_nothing(nini: Any) -> None:
    asked = nini("remember", "--add", "use the median, the revenue column has outliers", input="later\nreport\n1\nn\n")
    assert asked.exit_code == 0 and asked.output.count("这条经验属于哪个阶段") == 2 and "已暂存 1 条经验候选" in asked.output and "已取消，候选仍在待沉淀列表中。" in asked.output
    assert nini("experience", "list").output == "no experience yet\n"
    kept = nini("remember", input="a\ny\n")
    assert "已沉淀 1 条经验：EXP-0001（project）" in kept.output
    assert "- Level: project · Type: knowledge · Stage: report" in (nini.project / ".nini" / "experience" / "project" / "EXP-0001.md").read_text()


def test_validate_reports_a_broken_index_and_exits_1(nini: Any, nini_home: Path) -> None:
    team = nini_home / "experience" / "team"
    team.mkdir(parents=True)
    (team / "INDEX.md").write_text("| Tag | Title |\n|---|---|\n| a | b |\n")
    checked = nini("experience", "validate")
    assert checked.exit_code == 1 and "team: 1 problem(s)" in checked.output and "it must be Tag | Type | Title" in checked.output
    assert (team / "INDEX.md").read_text() == "| Tag | Title |\n|---|---|\n| a | b |\n"
