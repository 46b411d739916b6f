"""What a code step's events tell a viewer (the sidebar): where its code runs from the start, and
its outputs in order (a DataFrame's HTML table, streams, the error with its traceback, nini's
notes), bounded. Real kernels through ``invoke``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from nini.skills.step_outputs import EVENT_OUTPUT_CHARS, EVENT_RICH_CHARS, event_outputs
from tests.conftest import Harness, runtime_harness


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Harness]:
    yield from runtime_harness(tmp_path_factory)


def step_events(harness: Harness, session: Any, code: str) -> dict[str, dict[str, Any]]:
    """The data of the step's tool_call and code_execution events, by type."""
    harness.call(session, "run_code", code=code)
    events = harness.runtime.store.list_events(session.id)
    return {e["type"]: e["data"] for e in events if e["type"] in ("tool_call", "code_execution")}


def test_a_dataframe_a_print_and_an_error_reach_the_viewer_in_order(harness: Harness) -> None:
    session = harness.session()
    code = (
        "import pandas as pd\nprint('before')\n"
        "display(pd.DataFrame({'region': ['north', 'south'], 'revenue': [12.5, 7.0]}))\n"
        "import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.show()\n1 / 0"
    )
    events = step_events(harness, session, code)
    assert events["tool_call"]["isolation"] == events["code_execution"]["isolation"]  # known before it ran
    outputs = events["code_execution"]["outputs"]
    assert [o["output_type"] for o in outputs] == ["stream", "display_data", "error"]  # the chart is a file
    assert outputs[0] == {"output_type": "stream", "name": "stdout", "text": "before\n"}
    table = outputs[1]["data"]
    assert "<table" in table["text/html"] and "north" in table["text/html"] and "revenue" in table["text/plain"]
    error = outputs[2]
    assert error["ename"] == "ZeroDivisionError" and any("1 / 0" in line for line in error["traceback"])
    assert events["code_execution"]["artifacts"]  # the chart, shown from its file


def test_nini_notes_follow_the_outputs_and_long_outputs_are_bounded() -> None:
    outputs = [
        {"output_type": "stream", "name": "stdout", "text": "x" * 3 * EVENT_OUTPUT_CHARS},
        {
            "output_type": "display_data",
            "data": {"text/html": "<b>" + "h" * EVENT_RICH_CHARS + "</b>", "text/plain": "the text twin"},
            "metadata": {},
        },
        {
            "output_type": "execute_result",
            "data": {"text/html": "<i>small</i>", "text/plain": "small"},
            "metadata": {},
            "execution_count": 1,
        },
    ]
    shown = event_outputs(outputs, "x\nnini: sales is a copy of the notebook's\n")
    assert len(shown[0]["text"]) < EVENT_OUTPUT_CHARS + 100 and "characters left out" in shown[0]["text"]
    assert shown[1]["data"] == {"text/plain": "the text twin"}  # over the event's HTML budget: its text only
    assert shown[2]["data"] == {"text/html": "<i>small</i>", "text/plain": "small"}
    assert shown[3] == {"output_type": "stream", "name": "stderr", "text": "nini: sales is a copy of the notebook's\n"}
    assert event_outputs([], "nini: a note\n") == []  # no outputs recorded (R): the viewer shows stdout and stderr


def test_a_step_that_runs_no_code_says_no_isolation(harness: Harness) -> None:
    session = harness.session()
    harness.call(session, "list_datasets")
    (call,) = [e["data"] for e in harness.runtime.store.list_events(session.id) if e["type"] == "tool_call"]
    assert "isolation" not in call
