"""What the sidebar's guided model setup and feedback stand on, over REST against a real server
(issue 33, items 7 and 8): an ask refused for want of a model leaves no session behind (POST
/nini/api/ask makes its session only once every check has passed); a provider saved without a
name is INVALID_ARGUMENT, not NOT_FOUND of an unknown route; whether a key variable is set, never
its value; and the feedback on a session's outputs read back when it is opened again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from traitlets.config import Config

from tests.conftest import scripted_model_settings, write_settings
from tests.jupyter_ext.test_agent_api import events_until_done
from tests.llm_server import ScriptedLLM, text

SECRET = "sk-guided-0123456789abcdefSECRET"
NO_MODEL = Config({"ServerApp": {"jpserver_extensions": {"jupyter_ext": True}}})


@pytest.fixture
def jp_server_config(nini_home: Path, llm_server: ScriptedLLM, monkeypatch: pytest.MonkeyPatch) -> Config:
    monkeypatch.setenv("NINI_GUIDED_KEY", SECRET)
    monkeypatch.delenv("NINI_GUIDED_UNSET", raising=False)
    write_settings(nini_home, scripted_model_settings(llm_server))
    return Config(
        {"ServerApp": {"jpserver_extensions": {"jupyter_ext": True}}, "NiniExtensionApp": {"nini_home": str(nini_home)}}
    )


@pytest.mark.parametrize("jp_server_config", [NO_MODEL])
async def test_an_ask_refused_for_want_of_a_model_leaves_no_session(api: Any) -> None:
    before = (await api("GET", "sessions")).data
    refused = await api("POST", "ask", body={"message": "how many rows?"})
    assert refused.status == 503 and refused.error["code"] == "NO_MODEL_AVAILABLE"
    bad = await api("POST", "ask", body={"message": "  "})
    assert bad.status == 400 and bad.error["code"] == "INVALID_ARGUMENT"
    assert (await api("GET", "sessions")).data == before == []


async def test_an_ask_without_a_session_makes_one_and_runs_the_turn(
    api: Any, jp_ws_fetch: Any, llm_server: ScriptedLLM
) -> None:
    llm_server.reply(text("Forty-two rows."))
    started = await api("POST", "ask", body={"message": "How many rows are there in sales?"})
    assert started.status == 202 and set(started.data) == {"turn_id", "session_id"}
    [session] = (await api("GET", "sessions")).data
    assert session["id"] == started.data["session_id"] and session["title"] == "How many rows are there in sales?"
    ws = await jp_ws_fetch("nini", "api", "sessions", session["id"], "events", params={"since": "0"})
    done = (await events_until_done(ws))[-1]
    assert done["turn_id"] == started.data["turn_id"] and done["data"]["answer"] == "Forty-two rows."
    ws.close()
    # a session named in the URL answers as before: no session_id in the reply
    llm_server.reply(text("Still 42."))
    again = await api("POST", "sessions", session["id"], "ask", body={"message": "sure?"})
    assert again.status == 202 and set(again.data) == {"turn_id"}


@pytest.mark.parametrize("path", [("models", "providers", ""), ("models", "providers")])
async def test_a_provider_saved_without_a_name_is_invalid_not_an_unknown_route(
    api: Any, nini_home: Path, path: tuple[str, ...]
) -> None:
    before = (nini_home / "settings.json").read_bytes()
    reply = await api("PUT", *path, body={"kind": "openai", "base_url": "http://localhost:11434/v1", "model": "m"})
    assert (
        reply.status == 400 and reply.error["code"] == "INVALID_ARGUMENT" and "needs a name" in reply.error["message"]
    )
    assert (await api("DELETE", *path)).error["code"] == "INVALID_ARGUMENT"
    assert (nini_home / "settings.json").read_bytes() == before


async def test_whether_a_key_variable_is_set_never_its_value(api: Any) -> None:
    assert (await api("POST", "models", "key-variable", body={"name": "NINI_GUIDED_KEY"})).data == {
        "name": "NINI_GUIDED_KEY",
        "set": True,
    }
    assert (await api("POST", "models", "key-variable", body={"name": "NINI_GUIDED_UNSET"})).data == {
        "name": "NINI_GUIDED_UNSET",
        "set": False,
    }
    for pasted in (SECRET, "a1b2c3d4e5f6a7b8c9d0e1f2", "", None):
        refused = await api("POST", "models", "key-variable", body={"name": pasted})
        assert refused.status == 400 and refused.error["code"] == "INVALID_ARGUMENT"
        assert SECRET.encode() not in refused.raw and b"a1b2c3d4e5f6" not in refused.raw
    secret = await api("POST", "models", "key-variable", body={"name": "JUPYTER_TOKEN"})
    assert secret.status == 403 and secret.error["code"] == "POLICY_VIOLATION"


async def test_the_feedback_on_a_session_is_read_back_latest_first(
    api: Any, jp_ws_fetch: Any, llm_server: ScriptedLLM
) -> None:
    llm_server.reply(text("One."), text("Two."))
    session_id = (await api("POST", "sessions")).data["id"]
    ws = await jp_ws_fetch("nini", "api", "sessions", session_id, "events")
    turns = []
    for question in ("first?", "second?"):
        assert (await api("POST", "sessions", session_id, "ask", body={"message": question})).status == 202
        turns.append((await events_until_done(ws))[-1]["turn_id"])
    ws.close()
    assert (await api("GET", "sessions", session_id, "feedback")).data == {}
    for run, action in ((turns[0], "reject"), (turns[0], "accept"), (turns[1], "partial")):
        assert (await api("POST", "feedback", body={"run_id": run, "action": action})).status == 201
    assert (await api("GET", "sessions", session_id, "feedback")).data == {turns[0]: "accept", turns[1]: "partial"}
    other = (await api("POST", "sessions")).data["id"]
    assert (await api("GET", "sessions", other, "feedback")).data == {}
    assert (await api("GET", "sessions", "nosuchsession", "feedback")).error["code"] == "NOT_FOUND"


@pytest.mark.parametrize("url", ["localhost:11434", "ftp://127.0.0.1/v1", "http:///v1"])
async def test_a_provider_with_a_base_url_that_is_no_http_url_is_refused(api: Any, nini_home: Path, url: str) -> None:
    """Issue 35: a base_url without scheme or host was saved, and failed only at the first question."""
    before = (nini_home / "settings.json").read_bytes()
    reply = await api("PUT", "models", "providers", "ollama", body={"kind": "openai", "base_url": url, "model": "m"})
    assert reply.status == 400 and reply.error["code"] == "INVALID_ARGUMENT"
    assert f"base_url {url!r} is not an http(s) URL with a host" in reply.error["message"]
    assert (nini_home / "settings.json").read_bytes() == before
