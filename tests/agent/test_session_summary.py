"""The session summary's ledger (issue 38): what a folded turn leaves, which notes outlive the
bound, and the guard on the model's numbers. Pure functions: no store, no model."""

from __future__ import annotations

import json

from nini.agent.session_summary import Summary, numbers_grounded, turn_notes
from nini.tokens import count_tokens


def turn(request: str, label: str, outcome: dict, answer: str, save_as: str | None = None) -> list[dict]:
    arguments = {"code": "x = 1", "label": label, **({"save_as": save_as} if save_as else {})}
    call = {"id": "c1", "name": "run_code", "arguments": json.dumps(arguments)}
    return [
        {"role": "user", "content": request, "metadata": None},
        {"role": "assistant", "content": None, "metadata": {"tool_calls": [call]}},
        {"role": "tool", "content": json.dumps(outcome), "tool_call_id": "c1", "metadata": {"name": "run_code"}},
        {"role": "assistant", "content": answer + " More detail follows here.", "metadata": {"tool_calls": []}},
    ]


def test_a_turn_leaves_its_request_datasets_failures_and_answer() -> None:
    made = turn("drop region_code", "drop column", {"success": True}, "Done: 1,200 rows.", save_as="sales_clean")
    notes = turn_notes(made, 5, "en")
    assert [(n["turn"], n["kind"]) for n in notes] == [(5, "request"), (5, "dataset"), (5, "answer")]
    assert "sales_clean" in notes[1]["text"] and "drop column" in notes[1]["text"]
    assert notes[2]["text"] == "answered: Done: 1,200 rows."
    failed = turn(
        "plot it", "plot", {"success": False, "error": {"code": "EXECUTION_ERROR", "message": "KeyError"}}, "x."
    )
    assert [n["kind"] for n in turn_notes(failed, 6, "zh")][1] == "failed"
    assert "步骤失败" in turn_notes(failed, 6, "zh")[1]["text"] and "KeyError" in turn_notes(failed, 6, "zh")[1]["text"]


def test_an_unparseable_or_huge_output_leaves_no_step_note() -> None:
    rows = turn("q", "step", {"success": False}, "a.")
    rows[2]["content"] = "not json " * 10
    assert [n["kind"] for n in turn_notes(rows, 1, "en")] == ["request", "answer"]
    rows[2]["content"] = json.dumps({"success": False, "pad": "x" * 300_000})
    assert [n["kind"] for n in turn_notes(rows, 1, "en")] == ["request", "answer"]


def test_the_bound_drops_answers_then_requests_of_the_oldest_turns_and_keeps_datasets() -> None:
    notes = []
    for n in range(1, 401):
        save_as = "sales_clean" if n == 5 else None
        notes += turn_notes(
            turn(f"question {n} " * 5, f"step {n}", {"success": True}, f"Answer {n}.", save_as), n, "en"
        )
    bounded = Summary(notes).bounded(600, 400, "en")
    text = bounded.text(400, "en")
    assert count_tokens(text) <= 600
    kinds = {n["kind"] for n in bounded.notes}
    assert "answer" not in kinds and "dataset" in kinds  # every answer went before the one dataset
    kept_requests = [n["turn"] for n in bounded.notes if n["kind"] == "request"]
    assert kept_requests and kept_requests == list(range(401 - len(kept_requests), 401))  # the newest ones
    assert bounded.left_out == len(notes) - len(bounded.notes) and f"({bounded.left_out} older notes" in text


def test_numbers_must_come_from_what_was_summarized() -> None:
    source = "batch 7 had a mean of 7.5; sales_clean has 1,200 rows"
    assert numbers_grounded("Batch 7: mean 7.5, 1200 rows.", source)
    assert not numbers_grounded("Batch 7: mean 7.6.", source)
    assert numbers_grounded("No numbers here.", "")
