"""The enhancement trigger: the pure score (every row of the table, every boundary and gate), its
input normalisation, and the signals read from a real recorded session."""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nini.agent.enhance import (
    REASON_CODES,
    TriggerDecision,
    TriggerSignals,
    clarification_matters,
    evaluate_trigger,
    extract_signals,
)
from nini.history.store import HistoryStore

LABELS = ["TOOL_CALLS_GTE_3", "UNIQUE_TOOLS_GTE_2", "ERROR_RECOVERED", "HAS_WRITE_OR_EDIT", "USER_CLARIFICATIONS_GTE_2"]
THRESHOLDS = {"conservative": 3, "neutral": 2, "aggressive": 1}


def decide(signals: Any, profile: Any = "conservative", **gates: Any) -> TriggerDecision:
    arguments = {"auto_enhance_enabled": True, "completed_normally": True, "session_id": "s1", **gates}
    return evaluate_trigger(signals=signals, profile=profile, **arguments)


# --- the table ------------------------------------------------------------------------------------

# each signal just below and exactly at its boundary; the expected score is the spec's weights
BELOW_AT = [(2, 3), (1, 2), (False, True), (False, True), (1, 2)]
WEIGHTS = [1, 1, 2, 1, 1]


@pytest.mark.parametrize("profile", list(THRESHOLDS))
@pytest.mark.parametrize("hit", list(itertools.product([False, True], repeat=5)))
def test_every_combination_scores_by_the_table(hit: tuple[bool, ...], profile: str) -> None:
    values = [pair[int(h)] for pair, h in zip(BELOW_AT, hit, strict=True)]
    signals = TriggerSignals(*values)
    decision = decide(signals, profile)
    expected = sum(w for w, h in zip(WEIGHTS, hit, strict=True) if h)
    assert decision.total_score == expected
    assert decision.signal_hits == [label for label, h in zip(LABELS, hit, strict=True) if h]
    assert decision.threshold == THRESHOLDS[profile] and decision.profile == profile
    assert decision.should_trigger is (expected >= THRESHOLDS[profile])
    assert decision.reason_code == ("SCORE_REACHED" if expected >= THRESHOLDS[profile] else "LOW_SCORE")


def test_the_score_runs_from_0_to_6_and_equal_to_the_threshold_triggers() -> None:
    assert decide(TriggerSignals(0, 0, False, False, 0)).total_score == 0
    assert decide(TriggerSignals(100, 50, True, True, 9)).total_score == 6
    # conservative: 3 reached exactly by calls + tools + a write
    exact = decide(TriggerSignals(3, 2, False, True, 0))
    assert (exact.total_score, exact.threshold, exact.should_trigger, exact.reason_code) == (
        3,
        3,
        True,
        "SCORE_REACHED",
    )
    short = decide(TriggerSignals(3, 2, False, False, 1))
    assert (short.total_score, short.should_trigger, short.reason_code) == (2, False, "LOW_SCORE")
    # an error recovered alone is worth 2: neutral triggers on it, conservative does not
    assert decide(TriggerSignals(1, 1, True, False, 0), "neutral").should_trigger
    assert not decide(TriggerSignals(1, 1, True, False, 0), "conservative").should_trigger


def test_gates_come_first_in_their_order() -> None:
    strong = TriggerSignals(10, 5, True, True, 3)
    off = decide(strong, auto_enhance_enabled=False, completed_normally=False, session_id=None)
    assert (off.reason_code, off.should_trigger, off.total_score, off.signal_hits) == ("AUTO_ENHANCE_OFF", False, 0, [])
    unfinished = decide(strong, completed_normally=False, session_id=None)
    assert unfinished.reason_code == "TASK_NOT_COMPLETED_NORMALLY" and not unfinished.should_trigger
    for missing in (None, ""):
        no_session = decide(strong, session_id=missing)
        assert no_session.reason_code == "SESSION_NOT_FOUND" and not no_session.should_trigger
    assert decide(strong).reason_code == "SCORE_REACHED"
    # the profile is reported even when a gate decides
    assert decide(strong, "aggressive", auto_enhance_enabled=False).threshold == 1


# --- normalisation --------------------------------------------------------------------------------


@pytest.mark.parametrize("profile", [None, "", "fast", "CONSERVATIVE!", 3, ["neutral"], {"name": "neutral"}])
def test_an_unknown_or_malformed_profile_is_conservative_with_a_warning(
    profile: Any, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="nini.agent.enhance"):
        decision = decide(TriggerSignals(3, 2, False, False, 0), profile)
    assert (decision.profile, decision.threshold, decision.should_trigger) == ("conservative", 3, False)
    assert any("profile" in r.getMessage() for r in caplog.records)


def test_profile_names_are_read_whatever_their_case_and_spaces() -> None:
    assert decide(TriggerSignals(), " Aggressive ").profile == "aggressive"


@pytest.mark.parametrize(
    ("count", "hit"),
    [
        (-5, False),
        (-1, False),
        (2.99, False),
        (3.0, True),
        (3.7, True),
        ("3", True),
        (" 4 ", True),
        ("2.9", False),
        ("3.2", True),
        ("-3", False),
        (True, False),
        (float("nan"), False),
        (float("inf"), False),
    ],
)
def test_counts_are_made_non_negative_integers(count: Any, hit: bool) -> None:
    decision = decide({**TriggerSignals().__dict__, "tool_call_count": count})
    assert ("TOOL_CALLS_GTE_3" in decision.signal_hits) is hit


@pytest.mark.parametrize("junk", ["many", [3], {"n": 3}, object()])
def test_a_count_that_is_no_number_is_0_with_a_warning(junk: Any, caplog: pytest.LogCaptureFixture) -> None:
    signals = {
        "tool_call_count": 5,
        "unique_tool_count": junk,
        "has_error_recovered": False,
        "has_write_or_edit": True,
        "user_clarification_count": junk,
    }
    with caplog.at_level(logging.WARNING, logger="nini.agent.enhance"):
        decision = decide(signals)
    assert decision.signal_hits == ["TOOL_CALLS_GTE_3", "HAS_WRITE_OR_EDIT"] and decision.total_score == 2
    assert sum("not a number" in r.getMessage() for r in caplog.records) == 2


@pytest.mark.parametrize(
    ("flag", "hit"),
    [
        (True, True),
        (1, True),
        ("yes", True),
        ("true", True),
        (0, False),
        ("no", False),
        ("", False),
        ("maybe", False),
        ([1], False),
    ],
)
def test_flags_accept_plain_yes_and_no(flag: Any, hit: bool) -> None:
    decision = decide(
        {
            "tool_call_count": 0,
            "unique_tool_count": 0,
            "has_error_recovered": flag,
            "has_write_or_edit": False,
            "user_clarification_count": 0,
        }
    )
    assert ("ERROR_RECOVERED" in decision.signal_hits) is hit


def test_a_signal_whose_extraction_failed_is_not_hit_and_the_rest_still_count(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="nini.agent.enhance"):
        failed = decide(
            TriggerSignals(
                tool_call_count=None,
                unique_tool_count=4,
                has_error_recovered=None,
                has_write_or_edit=True,
                user_clarification_count=None,
            )
        )
        missing = decide({"unique_tool_count": 2, "has_error_recovered": True})  # three keys absent
    assert failed.signal_hits == ["UNIQUE_TOOLS_GTE_2", "HAS_WRITE_OR_EDIT"] and failed.reason_code == "LOW_SCORE"
    assert missing.signal_hits == ["UNIQUE_TOOLS_GTE_2", "ERROR_RECOVERED"] and missing.should_trigger
    warned = [r.getMessage() for r in caplog.records if "could not be extracted" in r.getMessage()]
    assert len(warned) == 6


def test_reason_codes_are_always_one_of_five() -> None:
    seen = set()
    for enabled, normal, session in itertools.product([True, False], [True, False], ["s", None]):
        for signals in (TriggerSignals(), TriggerSignals(5, 5, True, True, 5)):
            seen.add(
                decide(signals, auto_enhance_enabled=enabled, completed_normally=normal, session_id=session).reason_code
            )
    assert seen == set(REASON_CODES)


@pytest.mark.parametrize(
    ("score_without", "threshold", "users", "asked"),
    [(2, 3, 3, True), (1, 3, 3, False), (3, 3, 3, False), (0, 1, 2, True), (2, 3, 1, False), (5, 3, 9, False)],
)
def test_the_clarification_count_matters_only_when_its_point_could_flip_the_decision(
    score_without: int, threshold: int, users: int, asked: bool
) -> None:
    reached = score_without >= threshold
    decision = TriggerDecision(reached, score_without, threshold, [], "SCORE_REACHED" if reached else "LOW_SCORE")
    assert clarification_matters(decision, users) is asked


def test_no_clarification_is_asked_past_a_gate() -> None:
    assert not clarification_matters(TriggerDecision(False, 0, 1, [], "AUTO_ENHANCE_OFF"), 5)


# --- signals from a recorded session --------------------------------------------------------------


@pytest.fixture
def store(tmp_path: Path) -> Iterator[HistoryStore]:
    opened = HistoryStore(f"sqlite:///{tmp_path / 'nini.db'}")
    opened.create_session(session_id="s1")
    yield opened
    opened.close()


def record(store: HistoryStore, turn: str, tool: str, status: str, result: Any = None) -> None:
    call = store.start_tool_call("s1", tool, {"code": "secret()"}, turn_id=turn)
    store.finish_tool_call(
        call["id"], status=status, result=result, error_code="EXECUTION_ERROR" if status == "failed" else None
    )


def test_an_error_then_a_success_is_recovered(store: HistoryStore) -> None:
    record(store, "t1", "run_code", "failed")
    record(store, "t1", "run_code", "succeeded", {"artifacts": [], "datasets_saved": []})
    signals = extract_signals(store, "s1", "t1")
    assert signals == TriggerSignals(2, 1, True, False, 0)


def test_an_error_without_a_later_success_is_not_recovered(store: HistoryStore) -> None:
    record(store, "t1", "list_datasets", "succeeded", [])
    record(store, "t1", "run_code", "failed")
    record(store, "t1", "run_r_code", "interrupted")
    signals = extract_signals(store, "s1", "t1")
    assert (signals.tool_call_count, signals.unique_tool_count, signals.has_error_recovered) == (3, 3, False)


def test_only_this_turns_calls_count(store: HistoryStore) -> None:
    record(store, "t0", "run_code", "failed")  # an earlier turn's error, and its writes
    record(store, "t0", "run_code", "succeeded", {"artifacts": ["a.png"], "datasets_saved": ["x"]})
    record(store, "t0", "save_skill", "succeeded", {"name": "x"})
    record(store, "t1", "describe_dataset", "succeeded", {})
    signals = extract_signals(store, "s1", "t1")
    assert signals == TriggerSignals(1, 1, False, False, 0)
    assert extract_signals(store, "s1", "t-none") == TriggerSignals(0, 0, False, False, 0)


@pytest.mark.parametrize(
    ("tool", "status", "result", "wrote"),
    [
        ("run_code", "succeeded", {"artifacts": ["charts/a.png"], "datasets_saved": []}, True),
        ("run_r_code", "succeeded", {"artifacts": [], "datasets_saved": ["model"]}, True),
        ("run_code", "succeeded", {"artifacts": [], "datasets_saved": []}, False),
        ("run_code", "failed", {"artifacts": ["charts/a.png"], "datasets_saved": ["x"]}, False),
        ("load_dataset", "succeeded", {"name": "sales"}, True),
        ("generate_report", "succeeded", {"path": "reports/r.md"}, True),
        ("save_skill", "succeeded", {"name": "k"}, True),
        ("save_skill", "failed", None, False),
        ("describe_dataset", "succeeded", {"rows": 3}, False),
        ("read_file", "succeeded", "text", False),
    ],
)
def test_a_write_is_something_durable_that_succeeded(
    store: HistoryStore, tool: str, status: str, result: Any, wrote: bool
) -> None:
    record(store, "t1", tool, status, result)
    assert extract_signals(store, "s1", "t1").has_write_or_edit is wrote
