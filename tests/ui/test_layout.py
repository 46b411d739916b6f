"""The sidebar at the widths a JupyterLab user gives it, measured in a real `jupyter lab` in Chromium
(issue 33, item 3): from JupyterLab's default 250 px, through 300 px, to a roomy 520 px, no tab name and
no control of any tab is cut off; the tabs are icons with their names as tooltips when the names do not
fit; primary buttons look enabled and disabled ones look disabled; and forms meant to be hidden (the
feedback signals under every answer, the "New skill" form) stay hidden until they are opened.

The widths are set as a user sets them, by dragging the sidebar's edge; every state is a screenshot
(33b-...). One lab and one page for the module.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.llm_server import ScriptedLLM, text, tool_call
from tests.ui.conftest import ask, open_sidebar, screenshot, wait_idle
from tests.ui.sidebar_tabs import each_tab, set_panel_width, show_tab

pytestmark = pytest.mark.slow

WIDTHS = (250, 300, 520)
CHART = (
    "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [10.0, 12.5, 15.0])\n"
    "print('revenue by month, a line long enough to need wrapping in a narrow sidebar: ' + 'x' * 60)"
)

# Every visible control of the panel (and each tab's name) whose box leaves the panel or whose text is
# cut (its content wider than its box), and a tab page that scrolls sideways. Code and tables may
# scroll sideways inside their own box: what is in them is not measured.
MEASURE = """panel => {
  const own = panel.getBoundingClientRect(), room = panel.parentElement.getBoundingClientRect(); // what the sidebar shows
  const box = {left: Math.max(own.left, room.left), right: Math.min(own.right, room.right)};
  const shown = el => el.checkVisibility({visibilityProperty: true}); // not in a closed <details> either
  const name = el => `${el.tagName.toLowerCase()}.${String(el.className).split(' ').filter(Boolean).join('.')}` +
    ` "${(el.innerText || el.value || el.getAttribute('aria-label') || el.title || '').trim().slice(0, 40)}"`;
  const problems = [];
  const page = panel.querySelector(':scope > .lm-StackedPanel > .lm-Widget:not(.lm-mod-hidden)');
  if (page.scrollWidth > page.clientWidth + 1) {
    problems.push(`the tab page scrolls sideways: ${page.scrollWidth} > ${page.clientWidth}`);
  }
  const controls = 'button, select, input, textarea, summary, a, label, [role="tab"], .lm-TabBar-tabLabel';
  for (const el of panel.querySelectorAll(controls)) {
    if (!shown(el) || el.closest('pre, table, .nini-step-code, .nini-approval-code')) {
      continue;
    }
    const r = el.getBoundingClientRect();
    if (r.left < box.left - 0.5 || r.right > box.right + 0.5) {
      problems.push(`${name(el)} at ${r.left.toFixed(1)}..${r.right.toFixed(1)}, outside the panel ${box.left}..${box.right}`);
    }
    const typed = ['SELECT', 'TEXTAREA', 'INPUT'].includes(el.tagName); // their text scrolls inside them
    if (!typed && el.scrollWidth > el.clientWidth + 1) {
      problems.push(`${name(el)} is cut: ${el.scrollWidth} > ${el.clientWidth}`);
    }
  }
  return problems;
}"""


def tabs(page: Any) -> list[dict[str, Any]]:
    """Each tab as seen: its tooltip, whether its name shows, and its icon's width."""
    return page.eval_on_selector_all(
        "#nini-panel .lm-TabBar-tab",
        """tabs => tabs.map(t => ({
        title: t.title, label: t.querySelector('.lm-TabBar-tabLabel').textContent,
        named: t.querySelector('.lm-TabBar-tabLabel').getClientRects().length > 0,
        icon: t.querySelector('.lm-TabBar-tabIcon svg')?.getBoundingClientRect().width ?? 0}))""",
    )


def test_a_turn_on_screen_to_measure(page: Any, llm: ScriptedLLM) -> None:
    open_sidebar(page)
    llm.reply(
        tool_call("run_code", code=CHART, label="revenue by month, charted as a line"),
        tool_call("run_code", code="1 / 0", label="a slip"),
        text("Revenue grew **every month**, to 15.0 in March."),
    )
    ask(page, "How did revenue develop over the quarter, month by month, and is the growth steady?")
    wait_idle(page)
    page.wait_for_selector(".nini-assistant strong")
    page.locator(".nini-log > .nini-step").first.locator("summary").click()  # open: its code and output show
    page.wait_for_selector(".nini-log > .nini-step .nini-step-code pre")
    chart = page.locator("img.nini-chart").first
    chart.wait_for()
    page.wait_for_function("img => img.complete && img.naturalWidth > 100", arg=chart.element_handle())


@pytest.mark.parametrize("width", WIDTHS)
def test_no_tab_name_and_no_control_is_cut_off(page: Any, width: int) -> None:
    set_panel_width(page, width)
    problems = {}
    for name in each_tab(page):
        if found := page.eval_on_selector("#nini-panel", MEASURE):
            problems[name] = found
        screenshot(page, f"33b-{width}px-{name}")
    assert problems == {}
    shown = tabs(page)
    assert len(shown) == 6 and all(tab["title"] and tab["icon"] >= 14 for tab in shown), shown
    if width == 250:  # six names do not fit beside their icons: icons alone, the names as tooltips
        assert not any(tab["named"] for tab in shown), shown


def test_the_tabs_show_their_names_when_they_fit(page: Any) -> None:
    set_panel_width(page, 900)
    shown = tabs(page)
    assert all(tab["named"] for tab in shown), shown
    assert all(tab["title"] == tab["label"] for tab in shown), shown  # the tooltip is the tab's name
    assert page.eval_on_selector("#nini-panel", MEASURE) == []
    screenshot(page, "33b-900px-chat")
    set_panel_width(page, 250)


def style(page: Any, selector: str) -> dict[str, str]:
    return page.eval_on_selector(
        selector,
        "b => { const s = getComputedStyle(b); "
        "return {opacity: s.opacity, background: s.backgroundColor, color: s.color}; }",
    )


def test_a_primary_button_looks_enabled_and_a_disabled_one_disabled(page: Any, llm: ScriptedLLM) -> None:
    idle_ask, idle_stop = style(page, ".nini-send"), style(page, ".nini-stop")
    assert page.is_enabled(".nini-send") and page.is_disabled(".nini-stop")
    assert idle_ask["opacity"] == "1" and float(idle_stop["opacity"]) < 0.6
    neutral = style(page, ".nini-new-chat")
    assert idle_ask["background"] != neutral["background"]  # the accept colour, not a plain button's
    llm.reply(text("never shown", delay_s=60))
    ask(page, "Take your time")
    page.wait_for_selector('.nini-chat[data-running="true"]')
    page.wait_for_selector(".nini-stop:enabled")
    busy_ask, busy_stop = style(page, ".nini-send"), style(page, ".nini-stop")
    assert page.is_disabled(".nini-send")
    assert busy_stop["opacity"] == "1" and float(busy_ask["opacity"]) < 0.6
    assert busy_stop["background"] not in (neutral["background"], busy_ask["background"])  # JupyterLab's warn colour
    screenshot(page, "33b-250px-running")
    page.click(".nini-stop")
    wait_idle(page)
    llm.clear()


def test_forms_meant_to_be_hidden_are_hidden_until_opened(page: Any) -> None:
    feedback = page.locator(".nini-feedback").first
    feedback.wait_for()
    form = feedback.locator(".nini-feedback-form")
    assert form.is_hidden()
    assert page.locator(".nini-feedback-form input[type='checkbox']:visible").count() == 0  # no extra Tab stops
    feedback.locator(".nini-feedback-down").click()
    form.wait_for(state="visible")
    assert form.locator("input[type='checkbox']:visible").count() >= 1
    screenshot(page, "33b-feedback-opened")
    show_tab(page, "skills")
    skill_form = page.locator(".nini-skill-form")
    assert skill_form.is_hidden()
    page.click(".nini-new-skill")
    skill_form.wait_for(state="visible")
    assert page.evaluate("document.activeElement.name") == "name"  # the form opens with its first field
    screenshot(page, "33b-new-skill-form")
    page.click(".nini-new-skill")
    skill_form.wait_for(state="hidden")
    show_tab(page, "chat")
