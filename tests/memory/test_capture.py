"""Capture and stage 1: an explicit statement becomes a candidate, a model's extraction (over real
HTTP to the scripted server) only from what the user said, and every drop has its reason."""

from __future__ import annotations

import asyncio
import json
import logging

import pytest

from nini.agent.llm import ModelRouter
from nini.config import LLMSettings
from nini.memory.experience import ExperienceMemory
from nini.memory.experience.capture import explicit_candidate, signal_messages
from nini.memory.experience.evaluate import stage1, stage2
from tests.llm_server import ScriptedLLM, text
from tests.memory.conftest import candidate


@pytest.mark.parametrize(
    ("statement", "decision", "alternatives", "signal"),
    [
        (
            "use the median, the revenue column has outliers",
            "use the median",
            ["mean"],
            "the revenue column has outliers",
        ),
        (
            "Join on the new region table instead of region_old because region codes changed in 2024",
            "Join on the new region table",
            ["region_old"],
            "region codes changed in 2024",
        ),
        ("地区编码 2024 年变更，关联时用新编码表而不是旧表", "关联时用新编码表", ["旧表"], "地区编码 2024 年变更"),
        ("收入列有极端值，用中位数", "用中位数", ["均值"], "收入列有极端值"),
    ],
)
def test_an_explicit_statement_gives_its_decision_alternative_and_signal(
    statement: str, decision: str, alternatives: list[str], signal: str
) -> None:
    found = explicit_candidate(statement, datasets=["sales"])
    assert (found.decision, found.alternatives, found.signal, found.source) == (
        decision,
        alternatives,
        signal,
        "explicit",
    )


@pytest.mark.parametrize(
    ("values", "reason"),
    [
        ({"decision": ""}, "NO_DECISION"),
        ({"alternatives": ()}, "NO_ALTERNATIVES"),
        ({"signal": " "}, "NO_SIGNAL"),
        (
            {"decision": "normalize features", "alternatives": ("raw features",), "signal": "scales differ"},
            "COMMON_KNOWLEDGE",
        ),
    ],
)
def test_stage1_drops_with_a_logged_reason(values: dict, reason: str, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="nini.memory.experience"):
        verdict = stage1(candidate(**values, source="model"))  # only a model's candidates are judged
    assert verdict.candidate is None and verdict.reason == reason
    assert f"experience candidate dropped: {reason}" in caplog.text


def test_stage1_decides_type_level_and_lowers_general_knowledge() -> None:
    rule = stage1(
        candidate("always exclude test accounts", ("keep every account",), "ids starting with T_ are tests")
    ).candidate
    assert rule is not None and (rule.type, rule.level) == ("standard", "team")
    pointed = stage1(candidate(pointers=["data/sales.csv"])).candidate
    assert pointed is not None and (pointed.type, pointed.level) == ("knowledge", "project")
    general = stage1(
        candidate(
            "prefer a log scale",
            ("a linear scale",),
            "values span orders of magnitude",
            because="skew hides small values",
        )
    ).candidate
    assert general is not None and (general.scope, general.strength) == ("narrow", "hypothesis")
    assert general.notes == ["lowered: general knowledge, kept as a narrow hypothesis"]
    scores = stage2(pointed, "team")
    assert scores["fit"] < 1 and "project library may fit better" in scores["notes"][0]


def test_signals_are_the_users_words_and_a_confirmed_suggestion_only() -> None:
    messages = [
        {"role": "assistant", "content": "I suggest dropping rows with negative revenue."},
        {"role": "user", "content": "Thanks, what else?"},
        {"role": "assistant", "content": "Maybe winsorize the top 1% of revenue."},
        {"role": "user", "content": "yes, do that"},
        {"role": "user", "content": "and use the median, the revenue column has outliers"},
    ]
    picked = signal_messages(messages)
    assert (
        len(picked) == 2
        and "winsorize the top 1%" in picked[0]
        and picked[1] == "User: and use the median, the revenue column has outliers"
    )
    assert signal_messages(messages[:1] + [{"role": "user", "content": "no, use the median"}])[0].startswith(
        "(Context only, not to capture: the assistant had said: I suggest"
    )
    assert not any("negative revenue" in item for item in picked)  # never the assistant's unconfirmed suggestion


def test_a_model_extracts_candidates_over_http(memory: ExperienceMemory, llm_server: ScriptedLLM) -> None:
    extracted = {
        "candidates": [
            {
                "title": "Median for revenue",
                "decision": "use the median",
                "alternatives": ["mean"],
                "signal": "revenue has outliers",
                "trigger": "typical revenue",
                "pointers": ["sales"],
                "level": "project",
                "type": "knowledge",
                "stage": "analysis",
            },
            {"title": "Be careful", "decision": "be careful", "alternatives": [], "signal": "it matters"},
        ]
    }
    llm_server.reply(text("```json\n" + json.dumps(extracted) + "\n```"))
    router = ModelRouter(
        LLMSettings(
            providers=[{"name": "local", "kind": "openai", "base_url": llm_server.base_url, "model": "m"}],
            max_retries=0,
        )
    )
    messages = [
        {"role": "assistant", "content": "The mean revenue is 40."},
        {"role": "user", "content": "No, use the median: the revenue column has outliers"},
    ]
    try:
        result = asyncio.run(
            memory.capture_conversation(router, messages, session_id="s1", stage="analysis", datasets=["sales"])
        )
    finally:
        asyncio.run(router.aclose())
    sent = llm_server.requests[0]["messages"][-1]["content"]
    assert (
        "use the median: the revenue column has outliers" in sent
        and "Context only, not to capture: the assistant had said: The mean" in sent
    )
    assert [c.title for c in result.kept] == ["Median for revenue"] and result.kept[0].task_id == "s1"
    assert result.dropped == [{"title": "Be careful", "reason": "NO_ALTERNATIVES", "why": result.dropped[0]["why"]}]
    assert result.line() == "已暂存 1 条经验候选（用于 nini remember 阶段沉淀选择）"
    [pending] = memory.pending.load().candidates
    assert pending.source == "model" and pending.pointers == ["sales"]


def test_nothing_to_extract_makes_no_model_call(memory: ExperienceMemory, llm_server: ScriptedLLM) -> None:
    router = ModelRouter(
        LLMSettings(
            providers=[{"name": "local", "kind": "openai", "base_url": llm_server.base_url, "model": "m"}],
            max_retries=0,
        )
    )
    try:
        result = asyncio.run(
            memory.capture_conversation(
                router,
                [{"role": "user", "content": "What is the total?"}],
                session_id="s1",
                stage="analysis",
                datasets=[],
            )
        )
    finally:
        asyncio.run(router.aclose())
    assert result.kept == [] and llm_server.requests == [] and result.line() is None


def test_a_statement_already_pending_is_not_added_twice(memory: ExperienceMemory) -> None:
    first = memory.capture_statement("use the median, the revenue column has outliers")
    again = memory.capture_statement("Use the median,  the revenue column has outliers")
    assert len(first.kept) == 1 and again.kept == [] and len(memory.pending.load().candidates) == 1
