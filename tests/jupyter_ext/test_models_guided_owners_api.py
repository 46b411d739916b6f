"""The guided model setup and lasting feedback on a server that names its users (``X-Test-User``;
carol is an admin): a new session made by an ask is its asker's; anyone may ask whether a configured
provider's key variable is set, only an administrator of any other name; and feedback on another
user's session is not read back, as a missing session."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from traitlets.config import Config

from tests.jupyter_ext.test_agent_api import events_until_done
from tests.jupyter_ext.test_owners_api import HEADER, HeaderIdentityProvider, as_user  # noqa: F401 - fixture
from tests.llm_server import ScriptedLLM, text


@pytest.fixture
def jp_server_config(nini_home: Path, llm_server: ScriptedLLM, monkeypatch: pytest.MonkeyPatch) -> Config:
    monkeypatch.setenv("NINI_GUIDED_KEY", "sk-guided-0123456789abcdefSECRET")
    monkeypatch.delenv("NINI_GUIDED_OTHER", raising=False)
    provider = {
        "name": "keyed",
        "kind": "openai",
        "base_url": llm_server.base_url,
        "model": "k",
        "api_key_env": "NINI_GUIDED_KEY",
    }
    nini_home.mkdir(parents=True, exist_ok=True)
    (nini_home / "settings.json").write_text(
        json.dumps({"server": {"admins": ["carol"]}, "llm": {"providers": [provider], "max_retries": 0}})
    )
    return Config(
        {
            "ServerApp": {
                "jpserver_extensions": {"jupyter_ext": True},
                "identity_provider_class": HeaderIdentityProvider,
            },
            "NiniExtensionApp": {"nini_home": str(nini_home)},
        }
    )


async def test_an_ask_makes_a_session_of_the_askers_and_its_feedback_is_theirs(
    as_user: Any, jp_ws_fetch: Any, llm_server: ScriptedLLM
) -> None:
    llm_server.reply(text("Hello, alice."))
    started = await as_user("alice", "POST", "ask", body={"message": "hi"})
    assert started.status == 202
    session_id = started.data["session_id"]
    assert (await as_user("alice", "GET", "sessions", session_id)).data["owner"] == "alice"
    assert [s["id"] for s in (await as_user("bob", "GET", "sessions")).data] == []
    ws = await jp_ws_fetch(
        "nini", "api", "sessions", session_id, "events", params={"since": "0"}, headers={HEADER: "alice"}
    )
    turn = (await events_until_done(ws))[-1]["turn_id"]
    ws.close()
    assert (await as_user("alice", "POST", "feedback", body={"run_id": turn, "action": "accept"})).status == 201
    assert (await as_user("alice", "GET", "sessions", session_id, "feedback")).data == {turn: "accept"}
    assert (await as_user("carol", "GET", "sessions", session_id, "feedback")).data == {
        turn: "accept"
    }  # an admin sees all
    hidden = await as_user("bob", "GET", "sessions", session_id, "feedback")
    assert hidden.status == 404 and hidden.error["code"] == "NOT_FOUND"


async def test_only_administrators_ask_of_any_key_variable(as_user: Any) -> None:
    configured = await as_user("bob", "POST", "models", "key-variable", body={"name": "NINI_GUIDED_KEY"})
    assert configured.data == {"name": "NINI_GUIDED_KEY", "set": True}
    other = await as_user("bob", "POST", "models", "key-variable", body={"name": "NINI_GUIDED_OTHER"})
    assert other.status == 403 and other.error["code"] == "POLICY_VIOLATION"
    assert (await as_user("carol", "POST", "models", "key-variable", body={"name": "NINI_GUIDED_OTHER"})).data == {
        "name": "NINI_GUIDED_OTHER",
        "set": False,
    }
