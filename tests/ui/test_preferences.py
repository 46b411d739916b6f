"""Preferences in the sidebar, end to end: a real `jupyter lab`, Debian's Chromium, the scripted model.

Three answers with exclamation marks get a thumbs down with the signal no_exclamation; the
Preferences tab then previews the rule and the next answer's recorded prompt carries it; deleting
it through the dialog takes it out of the preview. A rule added through the form shows, and
switching injection off makes the preview say (none). A report gets a thumbs up.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.llm_server import ScriptedLLM, text
from tests.ui.conftest import Lab, ask, open_sidebar, screenshot, wait_idle, widen_sidebar

pytestmark = pytest.mark.slow

RULE = "- Rule: no exclamation marks (confidence=0.70, source=implicit)"  # in the sidebar's language: English here
FEEDBACK = ".nini-end .nini-feedback"


def show(page: Any, tab: str) -> None:
    page.click(f'#nini-panel .lm-TabBar-tab:has-text("{tab}")')


def preview(page: Any) -> str:
    show(page, "Preferences")
    page.wait_for_selector(".nini-preferences", state="visible")
    page.wait_for_function("() => document.querySelector('.nini-prefs-preview').textContent.includes('##')")
    return page.inner_text(".nini-prefs-preview")


def test_thumbs_down_three_times_makes_a_rule_the_next_prompt_carries(page: Any, lab: Lab, llm: ScriptedLLM) -> None:
    open_sidebar(page)
    widen_sidebar(page)
    llm.reply(text("Revenue doubled!"), text("Costs fell!"), text("Margins rose!"), text("Sales are steady."))
    for n, question in enumerate(["revenue?", "costs?", "margins?"]):
        ask(page, question)
        control = page.locator(FEEDBACK).nth(n)
        control.wait_for()
        wait_idle(page)
        control.locator(".nini-feedback-down").click()
        control.locator(".nini-feedback-signal input[value='no_exclamation']").check()
        control.locator(".nini-feedback-send").click()
        page.wait_for_function(f"() => document.querySelectorAll('{FEEDBACK}')[{n}].dataset.sent === 'reject'")
    status = page.locator(FEEDBACK).nth(2).locator(".nini-feedback-status").inner_text()
    assert status == "Recorded: reject · punctuation.no_exclamation 0.50 → 0.70"
    judged = page.locator(FEEDBACK).nth(2)  # the choice shows pressed; another can still be sent
    assert judged.locator(".nini-feedback-down").get_attribute("aria-pressed") == "true"
    assert judged.locator(".nini-feedback-up").get_attribute("aria-pressed") == "false"
    screenshot(page, "30-feedback")

    assert preview(page).splitlines()[-1] == RULE
    show(page, "Chat")
    ask(page, "sales?")
    page.locator(FEEDBACK).nth(3).wait_for()
    assert RULE in llm.requests[-1]["messages"][0]["content"]

    assert preview(page).splitlines()[-1] == RULE
    page.click('.nini-pref[data-key="punctuation.no_exclamation"] .nini-pref-delete')
    page.click(".jp-Dialog .jp-mod-warn")
    page.wait_for_function("() => document.querySelector('.nini-prefs-preview').textContent.endsWith('(none)')")
    assert lab.nini("GET", "preferences")["preferences"] == []
    screenshot(page, "31-preferences")


def test_a_rule_added_in_the_form_and_the_injection_switch(page: Any, lab: Lab) -> None:
    preview(page)
    page.fill(".nini-prefs-add-key", "tone")
    page.fill(".nini-prefs-add-value", "formal")
    page.click(".nini-prefs-add-button")
    page.wait_for_selector('.nini-pref[data-key="tone"]')
    page.wait_for_function("() => document.querySelector('.nini-prefs-preview').textContent.includes('a formal tone')")
    page.uncheck(".nini-prefs-injection")
    page.wait_for_function("() => document.querySelector('.nini-prefs-preview').textContent.endsWith('(none)')")
    assert lab.nini("GET", "preferences/switches") == {"learning": True, "injection": False}
    page.check(".nini-prefs-injection")
    page.wait_for_function("() => document.querySelector('.nini-prefs-preview').textContent.includes('a formal tone')")
    [row] = lab.nini("GET", "preferences")["preferences"]
    assert (row["key"], row["value"], row["source"], row["project_id"]) == ("tone", "formal", "explicit", None)


def test_a_report_gets_a_thumbs_up(page: Any) -> None:
    show(page, "Reports")
    page.click(".nini-generate-report")
    control = page.locator(".nini-report .nini-feedback").first
    control.wait_for()
    control.locator(".nini-feedback-up").click()
    page.wait_for_function("() => document.querySelector('.nini-report .nini-feedback').dataset.sent === 'accept'")
    assert control.locator(".nini-feedback-status").inner_text().startswith("Recorded: accept")
