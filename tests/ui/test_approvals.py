"""Approvals in the step card, in a real `jupyter lab` in Chromium (issue 33, item 1): a step that is to
run in the notebook's own kernel shows why it asks and its code, and waits; Allow once (or Enter),
Allow for this session, Reject (or Escape); the card follows an answer given over REST; a hidden chat
says so with a JupyterLab notification. Whether a step ran is asked of the notebook's kernel itself."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.llm_server import ScriptedLLM, text, tool_call
from tests.ui.conftest import (
    Lab,
    ask,
    current_session,
    open_notebook,
    open_sidebar,
    screenshot,
    show_files,
    wait_idle,
    watched_page,
    widen_sidebar,
)
from tests.ui.user_kernel import card, notebook_names

pytestmark = pytest.mark.slow

WHY = "runs in your kernel, not sandboxed"


@pytest.fixture(scope="module")
def page(browser: Any, lab: Lab) -> Iterator[Any]:
    """The lab with a notebook open and the chat set to run code in the notebook's kernel."""
    with watched_page(browser, lab) as opened:
        open_notebook(opened, lab, "mine.ipynb", "mine = 1")
        open_sidebar(opened)
        widen_sidebar(opened)
        opened.click(".nini-new-chat")
        opened.click('.nini-run-where-segment[data-value="kernel"]')
        opened.wait_for_selector('.nini-where[data-target="notebook"]')
        yield opened


def focused_card(page: Any) -> None:
    """Until the waiting card has the keyboard's focus (it takes it when it appears)."""
    page.wait_for_function("() => document.activeElement?.matches('.nini-approval[data-state=\"waiting\"]')")


def last_steps(page: Any, count: int) -> list[str]:
    statuses = page.eval_on_selector_all(".nini-log > .nini-step", "nodes => nodes.map(n => n.dataset.status)")
    return statuses[-count:]


def test_the_card_says_why_it_asks_and_enter_allows_once_escape_rejects(page: Any, lab: Lab, llm: ScriptedLLM) -> None:
    llm.reply(tool_call("run_code", code="by_enter = 1"), tool_call("run_code", code="by_escape = 2"), text("Done."))
    ask(page, "Two steps in my kernel")
    waiting = card(page)
    assert WHY in waiting.locator(".nini-approval-why").inner_text()
    assert "by_enter = 1" in waiting.locator(".nini-approval-code").inner_text()
    assert waiting.locator(".nini-approval-actions button").all_inner_texts() == [
        "Allow once",
        "Allow for this session",
        "Reject",
    ]
    primary = waiting.locator(".nini-approval-once")
    assert "jp-mod-styled" in primary.get_attribute("class") and "jp-mod-accept" in primary.get_attribute("class")
    assert page.locator(".nini-status-text").inner_text().startswith("Waiting for your OK")
    focused_card(page)
    assert "by_enter" not in notebook_names(lab)  # nothing ran before the answer
    screenshot(page, "33a-approval-waiting")
    page.keyboard.press("Enter")
    card(page, "once")
    card(page)  # "once" is once: the next step asks again, and takes the focus
    focused_card(page)
    page.keyboard.press("Escape")
    card(page, "reject")
    wait_idle(page)
    assert last_steps(page, 2) == ["succeeded", "failed"]
    names = notebook_names(lab)
    assert "by_enter" in names and "by_escape" not in names
    screenshot(page, "33a-approval-once-and-reject")


def test_allow_for_the_session_runs_the_next_step_without_asking(page: Any, lab: Lab, llm: ScriptedLLM) -> None:
    llm.reply(tool_call("run_code", code="third = 3"), tool_call("run_code", code="fourth = 4"), text("Done."))
    before = page.locator(".nini-approval").count()
    ask(page, "Two more")
    card(page).locator(".nini-approval-session").click()
    wait_idle(page)
    assert page.locator(".nini-approval").count() == before + 1  # the second step did not ask
    assert page.locator(".nini-approval").last.get_attribute("data-state") == "session"
    assert {"third", "fourth"} <= notebook_names(lab)
    badge = page.locator(".nini-allowed-badge")
    badge.wait_for(state="visible")
    screenshot(page, "33a-approval-session")
    badge.click()  # withdraw: the next step asks again
    badge.wait_for(state="hidden")


def test_an_answer_given_over_rest_updates_the_card(page: Any, lab: Lab, llm: ScriptedLLM) -> None:
    llm.reply(tool_call("run_code", code="over_rest = 5"), text("Done."))
    ask(page, "One for another client to allow")
    card(page)
    shown = page.locator(".nini-approval").last  # this card, whatever its state
    session = current_session(page)
    (pending,) = lab.nini("GET", f"sessions/{session}/approvals")["waiting"]
    lab.nini("POST", f"sessions/{session}/approvals/{pending['approval_id']}", {"decision": "once"})
    page.wait_for_function("card => card.dataset.state === 'once'", arg=shown.element_handle())
    assert shown.locator(".nini-approval-actions").is_hidden()
    assert shown.locator(".nini-approval-state").inner_text() == "Allowed once"
    wait_idle(page)
    assert "over_rest" in notebook_names(lab)


def test_a_hidden_chat_notifies_until_answered_and_show_brings_the_card_up(
    page: Any, lab: Lab, llm: ScriptedLLM
) -> None:
    show_files(page)  # the file browser takes the left area: nini's chat is hidden
    assert not page.is_visible(".nini-chat")
    llm.reply(
        tool_call("run_code", code="answered_elsewhere = 6"), tool_call("run_code", code="shown = 7"), text("Done.")
    )
    session = current_session(page)
    (kernel,) = lab.kernels()
    lab.nini("POST", f"sessions/{session}/ask", {"message": "Asked by another client", "kernel_id": kernel["id"]})
    toasts = page.locator(".jp-toastContainer .Toastify__toast", has_text=WHY)
    toasts.first.wait_for()
    first = toasts.first.element_handle()
    screenshot(page, "33a-approval-notification")
    (pending,) = lab.nini("GET", f"sessions/{session}/approvals")["waiting"]
    lab.nini("POST", f"sessions/{session}/approvals/{pending['approval_id']}", {"decision": "reject"})
    page.wait_for_function("toast => !toast.isConnected", arg=first)  # answered elsewhere: its notification goes
    toasts.first.wait_for()  # the next step asks
    toasts.first.get_by_role("button", name="Show").click()
    page.wait_for_selector(".nini-chat", state="visible")
    focused_card(page)
    page.keyboard.press("Escape")
    wait_idle(page)
    assert page.eval_on_selector_all(".nini-approval", "cards => cards.slice(-2).map(c => c.dataset.state)") == [
        "reject",
        "reject",
    ]
    names = notebook_names(lab)
    assert "answered_elsewhere" not in names and "shown" not in names
