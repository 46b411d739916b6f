"""End to end with the CLI against the scripted model (real HTTP): three answers with exclamation
marks rejected with ``--signal no_exclamation`` make the rule the next run's recorded system prompt
holds; after ``nini prefs delete`` the run after that does not."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.agent.conftest import nini  # noqa: F401 - the CLI in-process, pointed at the scripted model
from tests.llm_server import ScriptedLLM, text
from tests.test_cli import _restore_nini_logger  # noqa: F401 - autouse fixture shared with test_cli

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("chinese_locale")]  # the spec's Chinese words
RULE = "- 规则: 不使用感叹号（confidence=0.70, source=implicit）"


def ask(nini: Any, question: str) -> str:  # noqa: F811
    outcome = nini("ask", question, "--session", "prefs", "--new", "--json")
    assert outcome.exit_code == 0, outcome.output
    return json.loads(outcome.stdout)["turn_id"]


def test_rejections_make_a_rule_and_deleting_it_takes_it_out(nini: Any, llm_server: ScriptedLLM) -> None:  # noqa: F811
    llm_server.reply(text("Sales doubled!"), text("Costs fell!"), text("Margins rose!"))
    for question in ("sales?", "costs?", "margins?"):
        judged = nini("feedback", ask(nini, question), "reject", "--signal", "no_exclamation")
        assert judged.exit_code == 0, judged.output
    assert "punctuation.no_exclamation: 0.50 -> 0.70 (signal no_exclamation)" in judged.output
    assert nini("prefs", "preview").output.splitlines()[-1] == RULE

    llm_server.reply(text("Sales doubled."))
    ask(nini, "sales again?")
    assert RULE in llm_server.requests[-1]["messages"][0]["content"]

    [row] = json.loads(nini("prefs", "list", "--json").stdout)
    deleted = nini("prefs", "delete", str(row["id"]))
    assert deleted.exit_code == 0 and deleted.output == f"已删除 {row['id']}（punctuation.no_exclamation）\n"
    llm_server.reply(text("Sales doubled."))
    ask(nini, "and once more?")
    system = llm_server.requests[-1]["messages"][0]["content"]
    assert "感叹号" not in system and system.endswith("## 用户偏好\n\n按这些偏好调整回答与报告的写法：\n(none)")


def test_learning_off_keeps_explicit_preferences_in_the_prompt(nini: Any, llm_server: ScriptedLLM) -> None:  # noqa: F811
    assert nini("prefs", "add", "verbosity", "concise").exit_code == 0
    assert nini("prefs", "learning", "--off").output == "preferences.learning: off\n"
    llm_server.reply(text("Up!"), text("Up."))
    run = ask(nini, "trend?")
    judged = nini("feedback", run, "reject", "--signal", "no_exclamation").output
    assert (
        judged.startswith("已记录反馈 ") and "（reject）" in judged and "->" not in judged
    )  # recorded, nothing learned
    assert [r["key"] for r in json.loads(nini("prefs", "list", "--json").stdout)] == ["verbosity"]
    ask(nini, "trend again?")
    assert (
        "- 规则: 回答简洁，先给结论（confidence=1.00, source=explicit）"
        in llm_server.requests[-1]["messages"][0]["content"]
    )
    assert nini("feedback", run, "maybe").exit_code != 0


def test_an_edit_of_a_report_is_read_as_signals(tmp_path_factory: pytest.TempPathFactory) -> None:
    from tests.conftest import runtime_harness
    from tests.report.test_narrative import record_growth

    harness_iter = runtime_harness(tmp_path_factory)
    harness = next(harness_iter)
    try:
        session = harness.session("edited")
        record_growth(session, 0.58349)
        assert harness.call(session, "generate_report", formats=["md"]).success
        [report] = [a for a in session.store.list_artifacts(session.id) if a["kind"] == "report"]
        memory = harness.runtime.preferences
        original = memory.report_text(harness.runtime, f"report:{report['id']}")
        assert "0.5835" in original
        edited = original[: len(original) // 2] + "\nSouth growth: 0.58\n"  # cut by half, the number rounded
        learned = harness.loop.run_until_complete(
            memory.feedback(f"report:{report['id']}", "partial", original=original, edited=edited)
        )
        assert [c["key"] for c in learned.changes] == ["verbosity", "report.decimals"]
        [row] = memory.table.feedback_for(f"report:{report['id']}")
        assert (
            row["skill_id"] == "generate_report" and len(row["evidence_ref"]["diff_id"]) == 12
        )  # a reference, not the text
    finally:
        next(harness_iter, None)
