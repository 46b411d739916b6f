"""The sidebar checked by axe-core (issue 33, item 4) in a real `jupyter lab` in Chromium, and worked by
keyboard alone.

With a turn, a failed step and a step waiting for approval on screen, axe-core finds no serious or
critical violation in nini's panel on any of its six tabs, in JupyterLab Light and in JupyterLab Dark
(switched as a user does, from the Settings menu). Then every control of the chat is reached with Tab
and the ones a user needs are worked with Enter and Space: a tab, a step's details, the approval, the
feedback thumbs and their form, New chat. One lab and one page for the module.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.llm_server import ScriptedLLM, text, tool_call
from tests.ui.conftest import Lab, ask, open_notebook, open_sidebar, screenshot, wait_idle
from tests.ui.sidebar_tabs import each_tab, show_tab

pytestmark = pytest.mark.slow

THEMES = ("JupyterLab Light", "JupyterLab Dark")
CHART = "import matplotlib.pyplot as plt\nplt.bar(['March', 'April'], [3.0, 4.5])\nprint(sum([3.0, 4.5]))"


def use_theme(page: Any, theme: str) -> None:
    """Settings > Theme > ``theme`` from JupyterLab's menu bar, and wait until the panel is drawn in it."""
    if page.get_attribute("body", "data-jp-theme-name") == theme:
        return
    page.click(".lm-MenuBar-item:has-text('Settings')")
    page.hover(".lm-Menu-item:has-text('Theme')")
    page.click(f".lm-Menu-item:text-is('{theme}'), .lm-Menu-item:has(.lm-Menu-itemLabel:text-is('{theme}'))")
    page.wait_for_selector(f"body[data-jp-theme-name='{theme}']", state="attached")
    dark = "true" if theme.endswith("Dark") else "false"
    page.wait_for_function(
        """dark => {  // the theme's stylesheet applied: the panel's background follows
        const [r, g, b] = getComputedStyle(document.querySelector('#nini-panel')).backgroundColor.match(/\\d+/g).map(Number);
        return (r + g + b < 200) === (dark === 'true');
    }""",
        arg=dark,
    )


def serious_violations(page: Any) -> list[str]:
    """axe-core's serious and critical findings inside nini's panel, one line per rule and element."""
    from axe_playwright_python.sync_playwright import Axe

    if not page.evaluate("typeof window.axe === 'object'"):
        page.evaluate(Axe().axe_script)  # axe-core, once for the page
        # JupyterLab's body is 0 px high (its shell is positioned over it) and clips what overflows it: axe
        # then takes the panel's text for clipped away and checks none of its colours. As tall as the window,
        # the body draws the same, and axe sees what a user sees.
        page.evaluate("document.body.style.minHeight = '100vh'")
    results = page.evaluate("axe.run('#nini-panel', {resultTypes: ['violations']})")
    return [
        f"{violation['id']} ({violation['impact']}): {violation['help']} at {' '.join(node['target'])}: "
        f"{node.get('failureSummary', '')}"
        for violation in results["violations"]
        if violation["impact"] in ("serious", "critical")
        for node in violation["nodes"]
    ]


def test_a_turn_an_error_and_an_approval_on_screen(page: Any, lab: Lab, llm: ScriptedLLM) -> None:
    open_notebook(page, lab, "mine.ipynb", "sales = [3.0, 4.5]")
    open_sidebar(page)
    llm.reply(
        tool_call("run_code", code=CHART, label="add up and chart"),
        tool_call("run_code", code="1 / 0", label="a slip"),
        text("Your sales add up to **7.5**."),
    )
    ask(page, "What do my sales add up to?")
    wait_idle(page)
    page.wait_for_selector(".nini-step[data-status='failed'] .nini-step-error")
    page.wait_for_selector("img.nini-chart")
    page.click('.nini-run-where-segment[data-value="kernel"]')
    llm.reply(tool_call("run_code", code="in_your_kernel = sum(sales)"), text("Done: in_your_kernel is 7.5."))
    ask(page, "Put the total in my notebook")
    page.wait_for_selector('.nini-approval[data-state="waiting"]')


@pytest.mark.parametrize("theme", THEMES)
def test_axe_finds_nothing_serious_on_any_tab(page: Any, theme: str) -> None:
    use_theme(page, theme)
    found = {name: violations for name in each_tab(page) if (violations := serious_violations(page))}
    screenshot(page, f"33b-axe-{theme.split()[-1].lower()}")
    page.locator("img.nini-chart").first.scroll_into_view_if_needed()
    screenshot(page, f"33b-chart-{theme.split()[-1].lower()}")
    assert found == {}


def press_tab_until(page: Any, selector: str, limit: int = 120) -> None:
    """Press Tab until the focused element matches ``selector``: the control is reachable by keyboard."""
    for _ in range(limit):
        page.keyboard.press("Tab")
        if page.evaluate("s => document.activeElement?.matches(s) ?? false", selector):
            return
    raise AssertionError(f"{selector} was not reached in {limit} presses of Tab")


def focus_start(page: Any) -> None:
    """Focus the chat's tab, where a keyboard user enters the panel."""
    tab = page.eval_on_selector("#nini-tab-chat", "w => w.getAttribute('aria-labelledby')")
    page.focus(f"#nini-panel [id='{tab}']")


# The chat's controls a keyboard user must reach with Tab: every visible, enabled one, except those a
# composite widget (a radio group, a tab list, a toolbar) takes out of the Tab order to move between with
# the arrow keys, as ARIA's roving tabindex has it: of those, the one Tab stops at.
REACHABLE = """() => [...document.querySelectorAll('#nini-tab-chat :is(button, select, textarea, input, summary, a[href])')]
    .filter(el => !el.disabled && el.checkVisibility({visibilityProperty: true}))  // not in a closed <details> either
    .filter(el => el.tabIndex >= 0 || !el.closest('[role=radiogroup], [role=tablist], [role=toolbar]'))"""


def test_every_control_of_the_chat_is_reached_with_tab(page: Any) -> None:
    use_theme(page, "JupyterLab Light")
    show_tab(page, "chat")
    wanted = page.evaluate(f"({REACHABLE})().map((el, i) => el.dataset.tabProbe = String(i)).length")
    focus_start(page)
    seen: set[str] = set()
    path: list[str] = []
    for _ in range(wanted + 20):
        page.keyboard.press("Tab")
        probe, where = page.evaluate("""() => { const el = document.activeElement;
            return [el?.dataset?.tabProbe ?? null, `${el?.tagName}.${el?.className} ${el?.getAttribute('aria-label') ?? ''}`]; }""")
        path.append(where)
        if probe is not None:
            seen.add(probe)
        if len(seen) == wanted:
            break
    missed = page.evaluate(
        """seen => [...document.querySelectorAll('[data-tab-probe]')].filter(el => !seen.includes(el.dataset.tabProbe))
        .map(el => `${el.outerHTML.slice(0, 100)} in ${el.parentElement.className} < ${el.parentElement.parentElement.className} < ${el.closest(".nini-step, .nini-approval, .nini-assistant")?.className}`)""",
        sorted(seen),
    )
    assert missed == [], "missed: " + "\n".join(missed) + "\nfocus went: " + " > ".join(path)


def test_the_chat_is_worked_with_enter_and_space(page: Any, lab: Lab) -> None:
    focus_start(page)
    page.keyboard.press("ArrowRight")  # the tab bar: arrows move between tabs, Enter opens one
    page.keyboard.press("Enter")
    page.wait_for_selector("#nini-tab-skills", state="visible")
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("Enter")
    page.wait_for_selector("#nini-tab-chat", state="visible")

    press_tab_until(page, ".nini-approval[data-state='waiting'] .nini-approval-once")
    page.keyboard.press("Enter")
    page.wait_for_selector(".nini-approval[data-state='once']")
    wait_idle(page)

    focus_start(page)
    press_tab_until(page, ".nini-log > .nini-step summary")
    page.keyboard.press("Space")
    page.wait_for_selector(".nini-log > .nini-step details[open] .nini-step-code pre")

    press_tab_until(page, ".nini-feedback-down")
    page.keyboard.press("Enter")
    page.wait_for_selector(".nini-feedback-form:visible")
    press_tab_until(page, ".nini-feedback-form input[type='checkbox']")
    page.keyboard.press("Space")
    assert page.evaluate("document.activeElement.checked") is True
    screenshot(page, "33b-keyboard")

    focus_start(page)
    press_tab_until(page, ".nini-new-chat")
    page.keyboard.press("Enter")
    page.wait_for_function("document.querySelectorAll('.nini-log > *').length === 0")
