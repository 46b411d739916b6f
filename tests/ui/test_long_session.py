"""A long session in the sidebar (issue 38), in a real `jupyter lab` driven by Debian's Chromium
against the scripted model.

The lab's context budget is the smallest allowed (``agent.context_max_tokens`` 1000) and each
answer is long, so from the third question on each turn folds its oldest turn into the session's
summary (the model writes its narrative: the ``summarize`` purpose goes to a model of its own, so
its replies are scripted apart from the answers). The run footer shows how full the context was
with the numbers of the turn's ``done`` event; a collapsed "Earlier in this session" note, the one
and only, sits atop the conversation and shows the latest summary as text, live and when the
session is opened again. The first question carries markup, which the ledger quotes: it stays text.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

import pytest

from tests.conftest import scripted_model_settings
from tests.llm_server import ScriptedLLM, text
from tests.ui.conftest import (
    Lab,
    ask,
    current_session,
    open_session,
    open_sidebar,
    screenshot,
    wait_idle,
    watched_page,
    widen_sidebar,
)
from tests.ui.test_accessibility import serious_violations

pytestmark = pytest.mark.slow

BUDGET = 1000
SUMMARIZER = "summarizer"  # the model the summarize purpose is routed to
PAYLOAD = '<img src=x onerror="window.__niniEarlierXss = 1">'
QUESTIONS = [
    f"How did the widgets sell? {PAYLOAD}",
    "And the gadgets?",
    "Which region led?",
    "Anything odd in the returns?",
]
NARRATIVE = "The user is reviewing widget and gadget sales by region."  # no number: kept as written
EARLIER = ".nini-log > .nini-earlier"


def answer(n: int) -> str:
    """A long answer (about 580 tokens): two of them and a question overflow the budget."""
    return f"Sales review, part {n}. " + " ".join(
        f"Region {chr(65 + i % 26)} sold steadily across the quarter." for i in range(70)
    )


def format_tokens(value: int) -> str:
    """footer.ts formatTokens: JavaScript's toFixed rounds a tie up, Python's format to even."""
    if value < 1000:
        return str(value)
    thousands = Decimal(value) / 1000
    places = Decimal("0.1") if value < 10_000 else Decimal("1")
    return f"{thousands.quantize(places, rounding=ROUND_HALF_UP)}k"


class SeenEvents:
    """The session events the page's sockets received (what the sidebar drew from)."""

    def __init__(self, page: Any) -> None:
        self.events: list[dict[str, Any]] = []
        page.on("websocket", self._socket)

    def _socket(self, socket: Any) -> None:
        if "/nini/api/sessions/" in socket.url and "/events" in socket.url:
            socket.on("framereceived", self._frame)

    def _frame(self, payload: str | bytes) -> None:
        message = json.loads(payload)
        self.events.extend(message if isinstance(message, list) else [message])

    def of(self, kind: str) -> list[dict[str, Any]]:
        return sorted({e["seq"]: e for e in self.events if e.get("type") == kind}.values(), key=lambda e: e["seq"])


@pytest.fixture(scope="module")
def long_lab(tmp_path_factory: pytest.TempPathFactory, llm: ScriptedLLM) -> Iterator[Lab]:
    """A lab of its own: the context budget is a setting the server reads at its start."""
    models = scripted_model_settings(llm)["llm"]
    settings = {
        "agent": {"context_max_tokens": BUDGET},
        "llm": {**models, "purposes": {"summarize": {"provider": "local", "model": SUMMARIZER}}},
    }
    started = Lab(tmp_path_factory.mktemp("long-session-lab"), llm, settings=settings)
    yield started
    started.stop()


@pytest.fixture(scope="module")
def seen(browser: Any, long_lab: Lab) -> Iterator[tuple[Any, SeenEvents]]:
    """The module's page and the events its sockets received."""
    with watched_page(browser, long_lab) as opened:
        yield opened, SeenEvents(opened)


def asked(page: Any, question: str, turns: int) -> None:
    """Ask ``question`` in the chat and wait until the ``turns``-th turn has ended."""
    ask(page, question)
    page.wait_for_function("n => document.querySelectorAll('.nini-log > .nini-end').length >= n", arg=turns)
    wait_idle(page)


def note_state(page: Any) -> dict[str, Any]:
    """The "Earlier in this session" notes of the chat: how many, whether the first is the log's first
    child and open, its summary line and its body's text."""
    return page.evaluate(
        """sel => {
        const notes = document.querySelectorAll(sel);
        const note = notes[0];
        return {
            count: notes.length,
            first: note !== undefined && note.parentElement.firstElementChild === note,
            open: note?.open ?? null,
            summary: note?.querySelector('summary')?.textContent ?? null,
            body: note?.querySelector('.nini-earlier-text')?.textContent ?? null,
            elements: note ? note.querySelectorAll('.nini-earlier-text *').length : null,
        };
    }""",
        EARLIER,
    )


def body_of(event: dict[str, Any]) -> str:
    """A ``context_summary`` event's text less its title line, as the note shows it."""
    return event["data"]["text"].split("\n", 1)[1]


def test_a_long_session_folds_live_and_the_note_atop_says_so(seen: tuple[Any, SeenEvents], llm: ScriptedLLM) -> None:
    page, events = seen
    open_sidebar(page)
    widen_sidebar(page)
    llm.reply(*(text(answer(n)) for n in range(1, len(QUESTIONS) + 1)))
    llm.reply(text(NARRATIVE), text(NARRATIVE), model=SUMMARIZER)
    asked(page, QUESTIONS[0], 1)
    asked(page, QUESTIONS[1], 2)
    assert events.of("context_summary") == [] and page.locator(EARLIER).count() == 0  # all of it still fits
    asked(page, QUESTIONS[2], 3)
    folded = events.of("context_summary")
    assert [e["data"]["summarized_turns"] for e in folded] == [1]
    state = note_state(page)
    assert state == {
        "count": 1,
        "first": True,
        "open": False,
        "summary": "Earlier in this session (1 turn summarized)",
        "body": body_of(folded[0]),
        "elements": 0,
    }
    asked(page, QUESTIONS[3], 4)
    folded = events.of("context_summary")
    assert [e["data"]["summarized_turns"] for e in folded] == [1, 2]
    state = note_state(page)  # the later summary replaced the note's content: still one note
    assert (state["count"], state["first"], state["open"]) == (1, True, False)
    assert state["summary"] == "Earlier in this session (2 turns summarized)"
    assert state["body"] == body_of(folded[-1]) and NARRATIVE in state["body"]
    assert [r.get("model") for r in llm.requests].count(SUMMARIZER) == 2 and llm.pending() == 0


def test_the_footer_shows_the_context_of_the_done_event(seen: tuple[Any, SeenEvents]) -> None:
    page, events = seen
    done = events.of("done")
    assert len(done) == 4
    footers = page.locator(".nini-log > .nini-end .nini-run-footer")
    for index, event in enumerate(done):
        context = event["data"]["context"]
        part = footers.nth(index).locator('[data-kind="context"]')
        assert part.inner_text() == f"context {format_tokens(context['tokens'])} ({context['percent']:g}%)"
        assert part.get_attribute("title") == (
            f"{context['tokens']:,} tokens of a context window of {context['window']:,}; "
            f"{context['turns']:,} turns sent whole, {context['summarized_turns']:,} earlier turns summarized"
        )
    last = done[-1]["data"]["context"]
    assert (last["window"], last["budget"], last["summarized_turns"]) == (BUDGET, BUDGET, 2)  # no window declared
    kinds = footers.last.locator(".nini-run-footer-part").evaluate_all("ps => ps.map(p => p.dataset.kind)")
    assert kinds == ["duration", "steps", "tokens", "context"]  # after the tokens; no price, no cost


def test_opened_the_note_shows_the_summary_as_text(seen: tuple[Any, SeenEvents]) -> None:
    page, events = seen
    body = page.locator(f"{EARLIER} .nini-earlier-text")
    assert body.is_hidden()
    page.click(f"{EARLIER} > summary")
    body.wait_for(state="visible")
    assert page.evaluate("sel => document.querySelector(sel).open", EARLIER) is True
    shown = body.inner_text()
    assert shown == body_of(events.of("context_summary")[-1])
    assert PAYLOAD in shown  # the first question as the ledger quotes it: its markup is text
    assert page.locator(f"{EARLIER} img").count() == 0
    assert page.evaluate("() => window.__niniEarlierXss") is None
    assert (
        page.evaluate(
            "sel => getComputedStyle(document.querySelector(sel)).whiteSpace", f"{EARLIER} .nini-earlier-text"
        )
        == "pre-wrap"
    )
    screenshot(page, "38-earlier-in-this-session")
    assert serious_violations(page) == []


def test_reopened_the_session_shows_the_latest_summary_once(
    seen: tuple[Any, SeenEvents], browser: Any, long_lab: Lab
) -> None:
    page, events = seen
    session_id = current_session(page)
    latest = events.of("context_summary")[-1]
    with watched_page(browser, long_lab) as reloaded:
        open_sidebar(reloaded)
        open_session(reloaded, session_id)
        reloaded.wait_for_function("n => document.querySelectorAll('.nini-log > .nini-end').length >= n", arg=4)
        state = note_state(reloaded)  # replayed from 0: both summaries came, the later one is shown
        assert state == {
            "count": 1,
            "first": True,
            "open": False,
            "summary": "Earlier in this session (2 turns summarized)",
            "body": body_of(latest),
            "elements": 0,
        }
        assert reloaded.locator('.nini-log > .nini-end .nini-run-footer [data-kind="context"]').count() == 4
        assert reloaded.evaluate("() => window.__niniEarlierXss") is None
