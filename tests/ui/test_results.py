"""Readable results and where code runs, in a real `jupyter lab` in Chromium with the scripted model
(issue 33, items 5 and 6).

In the order a user meets them: a DataFrame step shows a table and its printed text keeps its
rows whole, scrolling sideways; an error reads its line first with the traceback folded; the code
of a step and of an answer goes into the notebook with Insert below and Replace cell, and onto the
clipboard with Copy (read back from the saved notebook and the clipboard); a chart opens large on
click and goes into the notebook as an attachment that survives saving; "Sandbox | Notebook kernel"
is chosen by keyboard; every step carries its badge, and a proposal made inside a task sits with
the step that made it.
"""

from __future__ import annotations

import base64
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests import timeouts
from tests.llm_server import ScriptedLLM, text, tool_call
from tests.ui.conftest import Lab, ask, open_notebook, open_sidebar, screenshot, wait_idle, watched_page, widen_sidebar

pytestmark = pytest.mark.slow

NOTEBOOK = "results.ipynb"
CELLS = ".jp-NotebookPanel .jp-Notebook .jp-Cell"
WIDE = (
    "import pandas as pd\n"
    "wide = pd.DataFrame({f'measurement_{i:02d}': [i * 1000.25, i * 2000.5, i * 3000.75] for i in range(16)})\n"
    "print(wide.to_string())\n"
    "wide"
)
ANSWER = "The frame has 16 columns. To see it again:\n\n```python\nwide.describe()\n```"
FAILING = "def ratio(a, b):\n    return a / b\n\nratio(1, 0)"
CHART = "import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.title('trend')"


@pytest.fixture(scope="module")
def page(browser: Any, lab: Lab) -> Iterator[Any]:
    with watched_page(browser, lab) as opened:
        opened.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=lab.url)
        yield opened


def last_step(page: Any) -> Any:
    return page.locator(".nini-log > .nini-step").last


def notebook_sources(page: Any) -> list[str]:
    """The open notebook's cells' sources as the page shows them."""
    return page.eval_on_selector_all(
        CELLS,
        "cells => cells.map(c => (c.querySelector('.jp-InputArea-editor .cm-content')?.innerText ?? "
        "'').replace(/\\n$/, ''))",
    )


def saved_cells(page: Any, lab: Lab, count: int) -> list[dict[str, Any]]:
    """Save the notebook (Ctrl+S, as a user does) and read its cells back from the file, once it has ``count``.
    Read only once the save has answered: jupyter_server's GET of a notebook it is writing in place reads
    it half written, "restores" it from the save's backup, and the file is lost (a loaded machine did it)."""
    page.locator(CELLS).first.locator(".jp-InputPrompt").click()  # the notebook has the focus: its shortcut applies
    with page.expect_response(lambda r: r.request.method == "PUT" and f"/api/contents/{NOTEBOOK}" in r.url):
        page.keyboard.press("Control+s")
    deadline = time.monotonic() + timeouts.timeout(30)
    while True:
        cells = lab.get(f"/api/contents/{NOTEBOOK}?content=1")["content"]["cells"]
        if len(cells) == count or time.monotonic() > deadline:
            return cells
        time.sleep(0.2)  # a poll of the file the save writes


def source(cell: dict[str, Any]) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def test_a_dataframe_shows_as_a_table_and_wide_text_scrolls_sideways(page: Any, lab: Lab, llm: ScriptedLLM) -> None:
    open_notebook(page, lab, NOTEBOOK, "x = 1")
    open_sidebar(page)
    widen_sidebar(page)
    page.click(".nini-new-chat")
    llm.reply(tool_call("run_code", code=WIDE, label="wide frame"), text(ANSWER))
    ask(page, "Show me a wide frame")
    wait_idle(page)
    step = last_step(page)
    table = step.locator(".nini-step-output .nini-output-display table")
    table.wait_for()
    assert table.locator("tbody tr").count() == 3
    assert "measurement_15" in table.locator("thead").inner_text()
    printed = step.locator(".nini-step-output pre.nini-output-stream")
    shape = printed.evaluate("""pre => {
        const style = getComputedStyle(pre), box = pre.parentElement;
        return {whiteSpace: style.whiteSpace, lines: Math.round(pre.getBoundingClientRect().height / parseFloat(style.lineHeight)),
                textLines: pre.textContent.trimEnd().split('\\n').length, scrollWidth: box.scrollWidth,
                clientWidth: box.clientWidth, resize: getComputedStyle(box).resize};
    }""")
    assert shape["textLines"] == 4  # the header and three rows
    assert shape["lines"] == shape["textLines"], shape  # no row wrapped mid-row
    assert shape["scrollWidth"] > shape["clientWidth"], shape  # it scrolls sideways instead
    assert shape["resize"] == "vertical"
    screenshot(page, "33c-dataframe-table")


def test_an_error_reads_its_line_first_with_the_traceback_folded(page: Any, llm: ScriptedLLM) -> None:
    llm.reply(tool_call("run_code", code=FAILING, label="ratio"), text("It failed."))
    ask(page, "Divide by zero")
    wait_idle(page)
    step = last_step(page)
    error = step.locator(".nini-step-error")
    assert error.locator(":scope > *").first.inner_text() == "CODE_ERROR: ZeroDivisionError: division by zero (line 2)"
    order = step.evaluate("s => [...s.children].map(c => c.className)")
    assert order.index("nini-step-error") < order.index("nini-step-output")  # the error before any output
    fold = error.locator("details.nini-traceback")
    assert fold.evaluate("d => !d.open") and fold.locator("pre").is_hidden()
    assert "return a / b" in fold.locator("pre").text_content()
    assert step.locator(".nini-step-output").is_hidden()  # the traceback is not repeated as output
    screenshot(page, "33c-error-folded")
    fold.locator("summary").click()
    fold.locator("pre").wait_for(state="visible")
    screenshot(page, "33c-error-traceback-open")


def test_insert_below_replace_cell_and_copy_put_the_code_where_asked(page: Any, lab: Lab) -> None:
    assert notebook_sources(page) == ["x = 1", ""]  # Shift+Enter ran the cell and added one: the active cell
    step = page.locator(".nini-log > .nini-step").first
    step.locator("summary").click()
    actions = step.locator(".nini-step-body .nini-code-actions")
    assert actions.locator("button").evaluate_all("bs => bs.map(b => b.getAttribute('aria-label'))") == [
        "Copy",
        "Insert below",
        "Replace cell",
    ]
    actions.locator(".nini-code-insert").click()
    page.locator(CELLS).nth(2).locator(".cm-content").wait_for()
    assert notebook_sources(page) == ["x = 1", "", WIDE]
    answer = page.locator(".nini-assistant .nini-codeblock").first
    answer.locator(".nini-code-insert").click()  # an answer's code block: below the active cell, now the inserted one
    page.locator(CELLS).nth(3).locator(".cm-content").wait_for()
    page.locator(CELLS).nth(1).locator(".jp-InputPrompt").click()  # the empty cell becomes the active one
    actions.locator(".nini-code-replace").click()
    screenshot(page, "33c-inserted-and-replaced")
    cells = saved_cells(page, lab, 4)
    assert [source(c) for c in cells] == ["x = 1", WIDE, WIDE, "wide.describe()"]
    assert all(c["cell_type"] == "code" for c in cells)
    actions.locator(".nini-code-copy").click()
    page.wait_for_function("code => navigator.clipboard.readText().then(t => t === code)", arg=WIDE)


def test_a_chart_opens_large_and_goes_into_the_notebook_as_an_attachment(page: Any, lab: Lab, llm: ScriptedLLM) -> None:
    llm.reply(tool_call("run_code", code=CHART, label="trend"), text("A chart."))
    ask(page, "Draw the trend")
    wait_idle(page)
    chart = last_step(page).locator("img.nini-chart")
    chart.wait_for()
    page.wait_for_function("img => img.complete && img.naturalWidth > 100", arg=chart.element_handle())
    small = chart.bounding_box()["width"]
    chart.click()
    large = page.locator(".jp-Dialog .nini-chart-large")
    large.wait_for()
    page.wait_for_function("img => img.complete && img.naturalWidth > 100", arg=large.element_handle())
    assert large.bounding_box()["width"] > small * 1.5
    screenshot(page, "33c-chart-large")
    page.keyboard.press("Escape")
    large.wait_for(state="detached")
    page.locator(CELLS).first.locator(".jp-InputPrompt").click()
    last_step(page).locator(".nini-chart-insert").click()
    shown = page.locator(CELLS).nth(1).locator(".jp-RenderedMarkdown img")
    shown.wait_for()
    page.wait_for_function("img => img.complete && img.naturalWidth > 100", arg=shown.element_handle())
    screenshot(page, "33c-chart-inserted")
    cells = saved_cells(page, lab, 5)
    inserted = cells[1]
    assert inserted["cell_type"] == "markdown"
    (name,) = inserted["attachments"]
    assert source(inserted) == f"![{name}](attachment:{name})"
    assert base64.b64decode(inserted["attachments"][name]["image/png"]).startswith(b"\x89PNG")


def test_sandbox_or_notebook_kernel_is_chosen_by_keyboard(page: Any) -> None:
    group = page.locator('.nini-run-where[role="radiogroup"]')
    checked = group.locator('[role="radio"][aria-checked="true"]')
    assert checked.get_attribute("data-value") == "sandbox"
    assert group.locator('[role="radio"]').evaluate_all("rs => rs.map(r => r.tabIndex)") == [0, -1]  # one Tab stop
    assert group.locator(".nini-run-where-explanation").count() == 2
    checked.focus()
    page.keyboard.press("ArrowRight")
    assert checked.get_attribute("data-value") == "kernel"
    assert page.evaluate("document.activeElement.dataset.value") == "kernel"
    assert f"{NOTEBOOK}'s kernel, not sandboxed" in page.inner_text(".nini-where")
    screenshot(page, "33c-where-notebook-kernel")
    page.keyboard.press("ArrowLeft")
    assert checked.get_attribute("data-value") == "sandbox"
    page.keyboard.press("End")
    assert checked.get_attribute("data-value") == "kernel"
    page.keyboard.press("Home")
    assert checked.get_attribute("data-value") == "sandbox"
    assert "nini's sandbox, with copies of" in page.inner_text(".nini-where")


def test_every_step_has_its_badge_and_a_tasks_proposal_sits_with_its_step(page: Any, llm: ScriptedLLM) -> None:
    llm.reply(
        tool_call("task__general", prompt="Propose a cell that adds one to x"),
        tool_call("propose_cell", source="x + 1", language="python", position=1),
        text("I proposed x + 1."),
        text("The sub-agent proposed x + 1."),
        tool_call("run_r_code", code="summary(c(1, 2, 3, 4))"),
        text("Done."),
    )
    ask(page, "Propose a cell through a task, then summarise in R")
    wait_idle(page, timeout_ms=timeouts.timeout_ms(120))
    card = page.locator(".nini-proposal").last
    place = card.evaluate("c => ({before: c.previousElementSibling?.dataset.name, within: c.parentElement.className})")
    assert place == {"before": "propose_cell", "within": "nini-step-children"}  # in the task, after its step
    badges = page.eval_on_selector_all(
        ".nini-step",
        """steps => steps.map(s => {
        const badge = s.querySelector(':scope > details > summary .nini-step-where');
        return [s.dataset.name, badge && !badge.hidden ? badge.textContent : null];
    })""",
    )
    assert all(badge for _, badge in badges), badges
    by_name = {name: badge for name, badge in badges}
    assert by_name["run_code"] == "sandboxed" and by_name["run_r_code"] == "R sandbox"
    assert by_name["task:general"] == "nini" and by_name["propose_cell"] == "nini"
    r_output = last_step(page).locator(".nini-step-output")
    assert "Median" in r_output.inner_text()
    r_output.evaluate("b => b.scrollIntoView({block: 'start'})")
    box = r_output.bounding_box()
    cap = r_output.evaluate("b => parseFloat(getComputedStyle(b).maxHeight)")
    page.mouse.move(box["x"] + box["width"] - 3, box["y"] + box["height"] - 3)  # the resize corner
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] - 3, box["y"] + cap + 150, steps=5)
    page.mouse.up()
    assert r_output.bounding_box()["height"] > cap + 100  # dragged taller than the default cap: no fixed box
    card.scroll_into_view_if_needed()
    screenshot(page, "33c-badges-and-task-proposal")
