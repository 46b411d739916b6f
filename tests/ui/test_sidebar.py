"""The nini sidebar end to end: a real `jupyter lab`, Debian's Chromium, the scripted model.

One lab and one page for the module, in the order a user goes: open the tab, ask, watch the steps,
stop a slow run, reopen a session, use the notebook's variables, then skills, reports and models.
Every state is saved as a screenshot. The last test runs the first check against the same lab with
nini's frontend disabled and expects it to fail: the checks look at something real.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

import pytest

from tests.llm_server import ScriptedLLM, text, tool_call
from tests.ui.conftest import (
    Lab,
    ask,
    current_session,
    free_port,
    new_page,
    open_notebook,
    open_session,
    open_sidebar,
    screenshot,
    wait_idle,
    widen_sidebar,
)

pytestmark = pytest.mark.slow

CHART_CODE = (
    "import matplotlib.pyplot as plt\nimport pandas as pd\n"
    "output_df = pd.DataFrame({'month': [1, 2, 3], 'revenue': [10.0, 12.5, 15.0]})\n"
    "print(output_df.to_string(index=False))\nplt.plot(output_df.month, output_df.revenue)\n"
    "result = float(output_df.revenue.sum())"
)
ANSWER = "Revenue grew every month, to **37.5** in all.\n\n| month | revenue |\n|---|---|\n| 3 | 15.0 |"


def steps(page: Any) -> list[dict[str, str]]:
    return page.eval_on_selector_all(
        ".nini-log > .nini-step", "nodes => nodes.map(n => ({name: n.dataset.name, status: n.dataset.status}))"
    )


def test_the_nini_tab_opens(page: Any) -> None:
    open_sidebar(page)
    widen_sidebar(page)
    tabs = page.eval_on_selector_all("#nini-panel .lm-TabBar-tab", "tabs => tabs.map(t => t.textContent.trim())")
    assert tabs == ["Chat", "Skills", "Reports", "Experience", "Preferences", "Models"]
    assert page.get_attribute(".nini-send", "aria-label") == "Ask nini"
    screenshot(page, "01-sidebar-open")


def test_asking_streams_the_answer_and_shows_each_step(page: Any, llm: ScriptedLLM, lab: Lab) -> None:
    llm.reply(
        tool_call("run_code", code=CHART_CODE, label="monthly revenue"),
        tool_call("run_code", code="revenue_total = 1 / 0", label="a slip"),
        text(ANSWER, chunks=12),
    )
    ask(page, "How did revenue develop?")
    try:
        page.wait_for_selector(".nini-assistant strong")  # Markdown, once the answer is whole
    except Exception as exc:  # what the chat shows instead says why (an error card, a step still running)
        raise AssertionError(f"no answer; the chat shows: {page.inner_text('.nini-chat')[-2000:]!r}") from exc
    wait_idle(page)
    assert page.inner_text(".nini-user") == "How did revenue develop?"
    assert page.inner_text(".nini-assistant strong") == "37.5"
    assert page.eval_on_selector(".nini-assistant table", "t => t.rows.length") == 2
    assert steps(page) == [{"name": "run_code", "status": "succeeded"}, {"name": "run_code", "status": "failed"}]
    first = page.locator(".nini-log > .nini-step").nth(0)
    assert first.locator(".nini-step-language").inner_text() == "Python"
    assert first.locator(".nini-step-label").inner_text() == "monthly revenue"
    first.locator("summary").click()  # open the step: its code, highlighted, and its output
    first.locator(".nini-step-code pre").wait_for()
    assert "plt.plot(output_df.month" in first.locator(".nini-step-code").inner_text()
    assert "12.5" in first.locator(".nini-step-output").inner_text()
    chart = first.locator("img.nini-chart")
    chart.wait_for()
    page.wait_for_function("img => img.complete && img.naturalWidth > 100", arg=chart.element_handle())
    failed = page.locator(".nini-log > .nini-step").nth(1)
    assert "ZeroDivisionError" in failed.locator(".nini-step-error").inner_text()
    # the answer streamed: the model's reply came in 12 pieces, and the order on screen is the run's
    assert [e["type"] for e in lab_events(lab, current_session(page))].count("assistant_delta") >= 2
    order = page.eval_on_selector_all(".nini-log > *", "nodes => nodes.map(n => n.className.split(' ')[0])")
    assert order[:4] == ["nini-user", "nini-step", "nini-step", "nini-assistant"]
    screenshot(page, "02-answer-with-steps")


def lab_events(lab: Lab, session: str) -> list[dict[str, Any]]:
    """The session's events, read from the lab's store."""
    with sqlite3.connect(lab.home / "nini.db") as conn:
        rows = conn.execute("SELECT type, data FROM events WHERE session_id = ? ORDER BY seq", (session,)).fetchall()
    return [{"type": kind, "data": json.loads(data) if data else None} for kind, data in rows]


def test_stop_cancels_a_slow_run(page: Any, llm: ScriptedLLM) -> None:
    llm.reply(
        tool_call("run_code", code="import time\ntime.sleep(60)", label="slow step", timeout_s=120),
        text("never shown", delay_s=60),
    )
    ask(page, "Take your time")
    page.wait_for_selector('.nini-step[data-status="running"]')
    assert page.is_enabled(".nini-stop")
    page.click(".nini-stop")
    page.wait_for_selector('.nini-end[data-ended-by="canceled"]')
    wait_idle(page)
    assert "Stopped" in page.inner_text('.nini-end[data-ended-by="canceled"]')
    assert page.locator(".nini-step").last.get_attribute("data-status") == "stopped"  # grey, not a failure (issue 33)
    assert "never shown" not in page.inner_text(".nini-log")
    assert llm.clear() == 1  # the stopped turn never asked the model for its answer
    screenshot(page, "03-stopped")


def test_a_past_session_reopens_with_its_history(page: Any) -> None:
    before = steps(page)
    page.click(".nini-new-chat")
    assert page.locator(".nini-log > *").count() == 0
    open_session(page)  # the newest
    page.wait_for_selector('.nini-end[data-ended-by="canceled"]')
    assert steps(page) == before
    screenshot(page, "04-reopened")


def test_by_default_the_agents_code_runs_in_the_sandbox_with_copies_of_the_notebooks_variables(
    page: Any, lab: Lab, llm: ScriptedLLM
) -> None:
    open_notebook(page, lab, "analysis.ipynb", "import pandas as pd\nsales = pd.DataFrame({'amount': [3.0, 4.5]})")
    open_sidebar(page)
    page.click(".nini-new-chat")
    assert page.get_attribute(".nini-run-where", "data-value") == "sandbox"  # sandbox first
    where = page.inner_text(".nini-where")
    assert "nini's sandbox" in where and "analysis.ipynb's variables" in where
    llm.reply(
        tool_call(
            "run_code", code="print(sales.amount.sum())\nsales['amount'] = 0", label="your data", variables=["sales"]
        ),
        text("Your sales add up to 7.5."),
    )
    ask(page, "What do my sales add up to?")
    page.wait_for_selector(".nini-assistant:has-text('7.5')")
    wait_idle(page)
    assert steps(page) == [{"name": "run_code", "status": "succeeded"}]
    step = page.locator(".nini-log > .nini-step").last
    assert step.locator(".nini-step-where").inner_text() == "sandboxed"
    step.locator("summary").click()
    output = step.locator(".nini-step-output").inner_text()
    assert "7.5" in output and "sales is a copy of the notebook's" in output  # a copy of the notebook's `sales`
    assert page.locator(".nini-approval").count() == 0  # nothing ran in the user's kernel: nothing to approve
    screenshot(page, "05-sandbox-with-variables")


def test_a_skill_switched_off_leaves_the_enabled_list(page: Any, lab: Lab) -> None:
    page.click('#nini-panel .lm-TabBar-tab:has-text("Skills")')
    row = page.locator('.nini-skill[data-name="data-quality-check"]')
    row.wait_for()
    assert row.locator('input[type="checkbox"]').is_checked()
    row.locator('input[type="checkbox"]').uncheck()
    page.wait_for_selector('.nini-skill-message:has-text("data-quality-check disabled")')
    enabled = {record["name"] for record in lab.nini("GET", "skills?enabled=true")}
    assert "data-quality-check" not in enabled and "run_code" in enabled
    page.fill(".nini-skill-search", "quality")
    assert page.locator(".nini-skill").count() == 1
    screenshot(page, "06-skills")
    row.locator('input[type="checkbox"]').check()
    page.fill(".nini-skill-search", "")


def test_a_new_skill_from_the_form_appears_in_the_list(page: Any, lab: Lab) -> None:
    page.click(".nini-new-skill")
    page.fill('.nini-skill-form input[name="name"]', "revenue-by-month")
    page.fill('.nini-skill-form textarea[name="description"]', "Sum revenue per month and chart the trend.")
    page.select_option('.nini-skill-form select[name="category"]', "statistics")
    page.click('.nini-skill-form button[type="submit"]')
    page.wait_for_selector('.nini-skill[data-name="revenue-by-month"]')
    assert (lab.home / "skills" / "revenue-by-month" / "SKILL.md").is_file()
    assert "revenue-by-month" in {record["name"] for record in lab.nini("GET", "skills")}
    page.locator('.nini-skill[data-name="revenue-by-month"] .nini-skill-open').click()
    page.wait_for_selector("#nini-skill-revenue-by-month .cm-content")
    assert "name: revenue-by-month" in page.inner_text("#nini-skill-revenue-by-month .cm-content")
    screenshot(page, "07-new-skill-in-editor")


def test_a_report_opens_in_a_sandboxed_frame(page: Any) -> None:
    page.click('#nini-panel .lm-TabBar-tab:has-text("Chat")')
    open_session(page)  # the newest
    page.click('#nini-panel .lm-TabBar-tab:has-text("Reports")')
    page.click(".nini-generate-report")
    frame = page.locator("iframe.nini-report-frame")
    frame.wait_for(state="visible")
    assert frame.get_attribute("sandbox") == ""
    heading = page.frame_locator("iframe.nini-report-frame").locator("h1")
    heading.wait_for()
    assert heading.inner_text().strip()
    assert page.locator(".nini-report .nini-download").count() >= 2
    screenshot(page, "08-report")


def test_testing_a_provider_with_a_dead_url_shows_why(page: Any) -> None:
    page.click('#nini-panel .lm-TabBar-tab:has-text("Models")')
    page.wait_for_selector('.nini-provider[data-name="local"]')
    page.fill('.nini-provider-form input[name="name"]', "offline")
    page.fill('.nini-provider-form input[name="base_url"]', f"http://127.0.0.1:{free_port()}/v1")
    page.fill('.nini-provider-form input[name="model"]', "nothing")
    page.click(".nini-provider-test")
    page.wait_for_selector('.nini-provider-result[data-ok="false"]')
    reason = page.inner_text(".nini-provider-result")
    assert reason.startswith("Failed: ") and len(reason) > len("Failed: ") + 5
    screenshot(page, "09-provider-test")


def test_testing_every_purpose_calls_each_first_choice_once(page: Any, llm: ScriptedLLM) -> None:
    page.click('#nini-panel .lm-TabBar-tab:has-text("Models")')
    before = len(llm.requests)
    llm.reply(text("OK"))
    page.click(".nini-models-test-all")
    page.wait_for_selector('.nini-models-tested-line[data-ok="true"]')
    lines = page.locator(".nini-models-tested-line").all_inner_texts()
    assert len(lines) == 1 and lines[0].startswith("OK: local/") and "chat" in lines[0]
    assert len(llm.requests) == before + 1 and llm.requests[-1]["max_tokens"] == 5


def test_without_the_extension_the_sidebar_check_fails(browser: Any, lab: Lab) -> None:
    """The negative control: the same first check against the same lab, its page loaded with nini's
    frontend disabled."""
    with lab.without_frontend():
        page = new_page(browser, lab)
    try:
        with pytest.raises(Exception) as failed:
            open_sidebar(page, timeout_ms=5_000)
        assert "Timeout" in type(failed.value).__name__
        screenshot(page, "99-extension-disabled")
    finally:
        page.close()
