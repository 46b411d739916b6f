"""End to end against the scripted model (real HTTP): the user corrects the agent, the run keeps a
candidate, ``nini remember`` deposits it on the user's yes, and the next analysis of the same
dataset carries the warning in its recorded system prompt while one of unrelated data gets nothing."""

from __future__ import annotations

import json
from typing import Any

import pytest
from typer.testing import CliRunner

from nini.cli import app
from tests.agent.conftest import harness, llm  # noqa: F401 - a Runtime and its scripted model, per module
from tests.conftest import Harness
from tests.llm_server import ScriptedLLM, text

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("chinese_locale")]  # the spec's Chinese words
SALES = "region,revenue\nnorth,10\nnorth,12\nsouth,11\nsouth,9000\n"
WEATHER = "date,temp\n2024-01-01,3.5\n2024-01-02,4.1\n"
EXTRACTED = {
    "candidates": [
        {
            "title": "Median, not mean, for sales revenue",
            "stage": "analysis",
            "trigger": "typical or average revenue by region",
            "decision": "use the median of revenue",
            "alternatives": ["the mean of revenue"],
            "signal": "the revenue column has outliers (one order of 9000)",
            "surfaceSignal": "a mean far above most orders",
            "hiddenRisk": "one large order inflates the mean",
            "pointers": ["sales"],
            "level": "project",
            "type": "knowledge",
            "quote": "No, use the median, the revenue column has outliers",
        }
    ]
}


def session_with(owner: Harness, name: str, csv: str) -> Any:
    session = owner.session()
    (session.workspace.root / "uploads").mkdir(exist_ok=True)
    (session.workspace.root / "uploads" / f"{name}.csv").write_text(csv)
    assert owner.call(session, "load_dataset", path=f"uploads/{name}.csv").success
    return session


def test_a_correction_becomes_a_warning_for_the_next_analysis_of_that_data(harness: Harness, llm: ScriptedLLM) -> None:  # noqa: F811
    runtime = harness.runtime
    first = session_with(harness, "sales", SALES)
    llm.reply(text("The mean revenue is 2258 per order."))
    harness.loop.run_until_complete(runtime.agent.run(first, "What is the typical revenue by region in sales?"))
    llm.reply(text("The median revenue is 11."), text(json.dumps(EXTRACTED)))
    result = harness.loop.run_until_complete(
        runtime.agent.run(first, "No, use the median, the revenue column has outliers")
    )
    assert result.notes[-1] == "已暂存 1 条经验候选（用于 nini remember 阶段沉淀选择）"
    extraction = llm.requests[-1]["messages"][-1]["content"]
    assert "use the median, the revenue column has outliers" in extraction and "Datasets in play: sales" in extraction
    assert "2258" in extraction  # the answer the correction reacts to is context; its own claims are not candidates

    env = {"NINI_HOME": str(runtime.settings.home)}
    cli = CliRunner().invoke(app, ["--project-dir", str(runtime.project_dir), "remember"], input="1\ny\n", env=env)
    assert cli.exit_code == 0, cli.output
    assert "已沉淀 1 条经验：EXP-0001（project）" in cli.output
    index = (runtime.project_dir / ".nini" / "experience" / "project" / "INDEX.md").read_text()
    assert "| Median, not mean, for sales revenue |" in index and "| #analysis #sales |" in index

    second = session_with(harness, "sales", SALES)
    llm.reply(text("Median by region: north 11, south 4505."))
    harness.loop.run_until_complete(runtime.agent.run(second, "Average revenue per region for the sales data"))
    warned = llm.requests[-1]["messages"][0]["content"]
    assert "⚠️ 高风险：Median, not mean, for sales revenue（参考 project/EXP-0001.md）" in warned
    [matched] = runtime.store.list_events(second.id, 0, ["experience_matched"])
    assert matched["data"]["matches"][0]["file"] == "project/EXP-0001.md" and matched["turn_id"]

    third = session_with(harness, "weather", WEATHER)
    llm.reply(text("It warms by 0.6 degrees."))
    harness.loop.run_until_complete(runtime.agent.run(third, "How does the temperature change over the days?"))
    assert "⚠️" not in llm.requests[-1]["messages"][0]["content"]
    assert runtime.store.list_events(third.id, 0, ["experience_matched"]) == []
    assert llm.pending() == 0

    read = harness.call(second, "read_experience", file="project/EXP-0001.md")
    assert read.success and "- Alternatives rejected: the mean of revenue" in read.result["text"]
    outside = harness.call(second, "read_experience", file="project/../../secret.md")
    assert not outside.success and outside.error["code"] == "NOT_FOUND"
