"""``nini skills enhance`` (settings, and a recorded run enhanced by hand) and the note ``nini ask``
prints after its answer; in-process CLI, scripted model server over HTTP, real store."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import skill_md
from tests.llm_server import ScriptedLLM, error, text, tool_call
from tests.test_cli import _restore_nini_logger  # noqa: F401 - autouse fixture shared with test_cli


def settings_file(home: Path) -> dict[str, Any]:
    return json.loads((home / "settings.json").read_text(encoding="utf-8"))


def test_on_off_and_profile_are_kept_in_settings_json(nini: Any, nini_home: Path) -> None:
    status = nini("skills", "enhance", "--status")
    assert status.exit_code == 0 and "auto_enhance: off, profile: conservative (threshold 3 of 6)" in status.stdout
    assert nini("skills", "enhance", "--on", "--profile", "aggressive").exit_code == 0
    values = settings_file(nini_home)
    assert values["skill_enhance"] == {"auto_enhance": True, "trigger_profile": "aggressive"}
    assert values["llm"]["providers"][0]["name"] == "local"  # the rest of the file is kept
    assert "auto_enhance: on, profile: aggressive (threshold 1 of 6)" in nini("skills", "enhance").stdout
    assert nini("skills", "enhance", "--off").exit_code == 0
    assert settings_file(nini_home)["skill_enhance"] == {"auto_enhance": False, "trigger_profile": "aggressive"}


@pytest.mark.parametrize(
    ("args", "says"),
    [(("--profile", "bold"), "--profile must be one of conservative, neutral, aggressive")],
)
def test_an_unknown_profile_changes_nothing(nini: Any, nini_home: Path, args: tuple[str, ...], says: str) -> None:
    before = (nini_home / "settings.json").read_bytes()
    outcome = nini("skills", "enhance", *args)
    assert outcome.exit_code == 1 and says in outcome.output
    assert (nini_home / "settings.json").read_bytes() == before


def test_a_broken_settings_file_is_not_overwritten(nini: Any, nini_home: Path) -> None:
    (nini_home / "settings.json").write_text('{"llm": {"providers": [', encoding="utf-8")
    outcome = nini("skills", "enhance", "--on")
    assert outcome.exit_code == 1 and "settings.json cannot be read" in outcome.output
    assert (nini_home / "settings.json").read_text(encoding="utf-8") == '{"llm": {"providers": ['


@pytest.mark.slow
def test_a_recorded_run_is_evaluated_and_enhanced_by_hand(nini: Any, llm_server: ScriptedLLM, nini_home: Path) -> None:
    # auto enhance is off: the run ends with no note
    llm_server.reply(
        tool_call("list_datasets"),
        tool_call("search_skills", query="trend"),
        tool_call("list_datasets"),
        text("No datasets yet."),
    )
    asked = nini("ask", "What data is there?", "--session", "byhand", "--new")
    assert asked.exit_code == 0 and "[Skill]" not in asked.output
    assert nini("skills", "enhance", "--profile", "neutral").exit_code == 0
    content = skill_md("data-inventory", "List what data a session holds.", "# Inventory\n\nCall list_datasets.\n")
    llm_server.reply(
        tool_call("save_skill", name="data-inventory", content=content), text("[Skill] Created: data-inventory")
    )
    outcome = nini("skills", "enhance", "--session", "byhand", "--json")
    assert outcome.exit_code == 0, outcome.output
    payload = json.loads(outcome.stdout)
    assert payload["decision"]["reason_code"] == "SCORE_REACHED" and payload["decision"]["total_score"] == 2
    assert payload["message"] == "[Skill] Created: data-inventory"
    listed = nini("skills", "list", "--json")
    assert "data-inventory" in {record["name"] for record in json.loads(listed.stdout)}
    assert (nini_home / "skills" / "data-inventory" / "SKILL.md").read_text(encoding="utf-8") == content


@pytest.mark.slow
def test_a_run_that_did_not_end_normally_is_not_enhanced(nini: Any, llm_server: ScriptedLLM) -> None:
    # a step first: a session that holds none is not kept when its command fails
    llm_server.reply(tool_call("list_datasets"), error(400, message="bad request"))
    assert nini("ask", "Anything?", "--session", "broken", "--new").exit_code == 1
    outcome = nini("skills", "enhance", "--session", "broken", "--json")
    assert outcome.exit_code == 0, outcome.output
    payload = json.loads(outcome.stdout)
    assert (payload["decision"]["reason_code"], payload["message"]) == ("TASK_NOT_COMPLETED_NORMALLY", None)


def test_an_unknown_session_is_not_found(nini: Any) -> None:
    outcome = nini("skills", "enhance", "--session", "nosuch")
    assert outcome.exit_code == 1 and "NOT_FOUND" in outcome.output


@pytest.mark.slow
def test_ask_prints_the_note_after_the_answer(nini: Any, llm_server: ScriptedLLM, nini_home: Path) -> None:
    assert nini("skills", "enhance", "--on", "--profile", "aggressive").exit_code == 0
    look = tool_call("list_datasets")
    llm_server.reply(look, look, look, text("Nothing loaded."), text("[Skill] No enhancement needed"))
    outcome = nini("ask", "What is loaded?", "--session", "noted", "--new")
    assert outcome.exit_code == 0, outcome.output
    assert outcome.stdout.strip() == "Nothing loaded."  # the answer alone on stdout
    assert outcome.stderr.rstrip().endswith("[Skill] No enhancement needed")
    assert llm_server.pending() == 0
