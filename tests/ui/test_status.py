"""The live status line in a real `jupyter lab` in Chromium (issue 33, item 2): the question is in the
log before the server has even answered the request; "Thinking · N s" while the model thinks;
"Starting sandbox…" while the session's kernel starts, then "Running step 1 · N.N s"; Stop beside
it as the active action; after Stop the line clears once the run has ended and the step is grey
"stopped". The model is held by the test (ScriptedLLM's ``hold``) and a slow step waits for a file
the test writes: no timing is asserted."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests import timeouts
from tests.llm_server import ScriptedLLM, text, tool_call
from tests.ui.conftest import (
    Lab,
    ask,
    current_session,
    open_sidebar,
    screenshot,
    wait_idle,
    watched_page,
    widen_sidebar,
)

pytestmark = pytest.mark.slow

WAIT_FOR = (
    "from pathlib import Path\nimport time\nwhile not Path({name!r}).exists():\n    "
    "time.sleep(0.05)\nresult = 'went on'"
)
# Every text the status line shows, in order, kept by the page (a MutationObserver sees each change).
RECORD = """() => {
  window.niniStatusSeen = [];
  const text = document.querySelector('.nini-status-text');
  const keep = () => { const now = text.textContent; if (now && window.niniStatusSeen.at(-1) !== now) window.niniStatusSeen.push(now); };
  new MutationObserver(keep).observe(text, { childList: true, characterData: true, subtree: true });
  keep();
}"""

STARTED_THEN_RUNNING = """() => {
  const seen = window.niniStatusSeen, started = seen.findIndex(s => /^Starting (sandbox|the kernel)… · \\d+ s$/.test(s));
  return started >= 0 && seen.slice(started + 1).some(s => /^Running step 1 · \\d+\\.\\d s$/.test(s));
}"""


@pytest.fixture(scope="module")
def page(browser: Any, lab: Lab) -> Iterator[Any]:
    with watched_page(browser, lab) as opened:
        open_sidebar(opened)
        widen_sidebar(opened)
        opened.evaluate(RECORD)
        yield opened


def until(page: Any, condition: Callable[[], bool], timeout_s: float = 30) -> None:
    """Until ``condition()``, letting Playwright deliver its events (a held request) meanwhile."""
    deadline = time.monotonic() + timeouts.timeout(timeout_s)
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        page.wait_for_timeout(20)  # not a wait for time to pass: Playwright's events arrive during it


def status(page: Any) -> str:
    return page.inner_text(".nini-status-text")


def wait_status(page: Any, pattern: str) -> str:
    """Until the status line reads ``pattern`` (a regular expression); what it read."""
    page.wait_for_function(
        "pattern => new RegExp(pattern).test(document.querySelector('.nini-status-text')?.textContent ?? '')",
        arg=pattern,
    )
    return status(page)


def seen(page: Any) -> list[str]:
    return page.evaluate("() => window.niniStatusSeen")


def session_workspace(lab: Lab, page: Any) -> Any:
    """The workspace of the chat's session (its id on the page)."""
    return lab.home / "sessions" / current_session(page) / "workspace"


def test_the_question_shows_at_once_and_thinking_counts_while_the_model_is_slow(page: Any, llm: ScriptedLLM) -> None:
    thinking = threading.Event()
    llm.reply(text("I thought it over.", hold=thinking))
    held: list[Any] = []
    asks = re.compile(r"/nini/api/ask(\?.*)?$")
    page.route(asks, lambda route: held.append(route))  # the request waits until the test lets it go
    ask(page, "Is the model slow today?")
    until(page, lambda: len(held) == 1)  # the ask is held before it reaches the server ...
    echo = page.locator(".nini-log .nini-user.nini-mod-pending")
    assert echo.is_visible()  # ... and the question is in the log already, the status line going
    assert echo.inner_text() == "Is the model slow today?"
    assert page.input_value(".nini-input") == ""
    assert re.fullmatch(r"Thinking · \d+ s", status(page))
    screenshot(page, "33a-echo-before-the-server")
    held[0].continue_()
    page.unroute(asks)
    wait_status(page, r"^Thinking · [1-9]\d* s$")  # the seconds tick while the model is held
    echo.wait_for(state="detached")  # the server's record of the question took its place
    assert page.locator(".nini-log .nini-user", has_text="Is the model slow today?").count() == 1
    assert page.is_enabled(".nini-stop") and page.is_visible(".nini-stop")
    screenshot(page, "33a-thinking")
    thinking.set()
    wait_idle(page)
    page.wait_for_selector(".nini-status-line", state="hidden")
    assert "I thought it over." in page.inner_text(".nini-log")


def test_a_slow_step_shows_the_kernel_start_then_its_number_and_seconds(page: Any, lab: Lab, llm: ScriptedLLM) -> None:
    llm.reply(tool_call("run_code", code=WAIT_FOR.format(name="go"), label="wait for go"), text("Done."))
    page.evaluate("() => { window.niniStatusSeen = []; }")
    ask(page, "Run a slow step")  # the session's first code: its sandboxed kernel starts now
    # the step's line may show for a moment before the kernel's start is told (its event comes after the
    # step's): until the start has shown and the step's line is back after it
    page.wait_for_function(STARTED_THEN_RUNNING)
    shown = seen(page)
    started = next(n for n, line in enumerate(shown) if re.match(r"Starting (sandbox|the kernel)… · \d+ s", line))
    assert any(re.match(r"Running step 1 · \d+\.\d s", line) for line in shown[started + 1 :]), shown
    assert page.locator(".nini-step").last.get_attribute("data-status") == "running"
    screenshot(page, "33a-running-step")
    (session_workspace(lab, page) / "go").write_text("")
    wait_idle(page)
    assert page.locator(".nini-step").last.get_attribute("data-status") == "succeeded"
    page.wait_for_selector(".nini-status-line", state="hidden")
    shown = seen(page)
    assert shown[0].startswith("Thinking") and any(s.startswith("Running step 1") for s in shown), shown


def test_stop_is_the_active_action_and_the_stopped_step_is_grey(page: Any, llm: ScriptedLLM) -> None:
    llm.reply(tool_call("run_code", code=WAIT_FOR.format(name="never"), label="waits for nothing"), text("never shown"))
    page.evaluate("() => { window.niniStatusSeen = []; }")
    ask(page, "Something that never ends")
    wait_status(page, r"^Running step 1 · ")
    stop = page.locator(".nini-status-line .nini-stop")  # beside the status, not among the composer's buttons
    assert stop.is_enabled()
    looks = stop.evaluate("b => { const s = getComputedStyle(b); return [s.opacity, s.backgroundColor, s.cursor]; }")
    assert looks[0] == "1" and looks[2] != "not-allowed", looks  # an enabled Stop does not look disabled
    stop.click()
    wait_idle(page)
    page.wait_for_selector(".nini-status-line", state="hidden")  # cleared once the run has ended
    step = page.locator(".nini-step").last
    assert step.get_attribute("data-status") == "stopped"
    assert step.locator(".nini-step-status").inner_text() == "stopped"
    assert any(s.startswith("Stopping…") for s in seen(page)), seen(page)
    assert "never shown" not in page.inner_text(".nini-log")
    assert llm.clear() == 1  # the stopped turn never asked the model again
    screenshot(page, "33a-stopped")
