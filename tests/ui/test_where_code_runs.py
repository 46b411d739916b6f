"""Where the agent's code runs, chosen in the sidebar of a real `jupyter lab` in Chromium: the
notebook's kernel is one choice away, and there every step shows its code and waits for a person
(Allow once, Allow for this session, Reject), under the default settings (issue 31)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.llm_server import ScriptedLLM, text, tool_call
from tests.ui.conftest import Lab, ask, open_notebook, open_sidebar, screenshot, wait_idle, watched_page, widen_sidebar
from tests.ui.user_kernel import card, notebook_names

pytestmark = pytest.mark.slow


def step_states(page: Any) -> list[tuple[str, str]]:
    """Each step's status and where it ran, as its badge says."""
    found = page.eval_on_selector_all(
        ".nini-log > .nini-step",
        "nodes => nodes.map(n => [n.dataset.status, n.querySelector('.nini-step-where')?.textContent ?? ''])",
    )
    return [tuple(pair) for pair in found]


def test_in_the_notebooks_kernel_each_step_shows_its_code_and_waits_for_a_person(
    page: Any, lab: Lab, llm: ScriptedLLM
) -> None:
    open_notebook(page, lab, "mine.ipynb", "import pandas as pd\nsales = pd.DataFrame({'amount': [3.0, 4.5]})")
    open_sidebar(page)
    widen_sidebar(page)
    page.click(".nini-new-chat")
    page.click('.nini-run-where-segment[data-value="kernel"]')
    assert "mine.ipynb's kernel, not sandboxed: each step shows its code and waits for your OK" in page.inner_text(
        ".nini-where"
    )
    llm.reply(
        tool_call("run_code", code="allowed_once = float(sales.amount.sum())"),
        tool_call("run_code", code="rejected_step = 1"),
        text("Done."),
    )
    ask(page, "Add up my sales")
    waiting = card(page)
    assert "allowed_once = float(sales.amount.sum())" in waiting.locator(".nini-approval-code").inner_text()
    assert waiting.locator(".nini-approval-code pre").count() == 1  # the whole code, rendered as highlighted code
    buttons = waiting.locator(".nini-approval-actions button").all_inner_texts()
    assert buttons == ["Allow once", "Allow for this session", "Reject"]
    assert "allowed_once" not in notebook_names(lab)  # nothing ran before the click
    screenshot(page, "20-approval-waiting")
    waiting.locator(".nini-approval-once").click()
    card(page, "once")
    second = card(page)  # "once" is once: the next step asks again
    assert "rejected_step = 1" in second.inner_text()
    second.locator(".nini-approval-reject").click()
    card(page, "reject")
    wait_idle(page)
    assert step_states(page) == [("succeeded", "in your kernel"), ("failed", "in your kernel")]
    names = notebook_names(lab)
    assert "allowed_once" in names and "rejected_step" not in names
    assert page.locator(".nini-allowed-badge").is_hidden()
    screenshot(page, "21-approval-once-and-reject")


def test_allowed_for_the_session_runs_without_asking_until_the_badge_is_clicked(
    page: Any, lab: Lab, llm: ScriptedLLM
) -> None:
    open_sidebar(page)  # the chat the test before left open (or the reason it could not, if it failed)
    llm.reply(tool_call("run_code", code="third = 3"), tool_call("run_code", code="fourth = 4"), text("Done."))
    ask(page, "Two steps")
    card(page).locator(".nini-approval-session").click()
    wait_idle(page)
    assert page.locator('.nini-approval[data-state="waiting"]').count() == 0  # the second step did not ask
    badge = page.locator(".nini-allowed-badge")
    badge.wait_for(state="visible")
    assert badge.inner_text() == "Allowed for this session ✕"
    assert {"third", "fourth"} <= notebook_names(lab)
    screenshot(page, "22-allowed-for-the-session")
    badge.click()  # withdraw: ask again
    badge.wait_for(state="hidden")
    llm.reply(tool_call("run_code", code="fifth = 5"), text("Done."))
    ask(page, "One more")
    card(page).locator(".nini-approval-reject").click()
    wait_idle(page)
    assert "fifth" not in notebook_names(lab)


def test_switching_back_puts_the_code_in_the_sandbox(page: Any, lab: Lab, llm: ScriptedLLM) -> None:
    open_sidebar(page)  # the chat the test before left open (or the reason it could not, if it failed)
    page.click('.nini-run-where-segment[data-value="sandbox"]')
    llm.reply(tool_call("run_code", code="in_the_sandbox = 1"), text("Done."))
    before = page.locator(".nini-approval").count()
    ask(page, "Once more")
    wait_idle(page)
    assert step_states(page)[-1] == ("succeeded", "sandboxed")
    assert page.locator(".nini-approval").count() == before  # no question: it ran in nini's sandbox
    assert "in_the_sandbox" not in notebook_names(lab)


@pytest.fixture(scope="module")
def unasked_lab(tmp_path_factory: pytest.TempPathFactory, llm: ScriptedLLM) -> Iterator[Lab]:
    """A lab of its own (approval is a setting the server reads at its start), started but not waited
    for: it comes up while the tests before its own run on the shared lab."""
    started = Lab(
        tmp_path_factory.mktemp("unasked-lab"),
        llm,
        settings={"execution": {"approve_in_user_kernel": False}},
        wait=False,
    )
    yield started
    started.stop()


@pytest.fixture(scope="module")
def page(browser: Any, lab: Lab, request: pytest.FixtureRequest) -> Iterator[Any]:
    with watched_page(browser, lab) as opened:
        request.getfixturevalue("unasked_lab")  # starts now that the page is loaded, the heaviest part is behind
        yield opened


def test_with_approval_turned_off_the_sidebar_says_so_plainly(browser: Any, unasked_lab: Lab, tmp_path: Path) -> None:
    unasked_lab.wait()
    with watched_page(browser, unasked_lab) as other:
        open_notebook(other, unasked_lab, "mine.ipynb", "x = 1")
        open_sidebar(other)
        other.click('.nini-run-where-segment[data-value="kernel"]')
        other.wait_for_selector('.nini-where[data-unasked="true"]')
        assert "WITHOUT asking: approval is off on this server" in other.inner_text(".nini-where")
        screenshot(other, "23-approval-off")
