"""Preference learning: each ingest rule and its bounds, cancel-out, explicit preferences never
changed, learning off, and selection (deterministic bytes, the token budget, (none), project over
global, the floor)."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from nini.errors import NiniError
from nini.history.store import HistoryStore
from nini.memory.preferences.inject import select_memory_for_injection
from nini.memory.preferences.learning import Feedback, ingest
from nini.memory.preferences.store import PreferenceStore
from nini.tokens import count_tokens


@pytest.fixture
def store(tmp_path: Path) -> Iterator[HistoryStore]:
    opened = HistoryStore(f"sqlite:///{tmp_path / 'nini.db'}")
    yield opened
    opened.close()


def confidence(store: HistoryStore, key: str, project_id: str | None = None) -> float | None:
    rows = [r for r in PreferenceStore(store).list(project_id) if r["key"] == key and r["project_id"] == project_id]
    return rows[0]["confidence"] if rows else None


def feedback(
    store: HistoryStore,
    action: str,
    *signals: str,
    run: str = "t1",
    injected: list[int] | None = None,
    learning: bool = True,
) -> dict:
    return ingest(
        store, Feedback(run, action, "answer", "p1", list(signals), None, injected or []), learning=learning
    ).to_dict()


def test_a_signal_creates_then_raises_its_rule_within_bounds(store: HistoryStore) -> None:
    steps = [feedback(store, "reject", "no_exclamation", run=f"t{n}")["changes"][0]["after"] for n in range(6)]
    assert steps == [0.3, 0.5, 0.7, 0.9, 1.0, 1.0]  # new at 0.3, +0.2 each, never above 1
    feedback(store, "partial", "concise", run="t9")
    feedback(store, "partial", "concise", run="t10")
    assert confidence(store, "verbosity") == 0.25  # partial: half of each step (0.15, then +0.1)
    [row] = [r for r in PreferenceStore(store).list(None) if r["key"] == "punctuation.no_exclamation"]
    assert (row["source"], row["value"], row["evidence_count"]) == ("implicit", True, 6)


def test_injected_preferences_rise_on_accept_fall_on_reject_and_stay_in_bounds(store: HistoryStore) -> None:
    first = feedback(store, "accept", "formal", run="t0")["changes"][0]["id"]
    assert feedback(store, "accept", run="t1", injected=[first])["changes"][0]["after"] == 0.4
    for n in range(6):
        feedback(store, "reject", run=f"r{n}", injected=[first])
    assert confidence(store, "tone") == 0.0
    assert (
        feedback(store, "partial", run="t2", injected=[first])["changes"] == []
    )  # partial: no change to what was given


def test_a_signal_accepted_and_rejected_on_the_same_run_cancels_out(store: HistoryStore) -> None:
    feedback(store, "accept", "concise", run="t0")
    before = confidence(store, "verbosity")
    feedback(store, "accept", "concise", run="t1")
    undone = feedback(store, "reject", "concise", run="t1")
    assert undone["canceled"] == ["concise"] and confidence(store, "verbosity") == before


def test_explicit_preferences_are_never_changed_by_learning(store: HistoryStore) -> None:
    explicit = PreferenceStore(store).put_explicit(None, "punctuation.no_exclamation", True)
    result = feedback(store, "accept", "no_exclamation", run="t0", injected=[explicit["id"]])
    result2 = feedback(store, "reject", run="t1", injected=[explicit["id"]])
    assert result["changes"] == result2["changes"] == [] and confidence(store, "punctuation.no_exclamation") == 1.0


def test_learning_off_records_the_feedback_and_changes_nothing(store: HistoryStore) -> None:
    result = feedback(store, "reject", "no_exclamation", learning=False)
    assert result["changes"] == [] and result["feedback_id"] > 0
    assert (
        PreferenceStore(store).list(None) == [] and PreferenceStore(store).feedback_for("t1")[0]["action"] == "reject"
    )


def test_bad_feedback_is_refused(store: HistoryStore) -> None:
    with pytest.raises(NiniError) as bad:
        ingest(store, Feedback("t1", "love", "answer"))
    assert bad.value.code == "INVALID_ARGUMENT"
    with pytest.raises(NiniError) as no_run:
        ingest(store, Feedback(" ", "accept", "answer"))
    assert no_run.value.code == "INVALID_ARGUMENT"
    with pytest.raises(NiniError) as value:
        PreferenceStore(store).put_explicit(None, "tone", float("nan"))
    assert value.value.code == "INVALID_ARGUMENT"
    for max_items, budget in ((4, 400), (13, 400), (8, 10), (8, 5000)):
        with pytest.raises(NiniError) as out_of_range:
            select_memory_for_injection(store, None, "answer", max_items, budget)
        assert out_of_range.value.code == "INVALID_ARGUMENT"


def fill(store: HistoryStore, rows: list[tuple[str | None, str, object, float]]) -> None:
    table = PreferenceStore(store)
    for project, key, value, level in rows:
        made = table.put_explicit(project, key, value)
        if level < 1:
            table.edit(made["id"], confidence=level)


PREFS = [
    (None, "tone", "formal", 0.9),
    (None, "verbosity", "concise", 0.9),
    (None, "punctuation.no_exclamation", True, 0.95),
    (None, "report.decimals", 2, 0.8),
    (None, "chart.style", "minimal", 0.7),
    (None, "language", "zh", 0.65),
    (None, "custom.units", "always show units", 0.9),
    (None, "custom.low", "below the floor", 0.5),
    ("p1", "tone", "casual", 0.61),
    (None, "punctuation.no_emoji", True, 0.9),
]


def test_the_same_preferences_give_the_same_bytes_whatever_their_order(tmp_path: Path) -> None:
    blocks = set()
    for seed in range(4):
        rows = PREFS[:]
        random.Random(seed).shuffle(rows)
        store = HistoryStore(f"sqlite:///{tmp_path / f'{seed}.db'}")
        try:
            fill(store, rows)
            selection = select_memory_for_injection(store, "p1", "report", 8, 400)
            blocks.add(selection.block.encode())
        finally:
            store.close()
    [block] = blocks
    lines = block.decode().splitlines()[3:]
    assert len(lines) == 8 and "below the floor" not in block.decode()
    assert lines[0] == "- 规则: 不使用感叹号（confidence=0.95, source=explicit）"
    assert "- 规则: 语气轻松（confidence=0.61, source=explicit）" in lines  # the project's tone, not the global one
    assert "语气正式" not in block.decode()
    assert lines.index("- 规则: 数字保留两位小数（confidence=0.80, source=explicit）") < lines.index(
        "- 规则: 用中文回答（confidence=0.65, source=explicit）"
    )


def test_the_block_keeps_to_its_token_budget_and_says_none_when_empty(store: HistoryStore) -> None:
    assert select_memory_for_injection(store, None).block.endswith("\n(none)")
    fill(
        store,
        [(None, f"custom.long{n}", "very long rule " * 60, 0.9) for n in range(3)] + [(None, "tone", "formal", 0.8)],
    )
    selection = select_memory_for_injection(store, None, "answer", 5, 120)
    assert count_tokens(selection.block) <= 120 and selection.lines == [
        "- 规则: 语气正式（confidence=0.80, source=explicit）"
    ]
    assert select_memory_for_injection(store, None, enabled=False).block.endswith("\n(none)")
    english = select_memory_for_injection(store, None, "answer", 5, 400, language="en")
    assert english.lines[-1] == "- Rule: a formal tone (confidence=0.80, source=explicit)"


def test_a_locked_or_read_only_database_is_a_db_error(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "nini.db"
    store = HistoryStore(f"sqlite:///{path}", busy_timeout_ms=100)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # another process writing, past the busy timeout
    try:
        with pytest.raises(NiniError) as locked:
            ingest(store, Feedback("t1", "reject", "answer", None, ["no_exclamation"]))
        assert locked.value.code == "DB_ERROR" and "locked" in locked.value.message
    finally:
        holder.execute("ROLLBACK")
        holder.close()
        store.close()
    # a read-only file (chmod does not bind root, so SQLite's own read-only mode stands in for it)
    read_only = HistoryStore(f"sqlite:///file:{path}?mode=ro&uri=true")
    try:
        with pytest.raises(NiniError) as refused:
            PreferenceStore(read_only).put_explicit(None, "tone", "formal")
        assert (
            refused.value.code == "DB_ERROR"
            and "readonly" in refused.value.message
            and str(tmp_path) not in refused.value.message
        )
        assert PreferenceStore(read_only).list(None) == []  # reading still works
    finally:
        read_only.close()


def test_the_sidebar_offers_exactly_the_signals_nini_knows() -> None:
    import re

    from nini.memory.preferences.rules import SIGNALS
    from tests.conftest import REPO_ROOT

    source = (REPO_ROOT / "jupyter_ext" / "frontend" / "src" / "prefs.ts").read_text(encoding="utf-8")
    offered = re.findall(
        r"\['(\w+)', (?:N_\()?'[^']+'\)?\]", source.split("export const SIGNALS", 1)[1].split("];", 1)[0]
    )
    assert offered == list(SIGNALS)
