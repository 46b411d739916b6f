"""The sidebar working on the user's notebook, end to end: a real `jupyter lab`, Debian's Chromium,
the scripted model.

In the order a user goes: open a notebook and run it, ask (the request carries the active cell and
its output, and the model's prompt shows them), attach a cell and a file, then the agent proposes
cells: one shows as a pending cell and Accept and run inserts and runs it, one replaces a cell and
shows a diff and Reject leaves the notebook as it was; both decisions are recorded, and a reload
shows them as decided. The notebook is read from the page, as the user sees it.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.llm_server import ScriptedLLM, text, tool_call
from tests.ui.conftest import (
    Lab,
    ask,
    current_session,
    new_page,
    open_session,
    open_sidebar,
    screenshot,
    show_files,
    wait_for_connected_kernel,
    wait_idle,
)

pytestmark = pytest.mark.slow

SETUP = "import pandas as pd\nsales = pd.DataFrame({'amount': [3.0, 4.5]})"
TOTAL = "sales.amount.sum()"
NOTES = "Q3 sales exclude the returns of week 12."
CELLS = ".jp-NotebookPanel .jp-Notebook .jp-Cell"


def notebook_cells(page: Any) -> list[dict[str, str]]:
    """The open notebook's cells as the page shows them: type and source, in order."""
    return page.eval_on_selector_all(
        CELLS,
        """cells => cells.map(cell => ({
        type: cell.classList.contains('jp-MarkdownCell') ? 'markdown' : 'code',
        source: (cell.querySelector('.jp-InputArea-editor .cm-content')?.innerText ?? '').replace(/\\n$/, '')}))""",
    )


def cell(page: Any, index: int) -> Any:
    return page.locator(CELLS).nth(index)


def asked_body(page: Any, question: str) -> dict[str, Any]:
    """Ask ``question`` and return the body of the ask request the page sent."""
    with page.expect_request(lambda request: "/ask" in request.url and request.method == "POST") as asked:
        ask(page, question)
    return asked.value.post_data_json


def session_id(page: Any) -> str:
    return current_session(page)


def proposals(lab: Lab, page: Any) -> dict[str, dict[str, Any]]:
    return {p["proposal_id"]: p for p in lab.nini("GET", f"sessions/{session_id(page)}/proposals")}


def propose(page: Any, llm: ScriptedLLM, question: str, **arguments: Any) -> tuple[Any, str]:
    """Ask ``question`` with the model scripted to call propose_cell with ``arguments``; the pending
    cell that shows and its proposal id (the tool call's id), once the turn is over."""
    llm.reply(tool_call("propose_cell", **arguments), text("I proposed a cell."))
    ask(page, question)
    pending = page.locator(".nini-pending-cell", has_text=arguments["source"])
    pending.wait_for()
    wait_idle(page)
    return pending, pending.get_attribute("data-id")


def test_a_notebook_is_open_and_run(page: Any, lab: Lab) -> None:
    lab.request("PUT", "/api/contents/notes.txt", {"type": "file", "format": "text", "content": NOTES})
    lab.request(
        "PUT",
        "/api/contents/sales.ipynb",
        {
            "type": "notebook",
            "content": {
                "cells": [
                    {"cell_type": "code", "source": source, "metadata": {}, "outputs": [], "execution_count": None}
                    for source in (SETUP, TOTAL)
                ],
                "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
                "nbformat": 4,
                "nbformat_minor": 5,
            },
        },
    )
    show_files(page)
    page.dblclick('.jp-DirListing-item[title*="sales.ipynb"]')
    page.wait_for_selector(CELLS)
    wait_for_connected_kernel(lab)
    cell(page, 0).locator(".jp-InputArea-editor").click()
    page.keyboard.press("Shift+Enter")
    page.keyboard.press("Control+Enter")  # run the last cell in place: no new empty cell after it
    cell(page, 1).locator(".jp-OutputArea-output:has-text('7.5')").wait_for()
    cell(page, 1).locator(".jp-InputArea-editor").click()  # the active cell: the one the user looks at
    open_sidebar(page)
    page.click(".nini-new-chat")
    assert [c["source"] for c in notebook_cells(page)] == [SETUP, TOTAL]


def test_the_ask_carries_the_active_cell_and_its_output(page: Any, llm: ScriptedLLM) -> None:
    llm.reply(text("Your notebook sums the sales."))
    body = asked_body(page, "What does my notebook do?")
    notebook = body["notebook"]
    assert notebook["name"] == "sales.ipynb"  # the file name only, never where it lives
    assert notebook["active"] == 1
    assert [c["source"] for c in notebook["cells"]] == [SETUP, TOTAL]
    assert notebook["cells"][1]["outputs"] == "np.float64(7.5)"  # its text/plain output
    assert notebook["attached_cells"] == [] and notebook["attached_files"] == {}
    page.wait_for_selector(".nini-assistant:has-text('sums the sales')")
    wait_idle(page)
    request = next(r for r in llm.requests if "What does my notebook do?" in str(r["messages"]))
    system = request["messages"][0]
    assert system["role"] == "system"
    assert TOTAL in system["content"] and "7.5" in system["content"]  # the agent's prompt shows the cell


def test_a_cell_and_a_file_attached_go_with_the_next_question(page: Any, llm: ScriptedLLM) -> None:
    cell(page, 0).locator(".jp-InputPrompt").click(button="right")
    page.click('.lm-Menu-item:has-text("nini: Attach cell to question")')
    show_files(page)
    page.click('.jp-DirListing-item[title*="notes.txt"]', button="right")
    page.click('.lm-Menu-item:has-text("nini: Attach file to question")')
    page.wait_for_selector('.nini-chip[data-kind="file"]')
    chips = page.eval_on_selector_all(
        ".nini-chip", "chips => chips.map(c => c.dataset.kind + ':' + c.innerText.trim())"
    )
    assert chips == [
        "notebook:sales.ipynb",
        "variables:variables of sales.ipynb",
        "cell:sales.ipynb · cell 0",
        "file:notes.txt",
    ], chips
    screenshot(page, "10-attachments")
    llm.reply(text("Noted."))
    body = asked_body(page, "Keep these in mind")
    assert body["notebook"]["attached_cells"] == [0]
    assert body["notebook"]["attached_files"] == {"notes.txt": NOTES}
    wait_idle(page)
    assert page.locator('.nini-chip[data-kind="cell"], .nini-chip[data-kind="file"]').count() == 0  # they went with it


def test_a_proposal_shows_as_a_pending_cell_and_accept_and_run_inserts_it(
    page: Any, lab: Lab, llm: ScriptedLLM
) -> None:
    before = notebook_cells(page)
    pending, proposal = propose(
        page, llm, "Propose a cell for the mean", source="sales.amount.mean()", language="python", position=2
    )
    card = f'.nini-proposal[data-id="{proposal}"]'
    assert pending.locator(".nini-proposal-source").inner_text() == "sales.amount.mean()"
    assert cell(page, 1).locator(".nini-pending-cell").count() == 1  # shown after cell 1, where it would go
    assert notebook_cells(page) == before  # shown, not inserted: nothing changes without a click
    assert page.get_attribute(card, "data-status") == "pending"
    assert proposals(lab, page)[proposal]["status"] == "pending"
    screenshot(page, "11-pending-cell")
    pending.locator(".nini-proposal-run").click()
    page.wait_for_selector(f'{card}[data-status="accepted"]')
    pending.wait_for(state="detached")
    # the inserted cell's editor is drawn a frame or two after the model changes (a loaded machine: more)
    page.locator(f"{CELLS} .jp-InputArea-editor .cm-content").nth(len(before)).wait_for()
    assert notebook_cells(page) == [*before, {"type": "code", "source": "sales.amount.mean()"}]
    cell(page, 2).locator(".jp-OutputArea-output:has-text('3.75')").wait_for()  # and it ran
    recorded = proposals(lab, page)[proposal]
    assert (recorded["status"], recorded["ran"]) == ("accepted", True)
    assert page.locator(f"{card} button").count() == 0
    screenshot(page, "12-accepted")


def test_reject_of_a_replacement_leaves_the_notebook_unchanged(page: Any, lab: Lab, llm: ScriptedLLM) -> None:
    before = notebook_cells(page)
    pending, proposal = propose(
        page, llm, "Change the total", source="sales.amount.sum() / 2", language="python", replaces=1
    )
    assert pending.locator(".nini-diff-del").all_inner_texts() == [TOTAL]  # the diff against cell 1
    assert pending.locator(".nini-diff-add").all_inner_texts() == ["sales.amount.sum() / 2"]
    assert cell(page, 1).locator(f'.nini-pending-cell[data-id="{proposal}"]').count() == 1  # shown at that cell
    screenshot(page, "13-pending-replacement")
    pending.locator(".nini-proposal-reject").click()
    page.wait_for_selector(f'.nini-proposal[data-id="{proposal}"][data-status="rejected"]')
    pending.wait_for(state="detached")
    assert notebook_cells(page) == before
    assert proposals(lab, page)[proposal]["status"] == "rejected"


def test_decided_proposals_show_their_status_after_a_reload(browser: Any, page: Any, lab: Lab) -> None:
    session = session_id(page)
    decided = {p["source"]: p["proposal_id"] for p in proposals(lab, page).values()}
    mean, half = decided["sales.amount.mean()"], decided["sales.amount.sum() / 2"]
    reloaded = new_page(browser, lab)
    try:
        open_sidebar(reloaded)
        open_session(reloaded, session)
        reloaded.wait_for_selector(f'.nini-proposal[data-id="{half}"][data-status="rejected"]')
        assert reloaded.get_attribute(f'.nini-proposal[data-id="{mean}"]', "data-status") == "accepted"
        assert reloaded.inner_text(f'.nini-proposal[data-id="{mean}"] .nini-proposal-status') == "Accepted and run"
        assert reloaded.locator(".nini-proposal button").count() == 0
        assert reloaded.locator(".nini-pending-cell").count() == 0
        screenshot(reloaded, "14-decided-after-reload")
    finally:
        reloaded.close()
