"""Automatic enhancement after real agent runs against the scripted model server: the decision, the
model asked about clarifications only when it matters, every message of the enhancement, the
answer left alone, and the decision log."""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Iterator
from typing import Any

import pytest

from nini.agent.enhance import decide
from nini.agent.skill_enhancer import FALLBACK_MESSAGE, RETRY_REMINDER, enhance_from_run
from tests.agent.conftest import run_turn as run
from tests.conftest import runtime_harness, scripted_model_settings, skill_md
from tests.llm_server import ScriptedLLM, error, text, tool_call

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("fresh_script")]

QUESTION = "Which region grew fastest? (confidential-question-text)"
ANSWER = "South grew fastest. (confidential-answer-text)"


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory, llm: ScriptedLLM) -> Iterator[Any]:
    values = scripted_model_settings(llm) | {"skill_enhance": {"auto_enhance": True, "trigger_profile": "neutral"}}
    yield from runtime_harness(tmp_path_factory, values)


@pytest.fixture
def enhance_settings(harness: Any) -> Iterator[Any]:
    """The module's skill_enhance settings, restored after a test changes them."""
    current = harness.runtime.settings.skill_enhance
    saved = current.model_dump()
    yield current
    for key, value in saved.items():
        setattr(current, key, value)


def qualifying_run(llm: ScriptedLLM) -> None:
    """A run that scores 2 (3 calls, 2 distinct tools): enough for the neutral profile."""
    llm.reply(
        tool_call("list_datasets"), tool_call("list_datasets"), tool_call("search_skills", query="growth"), text(ANSWER)
    )


def skill_text(name: str, body: str = "Steps: total by region, then fit a trend per region.") -> str:
    return skill_md(name, "Rank regions by growth from monthly sales.", f"# {name}\n\n{body}\n")


def saves(llm: ScriptedLLM, name: str, verdict: str, body: str = "Steps: total by region.") -> None:
    """The enhancing sub-agent's replies: save ``name``, then answer ``verdict``."""
    llm.reply(tool_call("save_skill", name=name, content=skill_text(name, body)), text(verdict))


def kinds(harness: Any, session: Any) -> list[str]:
    return [e["type"] for e in harness.runtime.store.list_events(session.id)]


def decision_event(harness: Any, session: Any) -> dict[str, Any]:
    return [e for e in harness.runtime.store.list_events(session.id) if e["type"] == "enhance_decision"][-1]["data"]


def test_a_qualifying_run_creates_a_skill_and_the_note_follows_the_answer(harness: Any, llm: ScriptedLLM) -> None:
    session = harness.session()
    qualifying_run(llm)
    saves(llm, "region-growth", "[Skill] Created: region-growth")
    result = run(harness, session, QUESTION)

    assert (result.answer, result.completed_normally) == (ANSWER, True)
    assert result.notes == ["[Skill] Created: region-growth"]
    events = harness.runtime.store.list_events(session.id)
    order = [e["type"] for e in events if e["type"] in ("done", "enhance_decision", "stop_hook_note")]
    assert order == ["done", "enhance_decision", "stop_hook_note"]
    assert events[-1]["data"] == {"hook": "enhance", "text": "[Skill] Created: region-growth"}
    assert [e for e in events if e["type"] == "done"][0]["data"]["answer"] == ANSWER
    decision = decision_event(harness, session)
    assert (decision["reasonCode"], decision["totalScore"], decision["threshold"]) == ("SCORE_REACHED", 2, 2)
    assert decision["signalHits"] == ["TOOL_CALLS_GTE_3", "UNIQUE_TOOLS_GTE_2"]
    assert decision["enhancement"] == {"status": "created", "skill": "region-growth", "message": result.notes[0]}
    # the skill is in the user's folder, the registry and the snapshot
    saved = harness.runtime.settings.user_skills_dir / "region-growth" / "SKILL.md"
    assert "total by region" in saved.read_text(encoding="utf-8")
    assert harness.runtime.registry.get("region-growth")["type"] == "markdown"
    assert "region-growth" in harness.runtime.settings.snapshot_path.read_text(encoding="utf-8")
    # the meta-skills were read through invoke before the sub-agent ran, under the enhancement's own turn
    enhancement = [c for c in harness.runtime.store.list_tool_calls(session.id) if c["turn_id"] != result.turn_id]
    assert [c["tool_name"] for c in enhancement] == [
        "skill-creator",
        "skill-enhance",
        "task:skill:enhance",
        "save_skill",
    ]
    prompt = llm.requests[4]["messages"][-1]["content"]
    creator = harness.runtime.registry.load_definition("skill-creator").body.strip()
    assert creator[:80] in prompt and QUESTION in prompt and "list_datasets (succeeded)" in prompt
    # the run's own record is untouched: its turn still has exactly its three calls
    own = harness.runtime.store.list_tool_calls(session.id, turn_id=result.turn_id)
    assert [c["tool_name"] for c in own] == ["list_datasets", "list_datasets", "search_skills"]


def test_two_qualifying_runs_in_a_row_both_enhance(harness: Any, llm: ScriptedLLM) -> None:
    session = harness.session()
    qualifying_run(llm)
    saves(llm, "growth-ranking", "[Skill] Created: growth-ranking", body="First version.")
    first = run(harness, session, QUESTION)
    qualifying_run(llm)
    saves(llm, "growth-ranking", "[Skill] Enhanced: growth-ranking", body="Second version, with pitfalls.")
    second = run(harness, session, "And per product? (a second question)")

    assert first.notes == ["[Skill] Created: growth-ranking"]
    assert second.notes == ["[Skill] Enhanced: growth-ranking"]
    folder = harness.runtime.settings.user_skills_dir / "growth-ranking"
    assert "Second version" in (folder / "SKILL.md").read_text(encoding="utf-8")
    assert "First version" in (folder / "SKILL.md.bak").read_text(encoding="utf-8")


def test_a_created_claim_for_an_existing_skill_reads_enhanced(harness: Any, llm: ScriptedLLM) -> None:
    """Created or Enhanced is decided by whether the skill existed, not by the sub-agent's word."""
    session = harness.session()
    qualifying_run(llm)
    saves(llm, "claimed-new", "[Skill] Created: claimed-new")
    run(harness, session, QUESTION)
    qualifying_run(llm)
    saves(llm, "claimed-new", "[Skill] Created: claimed-new")
    assert run(harness, session, QUESTION).notes == ["[Skill] Enhanced: claimed-new"]


def test_no_enhancement_needed(harness: Any, llm: ScriptedLLM) -> None:
    session = harness.session()
    qualifying_run(llm)
    llm.reply(text("[Skill] No enhancement needed"))
    result = run(harness, session, QUESTION)
    assert (result.answer, result.notes) == (ANSWER, ["[Skill] No enhancement needed"])
    assert decision_event(harness, session)["enhancement"]["status"] == "none"


def test_an_answer_out_of_form_is_retried_once(harness: Any, llm: ScriptedLLM) -> None:
    session = harness.session()
    qualifying_run(llm)
    # a chatty answer (summarised by the model, which keeps it out of form), then the form
    llm.reply(text("I looked at the run and I think it is a fine procedure."), text("The sub-agent found a procedure."))
    saves(llm, "retried-skill", "[Skill] Created: retried-skill")
    result = run(harness, session, QUESTION)
    assert result.notes == ["[Skill] Created: retried-skill"]
    retry_prompt = llm.requests[6]["messages"][-1]["content"]
    assert retry_prompt.endswith(RETRY_REMINDER)


def test_two_answers_out_of_form_end_with_the_fallback(harness: Any, llm: ScriptedLLM) -> None:
    session = harness.session()
    qualifying_run(llm)
    # the second claims a skill it never saved: as wrong as no form at all
    llm.reply(text("Done, it went well."), text("The sub-agent is done."), text("[Skill] Created: never-saved"))
    result = run(harness, session, QUESTION)
    assert (result.answer, result.notes) == (ANSWER, [FALLBACK_MESSAGE])
    assert decision_event(harness, session)["enhancement"]["status"] == "fallback"
    assert not (harness.runtime.settings.user_skills_dir / "never-saved").exists()


def test_the_record_is_compacted_to_the_setting(harness: Any, llm: ScriptedLLM, enhance_settings: Any) -> None:
    enhance_settings.max_enhance_context_chars = 400
    session = harness.session()
    look = tool_call("list_datasets")
    llm.reply(*[look] * 12, tool_call("search_skills", query="growth " * 100), text(ANSWER))
    llm.reply(text("[Skill] No enhancement needed"))
    result = run(harness, session, QUESTION)
    assert result.notes == ["[Skill] No enhancement needed"]
    record = llm.requests[-1]["messages"][-1]["content"].split("## The run\n", 1)[1].removesuffix("\n")
    assert len(record) <= 400 and "[... the middle of the record is left out ...]" in record
    assert record.startswith(f"User request: {QUESTION}") and record.endswith(f"Answer: {ANSWER}")


def test_a_timeout_fails_the_enhancement_and_not_the_answer(
    harness: Any, llm: ScriptedLLM, enhance_settings: Any
) -> None:
    enhance_settings.sub_agent_timeout_ms = 400
    session = harness.session()
    qualifying_run(llm)
    llm.reply(text("[Skill] No enhancement needed", delay_s=2))
    result = run(harness, session, QUESTION)
    assert (result.answer, result.completed_normally) == (ANSWER, True)
    assert result.notes == ["Enhancement failed: execution timeout"]
    assert decision_event(harness, session)["enhancement"]["status"] == "failed"


def test_a_failing_sub_agent_gives_one_short_line(harness: Any, llm: ScriptedLLM) -> None:
    session = harness.session()
    qualifying_run(llm)
    llm.reply(error(400, message="model refused: " + "x" * 3000), error(400, message="summary refused too"))
    result = run(harness, session, QUESTION)
    assert result.answer == ANSWER
    (note,) = result.notes
    assert note.startswith("Enhancement failed: ") and note != "Enhancement failed: execution timeout"
    assert len(note) <= len("Enhancement failed: ") + 200 and "\n" not in note and "Traceback" not in note


def test_missing_meta_skills_fail_before_any_model_call(harness: Any, llm: ScriptedLLM) -> None:
    session = harness.session()
    qualifying_run(llm)
    harness.runtime.registry.set_enabled("skill-enhance", False)
    try:
        result = run(harness, session, QUESTION)
    finally:
        harness.runtime.registry.set_enabled("skill-enhance", True)
    assert (result.answer, result.notes) == (ANSWER, ["Enhancement failed: meta-skills not found"])
    assert len(llm.requests) == 4  # the run's own four model calls, no sub-agent


def test_an_unreadable_record_fails_with_the_reason(harness: Any, llm: ScriptedLLM) -> None:
    session = harness.session()
    qualifying_run(llm)
    result = run(harness, session, QUESTION, runner=_runner_without_hooks(harness))
    database = harness.runtime.settings.home / "nini.db"
    with sqlite3.connect(database) as conn:  # the store loses a table under nini's feet
        conn.execute("ALTER TABLE tool_calls RENAME TO tool_calls_away")
    try:
        outcome = harness.loop.run_until_complete(enhance_from_run(session, result.turn_id))
    finally:
        with sqlite3.connect(database) as conn:
            conn.execute("ALTER TABLE tool_calls_away RENAME TO tool_calls")
    assert outcome.status == "failed"
    assert outcome.message.startswith("Enhancement failed: failed to read session - ")
    assert "tool_calls" in outcome.message and len(outcome.message) <= 260


def _runner_without_hooks(harness: Any) -> Any:
    return harness.runtime.new_agent(stop_hooks=[])


def test_auto_enhance_off_asks_no_model_and_logs_why(harness: Any, llm: ScriptedLLM, enhance_settings: Any) -> None:
    enhance_settings.auto_enhance = False
    session = harness.session()
    qualifying_run(llm)
    result = run(harness, session, QUESTION)
    assert (result.answer, result.notes) == (ANSWER, [])
    assert len(llm.requests) == 4
    decision = decision_event(harness, session)
    assert (decision["reasonCode"], decision["shouldTrigger"], decision["totalScore"]) == ("AUTO_ENHANCE_OFF", False, 0)
    assert "stop_hook_note" not in kinds(harness, session)


def test_a_low_score_is_logged_and_enhances_nothing(harness: Any, llm: ScriptedLLM) -> None:
    session = harness.session()
    llm.reply(tool_call("list_datasets"), text(ANSWER))
    result = run(harness, session, QUESTION)
    assert result.notes == [] and len(llm.requests) == 2
    decision = decision_event(harness, session)
    assert (decision["reasonCode"], decision["totalScore"], decision["signalHits"]) == ("LOW_SCORE", 0, [])


def test_the_log_line_has_the_fields_and_no_content(
    harness: Any, llm: ScriptedLLM, caplog: pytest.LogCaptureFixture
) -> None:
    session = harness.session()
    qualifying_run(llm)
    saves(llm, "logged-skill", "[Skill] Created: logged-skill")
    with caplog.at_level(logging.INFO, logger="nini.agent.enhance"):
        result = run(harness, session, QUESTION)
    (line,) = [r for r in caplog.records if r.name == "nini.agent.enhance" and hasattr(r, "data")]
    data = line.data
    assert {"reasonCode", "totalScore", "threshold", "signalHits", "profile", "sessionId", "executionStatus"} <= set(
        data
    )
    assert (data["sessionId"], data["executionStatus"], data["profile"]) == (session.id, "finished", "neutral")
    assert data["enhancement"]["message"] == "[Skill] Created: logged-skill"
    everything = json.dumps(data) + line.getMessage() + json.dumps(decision_event(harness, session))
    for secret in ("confidential-question-text", "confidential-answer-text", "total by region", result.answer):
        assert secret not in everything


def test_a_failing_log_handler_never_reaches_the_run(harness: Any, llm: ScriptedLLM) -> None:
    class Broken(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            raise OSError("disk full")

    logger = logging.getLogger("nini.agent.enhance")
    broken, level = Broken(), logger.level
    logger.addHandler(broken)
    logger.setLevel(logging.INFO)
    try:
        session = harness.session()
        qualifying_run(llm)
        llm.reply(text("[Skill] No enhancement needed"))
        result = run(harness, session, QUESTION)
    finally:
        logger.removeHandler(broken)
        logger.setLevel(level)
    assert (result.answer, result.notes) == (ANSWER, ["[Skill] No enhancement needed"])
    assert decision_event(harness, session)["reasonCode"] == "SCORE_REACHED"


# --- the clarification signal: asked of the model only when it matters --------------------------


def conversation(harness: Any, users: list[str], calls: list[str]) -> tuple[Any, str]:
    """A recorded session: ``users`` as earlier user messages, the last one's turn with ``calls``."""
    session = harness.session()
    store = harness.runtime.store
    for number, message in enumerate(users):
        store.add_message(session.id, "user", message, turn_id=f"t{number}")
    turn = f"t{len(users) - 1}"
    for name in calls:
        call = store.start_tool_call(session.id, name, {}, turn_id=turn)
        store.finish_tool_call(call["id"], status="succeeded", result=[])
    return session, turn


def decided(harness: Any, session: Any, turn: str) -> Any:
    runtime = harness.runtime
    decision = decide(session, turn, completed_normally=True, auto_enhance_enabled=True, router=lambda: runtime.router)
    return harness.loop.run_until_complete(decision)


CLARIFIED = ["Chart sales by month.", "No, I meant revenue, not units.", "And only for 2025, please."]


def test_the_model_counts_clarifications_when_its_point_decides(harness: Any, llm: ScriptedLLM) -> None:
    session, turn = conversation(harness, CLARIFIED, ["list_datasets"] * 3)  # score 1 of 2 without it
    llm.reply(text('```json\n{"clarification_count": 2}\n```'))
    decision = decided(harness, session, turn)
    assert (decision.should_trigger, decision.total_score) == (True, 2)
    assert decision.signal_hits == ["TOOL_CALLS_GTE_3", "USER_CLARIFICATIONS_GTE_2"]
    (request,) = llm.requests
    shown = request["messages"][-1]["content"]
    assert all(message in shown for message in CLARIFIED)
    assert "clarification_count" in request["messages"][0]["content"]


def test_one_clarification_is_not_enough(harness: Any, llm: ScriptedLLM) -> None:
    session, turn = conversation(harness, CLARIFIED, ["list_datasets"] * 3)
    llm.reply(text('{"clarification_count": 1}'))
    assert decided(harness, session, turn).reason_code == "LOW_SCORE"


@pytest.mark.parametrize("calls", [["list_datasets"] * 3 + ["search_skills"], ["list_datasets"]])
def test_no_model_is_asked_when_the_answer_cannot_change_the_decision(
    harness: Any, llm: ScriptedLLM, calls: list[str]
) -> None:
    session, turn = conversation(harness, CLARIFIED, calls)  # already reached (2), or out of reach (0)
    decision = decided(harness, session, turn)
    assert llm.requests == [] and "USER_CLARIFICATIONS_GTE_2" not in decision.signal_hits


def test_a_single_user_message_needs_no_model(harness: Any, llm: ScriptedLLM) -> None:
    session, turn = conversation(harness, CLARIFIED[:1], ["list_datasets"] * 3)
    assert decided(harness, session, turn).reason_code == "LOW_SCORE" and llm.requests == []


@pytest.mark.parametrize(
    "reply",
    [text("two of them"), text('{"clarification_count": -1}'), text('{"count": 3}'), error(500, message="model down")],
)
def test_an_unusable_or_missing_answer_is_not_a_hit(
    harness: Any, llm: ScriptedLLM, reply: Any, caplog: pytest.LogCaptureFixture
) -> None:
    session, turn = conversation(harness, CLARIFIED, ["list_datasets"] * 3)
    llm.reply(reply)
    with caplog.at_level(logging.WARNING, logger="nini.agent.enhance"):
        decision = decided(harness, session, turn)
    assert (decision.reason_code, decision.total_score) == ("LOW_SCORE", 1)
    assert any("clarification" in r.getMessage() for r in caplog.records)
