"""Long sessions (issue 38): a turn's context is read in O(budget), the turns that fall out are
folded into a summary the model still gets, and the turn reports how full its context was.

The sessions are recorded straight into the store (3,000 turns of a real conversation's shape: a
request, a run_code call, its long output, an answer), then a real turn runs through the runtime's
agent against the scripted model server, whose recorded requests are what the model was sent.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa

from nini.agent import context_cache
from nini.agent.context import build_context
from nini.agent.session_summary import numbers_grounded
from tests.agent.conftest import run_turn
from tests.conftest import record_turns as record_session_turns
from tests.conftest import runtime_harness, scripted_model_settings
from tests.llm_server import Reply, ScriptedLLM, text

BUDGET = 8000
OUTPUT = "revenue by month\n" + "\n".join(f"2024-{m:02d}  {m * 1013.25:,.2f}" for m in range(1, 13)) * 20


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory, llm: ScriptedLLM) -> Iterator[Any]:
    settings = scripted_model_settings(llm)
    settings["agent"] = {"context_max_tokens": BUDGET}
    yield from runtime_harness(tmp_path_factory, settings)


@pytest.fixture(autouse=True)
def script_used(llm: ScriptedLLM) -> Iterator[None]:
    llm.requests.clear()
    yield
    assert llm.pending() == 0, "the test left scripted replies unused"


def record_turns(harness: Any, turns: int, output: str = OUTPUT) -> Any:
    """A new session holding ``turns`` recorded turns (one transaction: the subject is reading them)."""
    session = harness.session()
    record_session_turns(harness.runtime.store, session.id, turns, output)
    return session


class MessageReads:
    """Counts the statements that read the ``messages`` table."""

    def __init__(self, engine: sa.Engine) -> None:
        self.engine, self.count = engine, 0

    def __enter__(self) -> MessageReads:
        sa.event.listen(self.engine, "before_cursor_execute", self._seen)
        return self

    def __exit__(self, *exc: object) -> None:
        sa.event.remove(self.engine, "before_cursor_execute", self._seen)

    def _seen(self, conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        reading = statement.lstrip().upper().startswith("SELECT")
        self.count += int(reading and re.search(r"\bFROM messages\b", statement) is not None)


def test_a_turn_reads_as_much_at_3000_turns_as_at_300(harness: Any) -> None:
    """After the first fold, a turn's context read costs the same whatever the session's length: the
    budget's worth of rows in a process that has not read the session yet, only the new ones after."""
    reads = []
    for turns in (300, 3000):
        session = record_turns(harness, turns)
        harness.loop.run_until_complete(build_context(session))  # the first turn folds what fell out
        context_cache.forget(session.id)  # as a process that has not read the session yet
        with MessageReads(harness.runtime.store.engine) as cold:
            context = harness.loop.run_until_complete(build_context(session))
        assert context.report.summarized_turns + context.report.turns == turns
        record_session_turns(harness.runtime.store, session.id, 1, OUTPUT)  # the next turn's 4 messages
        with MessageReads(harness.runtime.store.engine) as warm:
            again = harness.loop.run_until_complete(build_context(session))
        assert again.messages[:-4] == context.messages and len(again.messages) == len(context.messages) + 4
        reads.append((cold.count, context.report.rows_read, warm.count, again.report.rows_read))
    assert reads[0] == reads[1]
    assert reads[1][1] < 100  # the budget's worth of rows, not the session's 12,000
    assert reads[1][3] == 4  # then only what was written since


def test_a_decision_of_turn_5_reaches_the_model_at_turn_3000(harness: Any, llm: ScriptedLLM) -> None:
    session = record_turns(harness, 2999)
    llm.reply(text("Earlier turns asked for the mean revenue of one batch after another."), text("Using sales_clean."))
    result = run_turn(harness, session, "chart revenue by month from the cleaned sales data")
    assert result.completed_normally
    system = llm.requests[-1]["messages"][0]["content"]  # the chat call, after the summary's
    assert "sales_clean" in system and "drop region_code" in system  # what turn 5 did, 2,995 turns later
    sent = [m["content"] for m in llm.requests[-1]["messages"] if m["role"] == "user"]
    assert "drop the region_code column" not in " ".join(sent)  # turn 5 itself is not sent whole
    assert result.context["summarized_turns"] + result.context["turns"] == 3000


def test_the_context_report_is_the_prompt_sent(harness: Any, llm: ScriptedLLM) -> None:
    from nini.tokens import count_tokens

    session = record_turns(harness, 40)
    llm.reply(text("Earlier turns asked for mean revenues."), text("Fine."))
    result = run_turn(harness, session, "and the median?")
    sent = llm.requests[-1]["messages"]
    tokens = sum(count_tokens(json.dumps(m, ensure_ascii=False)) for m in sent)
    assert result.context["tokens"] == tokens
    assert result.context["budget"] == BUDGET and result.context["window"] == BUDGET  # no window declared
    assert result.context["percent"] == round(100 * tokens / BUDGET, 1)
    assert result.context["turns"] == sum(m["role"] == "user" for m in sent)
    assert 0 < result.context["summarized_turns"] < 40
    stored = harness.runtime.store.context_summary(session.id)
    assert stored["turns"] == result.context["summarized_turns"]


def test_the_summary_keeps_only_numbers_of_the_turns_it_covers(harness: Any, llm: ScriptedLLM) -> None:
    """The model's narrative is kept when its numbers are the turns'; one with an invented number is not."""
    store = harness.runtime.store
    cases = (("Batch 7 had mean revenue 7.5; sales_clean has 1,200 rows.", True), ("Revenue grew 4,242%.", False))
    for narrative, kept in cases:
        session = record_turns(harness, 60)
        llm.reply(text(narrative), text("Done."))
        run_turn(harness, session, "go on")
        summary = store.context_summary(session.id)
        assert (summary["summary"]["narrative"] == narrative) is kept
        covered = store.messages_oldest_first(session.id, after_id=0, before_id=summary["through_id"] + 1, limit=10**6)
        covered_text = " ".join(row["content"] or "" for row in covered) + " ".join(
            json.dumps(row["metadata"]) for row in covered
        )
        kept_text = " ".join(n["text"] for n in summary["summary"]["notes"]) + (summary["summary"]["narrative"] or "")
        assert numbers_grounded(kept_text, covered_text)


def test_the_rows_kept_between_turns_are_bounded_by_their_tokens(harness: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A long-running server keeps each session's context rows for its next turn, never more than its
    bound: the least recently used sessions go first, and read from the store again."""
    monkeypatch.setattr(context_cache, "CACHE_TOKENS", 2 * BUDGET)
    sessions = [record_turns(harness, 40) for _ in range(5)]
    for session in sessions:
        harness.loop.run_until_complete(build_context(session))
    held, weight = context_cache.held()
    assert 1 <= held < 5 and weight <= 2 * BUDGET
    reread = harness.loop.run_until_complete(build_context(sessions[0]))  # dropped: read again
    assert reread.report.rows_read > 0
    kept = harness.loop.run_until_complete(build_context(sessions[-1]))
    assert kept.report.rows_read == 0


def test_a_turn_leaves_the_rows_kept_for_the_next_one_as_stored(harness: Any, llm: ScriptedLLM) -> None:
    """The context's messages are the kept ones, not copies: a real turn (a tool call, its answer, the
    model's reply) appends to its list and changes none of them, so the next turn sends what is stored."""
    session = record_turns(harness, 3, "12.5")
    call = {"name": "list_datasets", "arguments": {}, "id": "l1"}
    llm.reply(Reply(tool_calls=[call]), text("No datasets yet."))
    assert run_turn(harness, session, "which datasets are there?").completed_normally
    kept = harness.loop.run_until_complete(build_context(session))
    assert kept.report.rows_read == 3  # the kept rows and what the turn wrote after its context: call, output, answer
    context_cache.forget(session.id)
    stored = harness.loop.run_until_complete(build_context(session))
    assert stored.report.rows_read > 0 and kept.messages == stored.messages
    assert [m["role"] for m in kept.messages[-4:]] == ["user", "assistant", "tool", "assistant"]


def test_a_message_committed_below_one_already_read_is_not_missed(harness: Any) -> None:
    """PostgreSQL can commit a lower id after a higher one was read: the next turn's count sees it
    and reads the window from the store again, the late message in its place."""
    from nini.history.schema import messages

    store = harness.runtime.store
    session = harness.session()
    base = 10_000_000 + len(store.list_messages(session.id))

    def write(offset: int, content: str) -> None:
        with store.writing() as conn:
            conn.execute(
                messages.insert(),
                [
                    {
                        "id": base + offset,
                        "session_id": session.id,
                        "role": "user",
                        "content": content,
                        "created_at": "x",
                    }
                ],
            )

    write(0, "first question")
    write(2, "third question")
    harness.loop.run_until_complete(build_context(session))
    write(1, "second question, committed last")
    context = harness.loop.run_until_complete(build_context(session))
    assert [m["content"] for m in context.messages] == [
        "first question",
        "second question, committed last",
        "third question",
    ]


def test_another_process_fold_is_followed(harness: Any, llm: ScriptedLLM) -> None:
    """A fold stored by another process (its summary row moved on) drops what it covers from the rows
    this process kept, and its summary goes ahead of the rest."""
    store = harness.runtime.store
    session = record_turns(harness, 6, "12.5")
    before = harness.loop.run_until_complete(build_context(session))
    assert before.summary is None and before.report.turns == 6
    third = store.turn_messages(session.id, "t00003")
    assert store.save_context_summary(
        session.id,
        {"notes": [{"turn": 1, "kind": "answer", "text": "the other process's note"}]},
        through_id=third[-1]["id"],
        turns=3,
        replaces=0,
    )
    after = harness.loop.run_until_complete(build_context(session))
    assert after.report.rows_read == 0 and (after.report.summarized_turns, after.report.turns) == (3, 3)
    assert after.messages == before.messages[12:]
    assert after.summary is not None and "the other process's note" in after.summary
