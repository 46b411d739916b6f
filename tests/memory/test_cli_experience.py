"""``nini remember`` and ``nini experience``: the scripted deposit, the refusals with their exit
codes, the dialogue on stdin, and the library commands."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from nini.cli import app
from tests.timeouts import timeout

NINI = Path(sys.executable).with_name("nini")
ISSUE_35 = "汇总 revenue 时用中位数而不是均值：revenue 列有极端值"


@pytest.fixture
def nini(nini_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("LANG", "zh_CN.UTF-8")  # these tests read the spec's Chinese words
    project = tmp_path / "project"
    project.mkdir()

    def run(*args: str, input: str | None = None) -> Any:
        return CliRunner().invoke(app, ["--project-dir", str(project), *args], input=input)

    run.project = project  # type: ignore[attr-defined]
    return run


def test_a_scripted_deposit_then_list_show_deprecate_and_rollback(nini: Any, nini_home: Path) -> None:
    added = nini("remember", "--add", "use the median, the revenue column has outliers", "--level", "team", "--yes")
    assert added.exit_code == 0, added.output
    assert added.output.splitlines() == [
        "[独立保存] Use the median, the revenue column has outliers → team",
        "已沉淀 1 条经验：EXP-0001（team）。回滚：nini experience rollback team",
    ]
    listed = nini("experience", "list")
    assert listed.output.split()[:3] == ["team", "EXP-0001", "knowledge"]
    assert "- Decision being made: use the median" in nini("experience", "show", "EXP-0001").output
    assert nini("experience", "validate").output == "team: ok\nproject: ok\n"
    deprecated = nini("experience", "deprecate", "EXP-0001", "--level", "team", "--yes")
    assert deprecated.exit_code == 0 and nini("experience", "list").output == "还没有经验\n"
    assert nini("experience", "rollback", "team").exit_code == 0
    assert "active" in nini("experience", "list").output
    assert (nini_home / "experience" / "team" / "knowledge" / "EXP-0001.md").is_file()


def test_refusals_exit_1_with_the_reason_and_the_users_own_statement_is_kept(nini: Any) -> None:
    empty = nini("remember", "--add", "  ", "--yes")
    assert empty.exit_code == 1 and "say what to remember" in empty.output
    assert nini("remember", "--yes").exit_code == 1
    assert nini("experience", "show", "EXP-0042").exit_code == 1
    assert nini("experience", "rollback", "project").exit_code == 1
    general = nini(
        "remember", "--add", "数据分析前要先清洗数据", "--yes"
    )  # the user's own: kept, with what stage 1 saw
    assert general.exit_code == 0 and "已沉淀 1 条经验：EXP-0001（project）" in general.stdout
    assert general.stderr.splitlines() == [
        "note: kept as you stated it, though: no alternative rejected: say what not to do ('... instead of ...')",
        "note: lowered: general knowledge, kept as a narrow hypothesis",
    ]


def test_the_dialogue_reads_stdin_and_a_no_writes_nothing(nini: Any) -> None:
    asked = nini("remember", "--add", "use the median, the revenue column has outliers", input="later\nreport\n1\nn\n")
    assert (
        asked.exit_code == 0
        and asked.output.count("这条经验属于哪个阶段") == 2
        and "已暂存 1 条经验候选" in asked.output
        and "已取消，候选仍在待沉淀列表中。" in asked.output
    )
    assert nini("experience", "list").output == "还没有经验\n"
    kept = nini("remember", input="a\ny\n")
    assert "已沉淀 1 条经验：EXP-0001（project）" in kept.output
    assert (
        "- Level: project · Type: knowledge · Stage: report"
        in (nini.project / ".nini" / "experience" / "project" / "EXP-0001.md").read_text()
    )


def test_validate_reports_a_broken_index_and_exits_1(nini: Any, nini_home: Path) -> None:
    team = nini_home / "experience" / "team"
    team.mkdir(parents=True)
    (team / "INDEX.md").write_text("| Tag | Title |\n|---|---|\n| a | b |\n")
    checked = nini("experience", "validate")
    assert (
        checked.exit_code == 1
        and "team: 1 problem(s)" in checked.output
        and "it must be Tag | Type | Title" in checked.output
    )
    assert (team / "INDEX.md").read_text() == "| Tag | Title |\n|---|---|\n| a | b |\n"


@pytest.mark.parametrize("lang", ["en_US.UTF-8", "zh_CN.UTF-8"])
def test_the_issues_chinese_statement_is_kept_through_the_real_cli(lang: str, tmp_path: Path) -> None:
    """Issue 35: refused as COMMON_KNOWLEDGE before; kept now, and listed by ``experience list --json``."""
    project = tmp_path / "project"
    project.mkdir()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("NINI_", "LC_"))},
        "NINI_HOME": str(tmp_path / "home"),
        "LANG": lang,
    }

    def nini(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(NINI), "--project-dir", str(project), *args],
            env=env,
            cwd=project,
            capture_output=True,
            text=True,
            timeout=timeout(120),
        )

    added = nini("remember", "--add", ISSUE_35, "--level", "project", "--yes")
    assert added.returncode == 0, added.stdout + added.stderr
    assert "EXP-0001" in added.stdout and "COMMON_KNOWLEDGE" not in added.stdout + added.stderr
    listed = nini("experience", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    [row] = json.loads(listed.stdout)
    assert (row["id"], row["level"], row["status"], row["title"]) == ("EXP-0001", "project", "active", ISSUE_35)
    document = (project / ".nini" / "experience" / "project" / "EXP-0001.md").read_text(encoding="utf-8")
    assert "- Alternatives rejected: 均值" in document and "- Discriminating signal: revenue 列有极端值" in document
