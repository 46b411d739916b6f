"""Context, progress and cost in the sidebar (issue 33, item 10), in a real `jupyter lab` driven by
Debian's Chromium against the scripted model.

In the order a user goes: with a notebook open, the chips above the question say what goes with it
(the notebook, its variables); a cell attached from the attach menu shows as a chip and goes when its
✕ is clicked; `@` attaches a cell by keyboard; the ask carries what the chips say; a finished turn
shows its duration, steps and tokens (the scripted server reports usage), and its cost once the
provider's price is set in the Models tab; messages carry their time. Then the session list: search filters it
(by title, and by what was said), a rename lasts across a reload, and delete removes a session after
the dialog is confirmed.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.llm_server import Reply, ScriptedLLM, text
from tests.ui.conftest import Lab, ask, new_page, open_notebook, open_sidebar, screenshot, wait_idle
from tests.ui.sidebar_tabs import show_tab
from tests.ui.test_accessibility import serious_violations, use_theme

pytestmark = pytest.mark.slow

SOURCE = "import pandas as pd\nsales = pd.DataFrame({'amount': [3.0, 4.5]})"
QUESTION = "Which WIDGETS sold best?"  # a word only the conversation of its session holds
USAGE = {"prompt_tokens": 1200, "completion_tokens": 80}
CHIPS = ".nini-context .nini-chip"


def chips(page: Any) -> list[str]:
    """The chips above the question: kind and label."""
    return page.eval_on_selector_all(CHIPS, "chips => chips.map(c => c.dataset.kind + ':' + c.innerText.trim())")


def asked_body(page: Any, question: str) -> dict[str, Any]:
    with page.expect_request(
        lambda request: request.url.split("?")[0].endswith("/ask") and request.method == "POST"
    ) as asked:
        ask(page, question)
    return asked.value.post_data_json


def open_list(page: Any) -> None:
    if page.get_attribute(".nini-sessions", "aria-expanded") != "true":
        page.click(".nini-sessions")
    page.wait_for_selector(".nini-session-panel", state="visible")


def listed(page: Any) -> list[str]:
    return page.eval_on_selector_all(".nini-session-item .nini-session-title", "titles => titles.map(t => t.innerText)")


def test_chips_say_what_goes_with_the_question_and_go_when_removed(page: Any, lab: Lab) -> None:
    open_notebook(page, lab, "sales.ipynb", SOURCE)
    page.locator(".jp-Notebook .jp-Cell").first.locator(".jp-InputArea-editor").click()  # the cell the user means
    open_sidebar(page)
    page.wait_for_selector(f'{CHIPS}[data-kind="variables"]')
    assert chips(page) == ["notebook:sales.ipynb", "variables:variables of sales.ipynb"]
    page.focus(".nini-attach")  # by keyboard: the paperclip, its menu, the first entry
    page.keyboard.press("Enter")
    menu = page.locator(".nini-attach-menu")
    menu.wait_for()
    assert menu.locator(".lm-Menu-itemLabel").all_inner_texts() == [
        "Selected cells of the notebook",
        "Files selected in the file browser",
    ]
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")
    page.wait_for_selector(f'{CHIPS}[data-kind="cell"]')
    assert chips(page)[2:] == ["cell:sales.ipynb · cell 0"]
    screenshot(page, "33f-chips")
    assert serious_violations(page) == []  # axe-core: the chips, their ✕ and the paperclip
    remove = page.locator(f'{CHIPS}[data-kind="cell"] .nini-chip-remove')
    assert remove.get_attribute("aria-label") == "Remove sales.ipynb · cell 0"
    remove.focus()
    page.keyboard.press("Enter")
    page.wait_for_selector(f'{CHIPS}[data-kind="cell"]', state="detached")
    assert page.evaluate("() => document.activeElement.classList.contains('nini-attach')")  # the focus stays in the bar
    assert [c.split(":")[0] for c in chips(page)] == ["notebook", "variables"]


def test_at_attaches_a_cell_by_keyboard_and_the_ask_carries_the_chips(page: Any, llm: ScriptedLLM) -> None:
    page.click(".nini-input")
    page.keyboard.type("Explain @cel")
    page.wait_for_selector('.nini-mention-option[data-kind="cell"][aria-selected="true"]')
    assert page.get_attribute(".nini-input", "aria-activedescendant") == page.get_attribute(
        ".nini-mention-option[aria-selected='true']", "id"
    )
    screenshot(page, "33f-at-mention")
    assert serious_violations(page) == []  # the list open: a listbox the question box controls
    page.keyboard.press("Enter")  # attaches: it does not send the question
    page.wait_for_selector(f'{CHIPS}[data-kind="cell"]')
    assert page.input_value(".nini-input") == "Explain "
    assert page.locator(".nini-user").count() == 0 and page.is_hidden(".nini-mention-list")
    page.click(f'{CHIPS}[data-kind="variables"] .nini-chip-remove')  # this question without the variables

    llm.reply(
        Reply(tool_calls=[{"name": "list_datasets", "arguments": {}}], usage=USAGE),
        text("No dataset yet; `sales` lives in your notebook.", usage=USAGE),
    )
    body = asked_body(page, QUESTION)
    assert body["notebook"]["attached_cells"] == [0] and body["notebook"]["name"] == "sales.ipynb"
    assert "notebook_kernel_id" not in body and "kernel_id" not in body
    wait_idle(page)
    assert [c.split(":")[0] for c in chips(page)] == ["notebook", "variables"]  # the cell went, the variables came back


def test_a_finished_turn_shows_duration_steps_tokens_and_times(page: Any) -> None:
    footer = page.locator(".nini-end .nini-run-footer").last
    footer.wait_for()
    parts = footer.locator(".nini-run-footer-part")
    assert parts.evaluate_all("ps => ps.map(p => p.dataset.kind)") == [
        "duration",
        "steps",
        "tokens",
        "context",
    ]  # no price: no cost (the context's numbers against its done event: test_long_session.py)
    assert re.fullmatch(r"context [\d.]+k? \([\d.]+%\)", footer.locator('[data-kind="context"]').inner_text())
    assert footer.locator('[data-kind="steps"]').inner_text() == "1 step"
    assert footer.locator('[data-kind="tokens"]').inner_text() == "2.4k + 160 tokens"
    assert "2,400 prompt tokens and 160 completion tokens over 2 model calls" in footer.locator(
        '[data-kind="tokens"]'
    ).get_attribute("title")
    assert footer.locator('[data-kind="duration"]').inner_text().endswith(("ms", " s"))
    user = page.locator(".nini-user").last
    assert user.inner_text() == QUESTION  # the time is not part of the message's text
    assert user.get_attribute("data-time").count(":") == 1 and "20" in user.get_attribute("title")
    assert page.locator(".nini-assistant").last.get_attribute("data-time")
    screenshot(page, "33f-run-footer")


def test_a_price_set_in_the_models_tab_shows_the_cost(page: Any, lab: Lab, llm: ScriptedLLM) -> None:
    show_tab(page, "models")
    page.click('.nini-provider[data-name="local"] button:has-text("Edit")')
    page.fill('.nini-provider-form input[name="input_per_mtok"]', "2.5")
    page.fill('.nini-provider-form input[name="output_per_mtok"]', "10")
    page.click(".nini-provider-save")
    page.wait_for_selector('.nini-provider-result[data-ok="true"]')
    provider = next(p for p in lab.nini("GET", "models")["providers"] if p["name"] == "local")
    assert (provider["input_per_mtok"], provider["output_per_mtok"], provider["currency"]) == (2.5, 10.0, None)  # USD
    show_tab(page, "chat")
    llm.reply(text("Still no dataset.", usage=USAGE))
    ask(page, "And now?")
    page.locator(".nini-end .nini-run-footer").nth(1).wait_for()
    wait_idle(page)
    cost = page.locator(".nini-end .nini-run-footer").nth(1).locator('[data-kind="cost"]')
    assert cost.inner_text() == "$0.0038"  # (1200 x 2.5 + 80 x 10) / 1e6
    screenshot(page, "33f-run-cost")


def test_search_filters_the_session_list(page: Any, lab: Lab) -> None:
    for title in ("Revenue by region", "Churn model", "Churn features"):
        lab.nini("POST", "sessions", {"title": title})
    open_list(page)
    page.wait_for_selector('.nini-session-item .nini-session-title:has-text("Churn features")')
    page.fill(".nini-session-search", "churn")
    page.wait_for_function("() => document.querySelector('.nini-session-list').dataset.query === 'churn'")
    assert sorted(listed(page)) == ["Churn features", "Churn model"]
    page.keyboard.press("ArrowDown")  # from the search box into the list, and Esc out of the panel
    assert page.evaluate("() => document.activeElement.classList.contains('nini-session-open')")
    page.keyboard.press("Escape")
    page.wait_for_selector(".nini-session-panel", state="hidden")
    assert page.evaluate("() => document.activeElement.classList.contains('nini-sessions')")
    open_list(page)
    page.fill(".nini-session-search", "widgets")  # in no title: in the first session's question
    page.wait_for_function(
        "() => document.querySelector('.nini-session-list').dataset.query === 'widgets'"
        " && document.querySelectorAll('.nini-session-item').length === 1"
    )
    assert listed(page) == [QUESTION]
    screenshot(page, "33f-session-search")
    assert serious_violations(page) == []  # the panel open, with its search, entries, rename and delete
    page.fill(".nini-session-search", "nothing like it")
    page.wait_for_selector('.nini-session-status:has-text("No session matches")')
    page.fill(".nini-session-search", "")


def test_rename_lasts_across_a_reload(page: Any, browser: Any, lab: Lab) -> None:
    open_list(page)
    item = page.locator('.nini-session-item:has(.nini-session-title:text-is("Churn model"))')
    item.locator(".nini-session-rename").click()
    page.fill(".nini-session-title-input", "Customer churn, Q3")
    page.keyboard.press("Enter")
    page.wait_for_selector('.nini-session-title:text-is("Customer churn, Q3")')
    assert "Customer churn, Q3" in [s["title"] for s in lab.nini("GET", "sessions")]
    reloaded = new_page(browser, lab)
    try:
        open_sidebar(reloaded)
        open_list(reloaded)
        reloaded.wait_for_selector('.nini-session-title:text-is("Customer churn, Q3")')
        assert "Churn model" not in listed(reloaded)
    finally:
        reloaded.close()


def test_delete_removes_a_session_after_confirming(page: Any, lab: Lab) -> None:
    open_list(page)
    victim = next(s for s in lab.nini("GET", "sessions") if s["title"] == "Revenue by region")
    item = page.locator(f'.nini-session-item[data-id="{victim["id"]}"]')
    item.locator(".nini-session-delete").click()
    dialog = page.locator(".jp-Dialog")
    dialog.wait_for()
    assert "Revenue by region" in dialog.inner_text()
    screenshot(page, "33f-delete-dialog")
    dialog.locator("button.jp-mod-reject").click()  # Cancel: nothing goes
    dialog.wait_for(state="detached")
    assert item.count() == 1
    item.locator(".nini-session-delete").click()
    page.locator(".jp-Dialog button.jp-mod-warn").click()
    item.wait_for(state="detached")
    assert victim["id"] not in [s["id"] for s in lab.nini("GET", "sessions")]
    assert "Revenue by region" not in listed(page)


def test_in_the_dark_theme_the_list_the_chips_and_the_footer_pass_axe(page: Any) -> None:
    use_theme(page, "JupyterLab Dark")
    page.wait_for_selector("#jupyterlab-splash", state="detached")  # the theme's change drawn
    try:
        open_list(page)
        page.wait_for_selector(".nini-session-item")
        screenshot(page, "33f-dark-sessions")
        assert serious_violations(page) == []
        page.click(".nini-input")  # closes the list
        page.keyboard.type("@")
        page.wait_for_selector(".nini-mention-option[aria-selected='true']")
        screenshot(page, "33f-dark-mention")
        assert serious_violations(page) == []
        page.keyboard.press("Escape")
    finally:
        use_theme(page, "JupyterLab Light")
