"""Feedback under an answer, in a real `jupyter lab` with Debian's Chromium and the scripted model
(issue 33, item 7): the thumbs are SVG icons (emoji render as empty boxes where no emoji font is
installed), the signals form stays hidden until thumbs down or "Partly", and the recorded choice
shows pressed (aria-pressed), also after the page is reloaded and the session opened again."""

from __future__ import annotations

from typing import Any

import pytest

from tests.llm_server import ScriptedLLM, text
from tests.ui.conftest import (
    Lab,
    ask,
    current_session,
    open_session,
    open_sidebar,
    screenshot,
    wait_idle,
    widen_sidebar,
)

pytestmark = pytest.mark.slow

CONTROL = ".nini-end .nini-feedback"
FORM = f"{CONTROL} .nini-feedback-form"


def pressed(page: Any) -> dict[str, str]:
    """Each feedback button's aria-pressed, by its action."""
    return page.eval_on_selector_all(
        f"{CONTROL} .nini-feedback-buttons button",
        "bs => Object.fromEntries(bs.map(b => [b.dataset.action, b.getAttribute('aria-pressed')]))",
    )


def test_thumbs_up_stays_pressed_after_a_reload(page: Any, lab: Lab, llm: ScriptedLLM) -> None:
    open_sidebar(page)
    widen_sidebar(page)
    llm.reply(text("There are 144 rows."))
    ask(page, "How many rows?")
    page.wait_for_selector(CONTROL)
    wait_idle(page)
    assert page.locator(f"{CONTROL} .nini-feedback-up svg").count() == 1
    assert page.locator(f"{CONTROL} .nini-feedback-down svg").count() == 1
    assert not any(ch in page.inner_text(f"{CONTROL} .nini-feedback-buttons") for ch in "👍👎")
    assert page.get_attribute(f"{CONTROL} .nini-feedback-up", "aria-label") == "Good answer"
    assert not page.is_visible(FORM)  # no signals, comment or Send until asked for
    assert pressed(page) == {"accept": "false", "reject": "false", "partial": "false"}

    page.click(f"{CONTROL} .nini-feedback-up")
    page.wait_for_selector(f'{CONTROL}[data-sent="accept"]')
    assert pressed(page) == {"accept": "true", "reject": "false", "partial": "false"}
    assert not page.is_visible(FORM)
    session = current_session(page)  # the chat's own, found by its id on the page
    assert list(lab.nini("GET", f"sessions/{session}/feedback").values()) == ["accept"]
    screenshot(page, "33d-feedback-pressed")

    page.reload()
    page.wait_for_selector("#jp-main-dock-panel")
    # JupyterLab's restored layout ends by focusing the main area's widget (the launcher): on a loaded
    # machine that comes after the clicks below unless waited for, and takes the focus from the form
    page.wait_for_function("() => document.activeElement?.closest('.jp-Launcher') != null")
    open_sidebar(page)
    open_session(page, session)
    page.wait_for_selector(f'{CONTROL} .nini-feedback-up[aria-pressed="true"]')
    assert pressed(page) == {"accept": "true", "reject": "false", "partial": "false"}
    assert not page.is_visible(FORM)
    screenshot(page, "33d-feedback-pressed-after-reload")


def test_the_signals_form_opens_only_for_thumbs_down_or_partly(page: Any, lab: Lab) -> None:
    page.click(f"{CONTROL} .nini-feedback-down")
    page.wait_for_selector(FORM, state="visible")
    assert page.locator(f"{FORM} .nini-feedback-signal input[type=checkbox]").count() == 10
    assert page.get_attribute(f"{CONTROL} .nini-feedback-down", "aria-expanded") == "true"
    focused = "() => document.activeElement.matches('.nini-feedback-signal input')"
    assert page.evaluate(focused), page.evaluate("() => document.activeElement.outerHTML.slice(0, 200)")
    screenshot(page, "33d-feedback-form")
    page.keyboard.press("Escape")  # folds it away, back to the button
    page.wait_for_selector(FORM, state="hidden")
    assert page.evaluate("() => document.activeElement.matches('.nini-feedback-down')")

    page.click(f"{CONTROL} .nini-feedback-partial")
    page.wait_for_selector(FORM, state="visible")
    page.check(f"{FORM} .nini-feedback-signal input[value='concise']")
    page.click(f"{FORM} .nini-feedback-send")
    page.wait_for_selector(f'{CONTROL}[data-sent="partial"]')
    page.wait_for_selector(FORM, state="hidden")
    assert pressed(page) == {"accept": "false", "reject": "false", "partial": "true"}
    assert list(lab.nini("GET", f"sessions/{current_session(page)}/feedback").values()) == ["partial"]
