"""The agent and the user's notebook over REST: the ask request's notebook and the notebook
kernel's variables reach the model's prompt; read_notebook answers from them; propose_cell
proposals are listed and answered once each."""

from __future__ import annotations

import json
from typing import Any

from tests.jupyter_ext.conftest import new_session
from tests.jupyter_ext.test_agent_api import events_until_done
from tests.jupyter_ext.test_ask_kernel_api import in_kernel, jp_server_config, notebook_kernel  # noqa: F401
from tests.llm_server import ScriptedLLM, text, tool_call

NOTEBOOK = {
    "name": "sales.ipynb",
    "cells": [
        {"cell_type": "markdown", "source": "# Quarterly sales"},
        {"cell_type": "code", "source": "sales = load_sales()", "outputs": ""},
        {"cell_type": "code", "source": "sales.groupby('region').revenue.sum()", "outputs": "East    120\nWest     80"},
    ],
    "active": 2,
}


async def ask(api: Any, jp_ws_fetch: Any, session_id: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    ws = await jp_ws_fetch("nini", "api", "sessions", session_id, "events")
    reply = await api("POST", "sessions", session_id, "ask", body=body)
    assert reply.status == 202, reply.body
    events = await events_until_done(ws)
    ws.close()
    return events


async def test_the_prompt_describes_the_notebook_and_its_kernels_variables(
    api: Any, jp_fetch: Any, jp_ws_fetch: Any, llm_server: ScriptedLLM
) -> None:
    kernel_id = await notebook_kernel(jp_fetch)
    session_id = await new_session(api)
    setup = "import pandas as pd\nsales = pd.DataFrame({'region': ['East', 'West'] * 50, 'revenue': range(100)})"
    assert (await in_kernel(api, session_id, kernel_id, setup))["success"]
    count_before = (await in_kernel(api, session_id, kernel_id, "result = len(In)"))["result"]["result"]
    llm_server.reply(tool_call("read_notebook", start=1, end=3), text("Read it."))

    events = await ask(
        api, jp_ws_fetch, session_id, {"message": "what is in sales?", "kernel_id": kernel_id, "notebook": NOTEBOOK}
    )

    system = llm_server.requests[0]["messages"][0]["content"]
    assert "`sales`: DataFrame, 100 rows × 2 columns" in system and "`revenue` int64" in system
    assert "sales.groupby('region').revenue.sum()" in system and "East    120" in system  # the active cell
    assert "[cell 2, code, active]" in system and "sales.ipynb" in system
    assert next(e["data"] for e in events if e["type"] == "tool_result")["success"]
    read = json.loads(llm_server.requests[1]["messages"][-1]["content"])  # what the model got back
    assert [c["index"] for c in read["cells"]] == [1, 2] and read["total_cells"] == 3
    # describing the namespace ran silently: the kernel's input history did not grow
    count_after = (await in_kernel(api, session_id, kernel_id, "result = len(In)"))["result"]["result"]
    assert count_after == count_before + 1


async def test_a_bad_notebook_body_is_invalid_argument_before_any_turn(api: Any, llm_server: ScriptedLLM) -> None:
    session_id = await new_session(api)
    reply = await api("POST", "sessions", session_id, "ask", body={"message": "hi", "notebook": {"cells": "no"}})
    assert reply.status == 400 and reply.error["code"] == "INVALID_ARGUMENT" and "cells" in reply.error["message"]
    assert llm_server.requests == []


async def test_proposals_are_listed_and_answered_once(api: Any, jp_ws_fetch: Any, llm_server: ScriptedLLM) -> None:
    session_id = await new_session(api)
    llm_server.reply(
        tool_call("propose_cell", source="sales.plot()", replaces=2),
        tool_call("propose_cell", source="summary(df)", language="r"),
        text("Two cells proposed."),
    )
    events = await ask(api, jp_ws_fetch, session_id, {"message": "plot it", "notebook": NOTEBOOK})
    proposed = [e for e in events if e["type"] == "tool_result"]
    assert [e["data"]["success"] for e in proposed] == [True, True]
    first, second = (e["tool_call_id"] for e in proposed)

    listed = (await api("GET", "sessions", session_id, "proposals")).data
    assert [(p["proposal_id"], p["status"], p["position"]) for p in listed] == [
        (first, "pending", 2),
        (second, "pending", 3),
    ]
    assert "\n-sales.groupby('region').revenue.sum()\n+sales.plot()\n" in listed[0]["diff"]  # a line each
    assert listed[1]["source"] == "%%nini_r\nsummary(df)" and listed[1]["cell_type"] == "code"

    ws = await jp_ws_fetch("nini", "api", "sessions", session_id, "events")
    accepted = await api("POST", "sessions", session_id, "proposals", first, body={"decision": "accept", "ran": True})
    assert accepted.status == 200 and (accepted.data["status"], accepted.data["ran"]) == ("accepted", True)
    event = json.loads(await ws.read_message())
    while event["type"] != "proposal_decided":
        event = json.loads(await ws.read_message())
    assert event["tool_call_id"] == first and event["data"] == {"decision": "accepted", "ran": True}
    ws.close()
    again = await api("POST", "sessions", session_id, "proposals", first, body={"decision": "reject"})
    assert again.status == 409 and again.error["code"] == "CONFLICT"
    rejected = await api("POST", "sessions", session_id, "proposals", second, body={"decision": "reject", "ran": True})
    assert rejected.data["status"] == "rejected" and rejected.data["ran"] is False
    assert [p["status"] for p in (await api("GET", "sessions", session_id, "proposals")).data] == [
        "accepted",
        "rejected",
    ]

    unknown = await api("POST", "sessions", session_id, "proposals", "nope", body={"decision": "accept"})
    assert unknown.status == 404 and unknown.error["code"] == "NOT_FOUND"
    bad = await api("POST", "sessions", session_id, "proposals", first, body={"decision": "maybe"})
    assert bad.status == 400 and bad.error["code"] == "INVALID_ARGUMENT"
