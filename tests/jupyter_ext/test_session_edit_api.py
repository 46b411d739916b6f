"""The sidebar's session list over REST: search (``GET /nini/api/sessions?q=``), rename (``PATCH``) and
delete (``DELETE /nini/api/sessions/{id}``), against a real Jupyter server and the scripted model."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from traitlets.config import Config

from tests.conftest import scripted_model_settings, write_settings
from tests.jupyter_ext.conftest import new_session, workspace
from tests.llm_server import ScriptedLLM, text


@pytest.fixture
def jp_server_config(nini_home: Path, llm_server: ScriptedLLM) -> Config:
    write_settings(nini_home, scripted_model_settings(llm_server))  # ui.language auto: the client's language
    return Config(
        {
            "ServerApp": {"jpserver_extensions": {"jupyter_ext": True}},
            "MultiKernelManager": {"default_kernel_name": "python3"},
            "NiniExtensionApp": {"nini_home": str(nini_home)},
        }
    )


async def listed(api: Any, q: str | None = None) -> list[str]:
    return [row["title"] for row in (await api("GET", "sessions", params={"q": q} if q is not None else None)).data]


async def turn(api: Any, jp_ws_fetch: Any, session_id: str, message: str) -> list[dict[str, Any]]:
    """Ask and read the session's events until the turn's ``done``."""
    ws = await jp_ws_fetch("nini", "api", "sessions", session_id, "events")
    assert (await api("POST", "sessions", session_id, "ask", body={"message": message})).status == 202
    events: list[dict[str, Any]] = []
    while not events or events[-1]["type"] != "done":
        events.append(json.loads(await asyncio.wait_for(ws.read_message(), 60)))
    ws.close()
    return events


async def test_search_finds_titles_and_what_was_said_in_any_case(
    api: Any, jp_ws_fetch: Any, llm_server: ScriptedLLM
) -> None:
    sales = await new_session(api, "Sales by region")
    await new_session(api, "Churn 50%_model")
    llm_server.reply(text("Revenue grew in Q3."))
    await turn(api, jp_ws_fetch, sales, "How did the WIDGETS sell?")
    assert await listed(api, "sales") == ["Sales by region"]  # the title, any case
    assert await listed(api, "widgets") == ["Sales by region"]  # the user's question
    assert await listed(api, "revenue GREW") == ["Sales by region"]  # the model's answer
    assert await listed(api, "50%_") == ["Churn 50%_model"]  # % and _ are themselves, not wildcards
    assert await listed(api, "%") == ["Churn 50%_model"]
    assert await listed(api, "nothing like this") == []
    assert await listed(api, "  ") == await listed(api)  # an empty search lists all


async def test_rename_is_stored_and_checked(api: Any) -> None:
    session_id = await new_session(api, "first question, long")
    renamed = await api("PATCH", "sessions", session_id, body={"title": "  Q3 revenue\nreview  "})
    assert renamed.status == 200 and renamed.data["title"] == "Q3 revenue review"
    assert (await api("GET", "sessions", session_id)).data["title"] == "Q3 revenue review"
    for body in ({"title": ""}, {"title": "   "}, {"title": 3}, {}):
        refused = await api("PATCH", "sessions", session_id, body=body)
        assert (refused.status, refused.error["code"]) == (400, "INVALID_ARGUMENT"), body
    too_long = await api("PATCH", "sessions", session_id, body={"title": "x" * 201})  # limits.max_title_chars
    assert (too_long.status, too_long.error["code"]) == (413, "TOO_LARGE")
    missing = await api("PATCH", "sessions", "s0123456789ab", body={"title": "x"})
    assert (missing.status, missing.error["code"]) == (404, "NOT_FOUND")


async def test_delete_removes_the_record_and_the_workspace_but_follows_no_link(
    api: Any, nini_home: Path, tmp_path: Path
) -> None:
    session_id = await new_session(api, "to delete")
    ran = await api("POST", "sessions", session_id, "run-code", body={"code": "open('made.txt', 'w').write('x')"})
    assert ran.data["success"] is True
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("the user's own file")
    folder = workspace(nini_home, session_id)
    (folder / "link").symlink_to(outside)  # a link the agent's code could have made
    assert (folder / "made.txt").is_file()

    deleted = await api("DELETE", "sessions", session_id)
    assert deleted.status == 200 and deleted.data == {"deleted": session_id}
    assert not folder.parent.exists()
    assert (outside / "keep.txt").read_text() == "the user's own file"
    assert (await api("GET", "sessions", session_id)).error["code"] == "NOT_FOUND"
    assert (await api("GET", "sessions", session_id, "tool-calls")).error["code"] == "NOT_FOUND"
    assert session_id not in [row["id"] for row in (await api("GET", "sessions")).data]
    again = await api("DELETE", "sessions", session_id)
    assert (again.status, again.error["code"]) == (404, "NOT_FOUND")
    # the id is free again: nothing of the old session is left to clash with
    assert (await api("POST", "sessions", body={"id": session_id})).status == 201


async def test_a_running_session_is_not_deleted(api: Any, jp_ws_fetch: Any, llm_server: ScriptedLLM) -> None:
    session_id = await new_session(api, "busy")
    llm_server.reply(text("late", delay_s=60))
    ws = await jp_ws_fetch("nini", "api", "sessions", session_id, "events")
    assert (await api("POST", "sessions", session_id, "ask", body={"message": "take your time"})).status == 202
    assert json.loads(await asyncio.wait_for(ws.read_message(), 60))["type"] == "user_message"

    refused = await api("DELETE", "sessions", session_id, headers={"X-Nini-Language": "en"})
    assert (refused.status, refused.error["code"]) == (409, "CONFLICT")
    assert refused.error["message"] == f"session {session_id} is running; stop it first, then delete it"
    assert refused.error["details"] == {"session_id": session_id, "reason": "running"}
    in_chinese = await api("DELETE", "sessions", session_id, headers={"X-Nini-Language": "zh-CN"})
    assert in_chinese.error["message"] == f"会话 {session_id} 正在运行；请先停止它，再删除"
    assert (await api("GET", "sessions", session_id)).status == 200  # nothing of it went

    assert (await api("POST", "sessions", session_id, "cancel")).data == {"canceled": True}
    while json.loads(await asyncio.wait_for(ws.read_message(), 60))["type"] != "done":
        pass
    ws.close()
    llm_server.clear()
    assert (await api("DELETE", "sessions", session_id)).status == 200
