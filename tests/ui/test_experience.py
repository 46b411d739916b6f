"""The Experience tab end to end: a real `jupyter lab`, Debian's Chromium, the scripted model.

In the order a user goes: state an experience in the pane's form, see it pending with its scores,
review the curator's plan and cancel it (nothing written), review it again and confirm (EXP-0001
in the team library, on disk and in the list, its document rendered), ask the chat a question the
experience bears on and see the warning under "What this run was given" (on showing the tab, and
live from the chat's socket while it is shown), and deprecate the entry through the dialog.
"""

from __future__ import annotations

import time
import urllib.error
from typing import Any

import pytest

from tests import timeouts
from tests.llm_server import ScriptedLLM, text
from tests.ui.conftest import Lab, ask, current_session, open_sidebar, screenshot, wait_idle, widen_sidebar

pytestmark = pytest.mark.slow

STATEMENT = "use the median, the revenue column has outliers"
QUESTION = "What is the typical revenue by region?"
CANDIDATES = ".nini-exp-candidate"
PLAN = ".nini-exp-plan"


def team_index(lab: Lab) -> Any:
    return lab.home / "experience" / "team" / "INDEX.md"


def show_experience(page: Any) -> None:
    page.click('#nini-panel .lm-TabBar-tab:has-text("Experience")')
    page.wait_for_selector(".nini-experience", state="visible")


def review_plan(page: Any) -> list[str]:
    """Choose the one pending candidate and review its plan: the plan's lines as shown."""
    page.locator(CANDIDATES).first.locator(".nini-exp-choose").check()
    page.click(".nini-exp-review")
    page.wait_for_selector(f"{PLAN} .nini-exp-plan-line", state="visible")
    return page.eval_on_selector_all(f"{PLAN} .nini-exp-plan-line", "lines => lines.map(l => l.textContent)")


def test_a_statement_added_in_the_pane_waits_with_its_scores(page: Any, lab: Lab) -> None:
    open_sidebar(page)
    widen_sidebar(page)
    show_experience(page)
    page.wait_for_selector('.nini-exp-candidates[data-count="0"]')
    page.fill(".nini-exp-add textarea", STATEMENT)
    page.select_option(".nini-exp-add select", "team")
    page.click(".nini-exp-add button[type='submit']")
    candidate = page.locator(CANDIDATES)
    candidate.wait_for()
    assert candidate.count() == 1
    fields = candidate.locator(".nini-exp-fields").inner_text()
    assert "median" in fields and "mean" in fields  # the decision and the alternative it rejects
    scores = candidate.locator(".nini-exp-score").evaluate_all("s => s.map(n => [n.dataset.score, n.textContent])")
    assert [key for key, _ in scores] == ["structure", "judgement", "reusability", "fit", "overall"]
    assert all(float(label.split()[-1]) >= 0 for _, label in scores)
    assert candidate.locator(".nini-exp-target").input_value() == "team"
    assert "Added" in page.inner_text(".nini-exp-message")
    [pending] = lab.nini("GET", "experience/pending")["candidates"]
    assert pending["candidate"]["level"] == "team"
    screenshot(page, "20-experience-pending")


def test_cancel_on_the_plan_writes_nothing(page: Any, lab: Lab) -> None:
    lines = review_plan(page)
    assert len(lines) == 1 and lines[0].endswith("→ team")
    page.click(".nini-exp-cancel")
    assert page.locator(PLAN).is_hidden()
    assert "Nothing was written" in page.inner_text(".nini-exp-message")
    assert not team_index(lab).exists()
    assert len(lab.nini("GET", "experience/pending")["candidates"]) == 1
    assert page.locator(CANDIDATES).count() == 1


def test_confirm_deposits_it_into_the_team_library(page: Any, lab: Lab) -> None:
    page.locator(CANDIDATES).first.locator(".nini-exp-choose").uncheck()
    shown = review_plan(page)
    with page.expect_request(lambda r: "/nini/api/experience/deposit" in r.url and r.method == "POST") as sent:
        page.click(".nini-exp-confirm")
    assert sent.value.post_data_json["confirm"] is True and sent.value.post_data_json["plan"] == shown
    entry = page.locator('.nini-exp-entry[data-id="EXP-0001"]')
    entry.wait_for()
    assert "EXP-0001" in page.inner_text(".nini-exp-message")
    page.wait_for_selector('.nini-exp-candidates[data-count="0"]')
    assert entry.get_attribute("data-level") == "team"
    index = team_index(lab).read_text()
    assert "EXP-0001" in index and "knowledge/EXP-0001.md" in index
    entry.locator("button").click()
    page.wait_for_selector('.nini-exp-document[data-reference="team/knowledge/EXP-0001.md"] .nini-exp-document-body h2')
    document = page.inner_text(".nini-exp-document-body")
    assert "Decision Shape" in document and "mean" in document
    screenshot(page, "21-experience-library")
    page.click(".nini-exp-close")
    assert page.locator(".nini-exp-document").is_hidden()


def test_what_the_run_was_given_shows_the_match(page: Any, lab: Lab, llm: ScriptedLLM) -> None:
    title = lab.nini("GET", "experience/entries")["entries"][0]["title"]
    page.click('#nini-panel .lm-TabBar-tab:has-text("Chat")')
    page.click(".nini-new-chat")
    llm.reply(text("The median revenue is 12."))
    ask(page, QUESTION)
    page.wait_for_selector(".nini-assistant:has-text('median revenue is 12')")
    wait_idle(page)
    run_palette_command(page, "nini: Open Experience")  # shown: it refreshes
    record = page.locator('.nini-exp-record[data-type="experience_matched"]')
    record.first.wait_for()
    assert title in record.first.inner_text()
    screenshot(page, "22-experience-run")
    # with the tab shown, the next run's warning comes in through the chat's socket
    session = current_session(page)
    llm.reply(text("Still 12."))
    ask_when_free(lab, session, QUESTION)
    page.wait_for_function(
        "() => document.querySelectorAll('.nini-exp-record[data-type=\"experience_matched\"]').length === 2",
    )
    assert page.locator(".nini-experience").is_visible()


def test_deprecate_asks_first_and_keeps_the_file(page: Any, lab: Lab) -> None:
    entry = page.locator('.nini-exp-entry[data-id="EXP-0001"]')
    entry.locator("button").click()
    page.wait_for_selector('.nini-exp-document[data-reference="team/knowledge/EXP-0001.md"]')
    page.click(".nini-exp-deprecate")
    page.locator(".jp-Dialog button.jp-mod-reject").click()  # Cancel: nothing changes
    page.wait_for_selector(".jp-Dialog", state="detached")
    assert [e["id"] for e in lab.nini("GET", "experience/entries")["entries"]] == ["EXP-0001"]
    page.click(".nini-exp-deprecate")
    dialog = page.locator(".jp-Dialog")
    assert "EXP-0001" in dialog.inner_text()
    dialog.locator("button.jp-mod-warn").click()
    entry.wait_for(state="detached")
    assert page.locator(".nini-exp-document").is_hidden()
    assert lab.nini("GET", "experience/entries")["entries"] == []
    page.check(".nini-exp-show-deprecated")
    assert entry.get_attribute("data-status") == "deprecated"
    assert (lab.home / "experience" / "team" / "knowledge" / "EXP-0001.md").is_file()
    assert "deprecated" in team_index(lab).read_text()
    screenshot(page, "23-experience-deprecated")


def run_palette_command(page: Any, label: str) -> None:
    """Open JupyterLab's command palette, type the command's label, press Enter."""
    page.click("#jp-main-dock-panel")
    page.keyboard.press("Control+Shift+C")
    page.wait_for_selector(".lm-CommandPalette-input", state="visible")
    page.fill(".lm-CommandPalette-input", label)
    page.locator(".lm-CommandPalette-item", has_text=label).first.wait_for()
    page.keyboard.press("Enter")


def ask_when_free(lab: Lab, session: str, message: str) -> None:
    """Ask over REST once the session's previous run (its stop hooks included) has ended."""
    deadline = time.monotonic() + timeouts.timeout(30)
    while True:
        try:
            lab.nini("POST", f"sessions/{session}/ask", {"message": message})
            return
        except urllib.error.HTTPError as refused:
            if refused.code != 409 or time.monotonic() > deadline:
                raise
            time.sleep(0.1)
