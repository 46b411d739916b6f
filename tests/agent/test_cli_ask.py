"""``nini ask`` in-process against the scripted model server, with real kernels."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO_ROOT
from tests.llm_server import ScriptedLLM, text, tool_call
from tests.test_cli import _restore_nini_logger  # noqa: F401 - autouse fixture shared with test_cli

SALES = REPO_ROOT / "examples" / "data" / "sales.csv"


@pytest.mark.slow
def test_ask_loads_data_streams_progress_and_prints_the_answer(nini: Any, llm_server: ScriptedLLM) -> None:
    llm_server.reply(
        tool_call(
            "run_code", code="result = round(float(df['revenue'].sum()), 1)", dataset_name="sales", label="total"
        ),
        text("Total revenue is 2857565.0.", chunks=5),
    )
    outcome = nini("ask", "What is the total revenue?", "--data", str(SALES), "--session", "ask1", "--new")
    assert outcome.exit_code == 0, outcome.output
    assert outcome.stdout.strip() == "Total revenue is 2857565.0."
    assert "dataset sales: 144 rows" in outcome.stderr
    assert "→ run_code [total]" in outcome.stderr and "✓ run_code" in outcome.stderr
    assert "session ask1" in outcome.stderr and "finished after 2 model call(s)" in outcome.stderr
    tool_message = [m for m in llm_server.requests[1]["messages"] if m["role"] == "tool"][0]
    assert '"result":2857565.0' in tool_message["content"]
    # the same session goes on: the next question sees the first turn
    llm_server.reply(text("As I said, 2857565.0."))
    again = nini("ask", "Say it again", "--session", "ask1", "--new", "--json")
    assert again.exit_code == 0, again.output
    payload = json.loads(again.stdout)
    assert (payload["session_id"], payload["answer"], payload["completed_normally"]) == (
        "ask1",
        "As I said, 2857565.0.",
        True,
    )
    assert [m["role"] for m in llm_server.requests[-1]["messages"]][:2] == ["system", "user"]
    assert len(llm_server.requests[-1]["messages"]) == 6  # system, 1st turn (user, assistant, tool, assistant), user


def test_ask_without_a_model_exits_1_with_the_reason(nini: Any, nini_home: Path) -> None:
    (nini_home / "settings.json").write_text("{}")
    outcome = nini("ask", "anything?")
    assert outcome.exit_code == 1
    assert (
        outcome.stderr.startswith("error [NO_MODEL_AVAILABLE]")
        and "nini models add ollama --base-url" in outcome.stderr
    )
    assert "Traceback" not in outcome.output


def test_ask_with_a_missing_data_file_is_a_user_error(nini: Any, tmp_path: Path) -> None:
    outcome = nini("ask", "q", "--data", str(tmp_path / "nope.csv"))
    assert outcome.exit_code == 1 and "error [NOT_FOUND]" in outcome.stderr


@pytest.mark.usefixtures("chinese_locale")  # the spec's Chinese warning line
def test_ask_with_a_stage_matches_the_teams_experience_of_that_stage_only(nini: Any, llm_server: ScriptedLLM) -> None:
    statement = "use the median for revenue, the revenue column has a few very large orders"
    assert nini("remember", "--add", statement, "--level", "project", "--stage", "analysis", "--yes").exit_code == 0
    llm_server.reply(text("Setting up."), text("Looking at revenue."))
    assert nini("ask", "What is the typical revenue by region?", "--stage", "init").exit_code == 0
    assert nini("ask", "What is the typical revenue by region?", "--stage", "analysis").exit_code == 0
    init, analysis = (request["messages"][0]["content"] for request in llm_server.requests)
    assert "⚠️" not in init  # init reads the team library only; this experience is the project's
    assert (
        "⚠️ 高风险：Use the median for revenue, the revenue column has a few very large "
        "orders（参考 project/EXP-0001.md）" in analysis
    )
    assert nini("ask", "x", "--stage", "later").exit_code != 0
