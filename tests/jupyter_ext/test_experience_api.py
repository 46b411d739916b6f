"""Experience memory over REST: a statement becomes a pending candidate, the curator's plan is shown,
nothing is written without ``confirm: true``, the library and its documents are readable, and what a
run was warned about is recorded with the session."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.jupyter_ext.conftest import new_session
from tests.jupyter_ext.test_agent_api import events_until_done
from tests.jupyter_ext.test_ask_kernel_api import jp_server_config  # noqa: F401 - a scripted model
from tests.llm_server import ScriptedLLM, text

pytestmark = pytest.mark.usefixtures("chinese_locale")  # the spec's Chinese words: auto under a zh locale

STATEMENT = "use the median, the revenue column has outliers"


def team_index(nini_home: Path) -> Path:
    return nini_home / "experience" / "team" / "INDEX.md"


async def pending_ids(api: Any) -> list[str]:
    return [item["candidate"]["id"] for item in (await api("GET", "experience", "pending")).data["candidates"]]


async def test_a_statement_is_deposited_only_with_the_users_confirmation(
    api: Any, jp_root_dir: Path, nini_home: Path
) -> None:
    added = await api("POST", "experience", "pending", body={"text": STATEMENT, "level": "team"})
    assert added.status == 201 and added.data["kept"][0]["alternatives"] == ["mean"]
    [item] = (await api("GET", "experience", "pending")).data["candidates"]
    assert item["number"] == 1 and set(item["evaluation"]) >= {
        "structure",
        "judgement",
        "reusability",
        "fit",
        "overall",
    }
    ids = [item["candidate"]["id"]]

    plan = (await api("POST", "experience", "plan", body={"ids": ids})).data
    assert [a["kind"] for a in plan["actions"]] == ["keep"] and plan["plan"][0].endswith("→ team")
    refused = await api("POST", "experience", "deposit", body={"ids": ids})
    assert (
        refused.status == 400 and refused.error["code"] == "INVALID_ARGUMENT" and "confirm" in refused.error["message"]
    )
    assert not team_index(nini_home).exists() and await pending_ids(api) == ids  # nothing written, still pending

    done = (await api("POST", "experience", "deposit", body={"ids": ids, "confirm": True, "plan": plan["plan"]})).data
    assert (
        done["line"].startswith("已沉淀 1 条经验：EXP-0001（team）") and "nini experience rollback team" in done["line"]
    )
    assert await pending_ids(api) == []
    [entry] = (await api("GET", "experience", "entries")).data["entries"]
    assert (entry["id"], entry["level"], entry["reference"]) == ("EXP-0001", "team", "team/knowledge/EXP-0001.md")
    document = (await api("GET", "experience", "entries", "team", "knowledge", "EXP-0001.md")).data["text"]
    assert "## Decision Shape" in document and "- Alternatives rejected: mean" in document
    assert str(nini_home) not in document


async def test_a_plan_that_changed_since_it_was_shown_is_not_carried_out(api: Any, nini_home: Path) -> None:
    await api("POST", "experience", "pending", body={"text": STATEMENT, "level": "team"})
    ids = await pending_ids(api)
    stale = await api(
        "POST", "experience", "deposit", body={"ids": ids, "confirm": True, "plan": ["[新增] something else → team"]}
    )
    assert stale.status == 409 and stale.error["code"] == "CONFLICT"
    assert not team_index(nini_home).exists()


async def test_the_users_statement_is_kept_unjudged_but_not_twice(api: Any) -> None:
    # stage 1 judges a model's candidates only: what the user states is kept, even general advice (issue 35)
    reply = await api("POST", "experience", "pending", body={"text": "数据分析前要先清洗数据"})
    assert (
        reply.status == 201
        and [c["quote"] for c in reply.data["kept"]] == ["数据分析前要先清洗数据"]
        and reply.data["dropped"] == []
    )
    again = await api("POST", "experience", "pending", body={"text": "数据分析前要先清洗数据"})
    assert again.status == 200 and again.data["kept"] == []  # already pending
    bad = await api("POST", "experience", "pending", body={"text": STATEMENT, "level": "everyone"})
    assert bad.status == 400 and bad.error["code"] == "INVALID_ARGUMENT"


async def test_deprecating_needs_confirmation_and_keeps_the_file(api: Any, nini_home: Path) -> None:
    await api("POST", "experience", "pending", body={"text": STATEMENT, "level": "team"})
    ids = await pending_ids(api)
    await api("POST", "experience", "deposit", body={"ids": ids, "confirm": True})
    refused = await api("POST", "experience", "entries", "team", "EXP-0001", "deprecate", body={})
    assert refused.status == 400
    done = await api("POST", "experience", "entries", "team", "EXP-0001", "deprecate", body={"confirm": True})
    assert done.status == 200
    assert (await api("GET", "experience", "entries")).data["entries"] == []
    [row] = (await api("GET", "experience", "entries", params={"all": "1"})).data["entries"]
    assert row["status"] == "deprecated" and (nini_home / "experience" / "team" / "knowledge" / "EXP-0001.md").is_file()


async def test_a_run_is_warned_and_the_warning_is_recorded_with_it(
    api: Any, jp_ws_fetch: Any, llm_server: ScriptedLLM
) -> None:
    await api("POST", "experience", "pending", body={"text": STATEMENT, "level": "team"})
    await api("POST", "experience", "deposit", body={"ids": await pending_ids(api), "confirm": True})
    session_id = await new_session(api)
    llm_server.reply(text("The median revenue is 12."), text("It rises."))  # no judgement said: no capture call
    await ask_when_free(api, jp_ws_fetch, session_id, "What is the typical revenue by region?")
    await ask_when_free(api, jp_ws_fetch, session_id, "Plot the temperature trend of the weather data")

    first, second = (request["messages"][0]["content"] for request in llm_server.requests)
    assert "⚠️ 高风险：Use the median, the revenue column has outliers（参考 team/knowledge/EXP-0001.md）" in first
    assert "⚠️" not in second and "经验提醒" not in second
    recorded = (await api("GET", "sessions", session_id, "experience")).data
    [matched] = [e for e in recorded if e["type"] == "experience_matched"]
    assert (
        matched["data"]["matches"][0]["file"] == "team/knowledge/EXP-0001.md" and matched["data"]["stage"] == "analysis"
    )


async def ask_when_free(api: Any, jp_ws_fetch: Any, session_id: str, message: str) -> list[dict[str, Any]]:
    """Ask once the session's previous run (its stop hooks included) has ended; its events to done."""
    ws = await jp_ws_fetch("nini", "api", "sessions", session_id, "events")
    for _ in range(100):
        reply = await api("POST", "sessions", session_id, "ask", body={"message": message})
        if reply.status != 409:
            break
        await asyncio.sleep(0.05)
    assert reply.status == 202, reply.body
    events: list[dict[str, Any]] = []
    while not events or events[-1]["type"] != "done":  # the socket replays earlier turns first
        events += [e for e in await events_until_done(ws) if e["turn_id"] == reply.data["turn_id"]]
    ws.close()
    return events


async def test_the_client_gives_the_stage_of_a_run(api: Any, jp_ws_fetch: Any, llm_server: ScriptedLLM) -> None:
    await api("POST", "experience", "pending", body={"text": STATEMENT, "level": "team", "stage": "review"})
    await api("POST", "experience", "deposit", body={"ids": await pending_ids(api), "confirm": True})
    session_id = await new_session(api)
    bad = await api("POST", "sessions", session_id, "ask", body={"message": "revenue?", "stage": "later"})
    assert bad.status == 400 and bad.error["code"] == "INVALID_ARGUMENT"
    llm_server.reply(text("Done."))
    ws = await jp_ws_fetch("nini", "api", "sessions", session_id, "events")
    reply = await api(
        "POST",
        "sessions",
        session_id,
        "ask",
        body={"message": "What is the typical revenue by region?", "stage": "review"},
    )
    assert reply.status == 202
    events = await events_until_done(ws)
    ws.close()
    [matched] = [e for e in events if e["type"] == "experience_matched"]
    assert matched["data"]["stage"] == "review" and matched["data"]["matches"][0]["id"] == "EXP-0001"
