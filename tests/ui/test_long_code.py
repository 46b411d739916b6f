"""A step whose code is longer than its ``tool_call`` event carries (64 KiB) still shows and copies
whole in the sidebar, in a real `jupyter lab` in Chromium with the scripted model (issue 36, item 5):
opening the step reads the code from ``GET .../tool-calls/ID``, since the record keeps it once."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from nini.skills.invoke import EVENT_CODE_CHARS
from tests.llm_server import ScriptedLLM, text, tool_call
from tests.ui.conftest import Lab, ask, open_sidebar, wait_idle, watched_page

pytestmark = pytest.mark.slow

TAIL = "print('the last line of a long step')"
LONG = "total = 0\n" + "total += 1  # a line of a long generated step\n" * (EVENT_CODE_CHARS // 46 + 50) + TAIL


@pytest.fixture(scope="module")
def page(browser: Any, lab: Lab) -> Iterator[Any]:
    with watched_page(browser, lab) as opened:
        opened.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=lab.url)
        yield opened


def test_a_long_steps_code_is_read_whole_when_the_step_opens(page: Any, llm: ScriptedLLM) -> None:
    assert len(LONG) > EVENT_CODE_CHARS
    open_sidebar(page)
    page.click(".nini-new-chat")
    llm.reply(tool_call("run_code", code=LONG, label="long step"), text("Done."))
    ask(page, "Run the long step")
    wait_idle(page)
    step = page.locator(".nini-log > .nini-step").last
    with page.expect_response(lambda r: "/tool-calls/" in r.url and r.status == 200):
        step.locator("summary").click()
    code = step.locator(".nini-step-code")
    page.wait_for_function("([node, tail]) => node.textContent.includes(tail)", arg=[code.element_handle(), TAIL])
    step.locator(".nini-step-body .nini-code-actions .nini-code-copy").click()
    page.wait_for_function("code => navigator.clipboard.readText().then(t => t === code)", arg=LONG)
