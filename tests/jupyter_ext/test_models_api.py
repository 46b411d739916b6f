"""/nini/api/models: what is configured and usable, saving and removing providers (used at once,
without a restart), and testing one with a single tiny real call."""

from __future__ import annotations

import json
import socket
import threading
from pathlib import Path
from typing import Any

import pytest
from traitlets.config import Config

from tests.conftest import write_settings
from tests.jupyter_ext.test_agent_api import events_until_done
from tests.llm_server import ScriptedLLM, text

SECRET = "sk-test-0123456789abcdefSECRET"


@pytest.fixture
def jp_server_config(nini_home: Path, llm_server: ScriptedLLM, monkeypatch: pytest.MonkeyPatch) -> Config:
    monkeypatch.setenv("NINI_TEST_KEY", SECRET)  # the server process reads keys from its environment
    monkeypatch.delenv("NINI_TEST_UNSET_KEY", raising=False)
    providers = [
        {"name": "local", "kind": "openai", "base_url": llm_server.base_url, "model": "m", "vision_models": ["m-vl"]},
        {
            "name": "keyed",
            "kind": "openai",
            "base_url": llm_server.base_url,
            "model": "k",
            "api_key_env": "NINI_TEST_KEY",
        },
        {
            "name": "nokey",
            "kind": "openai",
            "base_url": "https://example.invalid/v1",
            "model": "x",
            "api_key_env": "NINI_TEST_UNSET_KEY",
        },
        {"name": "off", "kind": "openai", "base_url": llm_server.base_url, "model": "o", "enabled": False},
    ]
    write_settings(
        nini_home,
        {"llm": {"providers": providers, "max_retries": 0, "purposes": {"deep_reasoning": {"provider": "nokey"}}}},
    )
    return Config(
        {"ServerApp": {"jpserver_extensions": {"jupyter_ext": True}}, "NiniExtensionApp": {"nini_home": str(nini_home)}}
    )


def stored_providers(home: Path) -> list[dict[str, Any]]:
    return json.loads((home / "settings.json").read_text())["llm"]["providers"]


def closed_port() -> int:
    """A port of 127.0.0.1 that nothing listens on: bound, then closed."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def test_models_show_every_provider_and_each_purpose_chain_without_a_key(api: Any) -> None:
    reply = await api("GET", "models")
    assert reply.status == 200 and SECRET.encode() not in reply.raw
    providers = {p["name"]: p for p in reply.data["providers"]}
    assert list(providers) == ["local", "keyed", "nokey", "off"]
    assert providers["local"] == {
        "name": "local",
        "kind": "openai",
        "base_url": providers["local"]["base_url"],
        "model": "m",
        "api_key_env": None,
        "vision_models": ["m-vl"],
        "enabled": True,
        "input_per_mtok": None,
        "output_per_mtok": None,
        "currency": None,
        "usable": True,
        "reason": None,
    }
    assert providers["keyed"]["usable"] is True and providers["keyed"]["api_key_env"] == "NINI_TEST_KEY"
    assert providers["nokey"]["usable"] is False and "NINI_TEST_UNSET_KEY" in providers["nokey"]["reason"]
    assert providers["off"]["usable"] is False and "disabled" in providers["off"]["reason"]
    purposes = reply.data["purposes"]
    assert set(purposes) >= {"chat", "deep_reasoning", "image_analysis", "summarize"}
    assert [(c["provider"], c["model"]) for c in purposes["chat"]["chain"]] == [("local", "m"), ("keyed", "k")]
    skipped = {(s["provider"], s["reason"].split()[0]) for s in purposes["deep_reasoning"]["skipped"]}
    assert ("nokey", "environment") in skipped and ("off", "provider") in skipped
    assert purposes["image_analysis"]["chain"] == [{"provider": "local", "model": "m-vl", "source": "priority"}]
    assert purposes["chat"]["error"] is None


async def test_a_saved_provider_is_used_at_once_and_the_others_are_kept(
    api: Any, nini_home: Path, llm_server: ScriptedLLM
) -> None:
    body = {"kind": "openai", "base_url": llm_server.base_url, "model": "fresh", "vision_models": []}
    reply = await api("PUT", "models", "providers", "brand-new", body=body)
    assert reply.status == 200 and reply.data["provider"]["usable"] is True
    assert [p["name"] for p in stored_providers(nini_home)] == ["local", "keyed", "nokey", "off", "brand-new"]
    assert stored_providers(nini_home)[-1] == {
        "name": "brand-new",
        "kind": "openai",
        "base_url": llm_server.base_url,
        "model": "fresh",
        "vision_models": [],
        "enabled": True,
    }
    # replacing one: its new fields, nothing else of the file changed
    settings_before = json.loads((nini_home / "settings.json").read_text())
    edited = await api(
        "PUT",
        "models",
        "providers",
        "local",
        body={"name": "local", "kind": "openai", "model": "m2", "base_url": llm_server.base_url, "usable": True},
    )
    assert edited.status == 200 and edited.data["provider"]["model"] == "m2"
    settings_after = json.loads((nini_home / "settings.json").read_text())
    assert settings_after["llm"]["providers"][0]["model"] == "m2"
    assert {k: v for k, v in settings_after["llm"].items() if k != "providers"} == {
        k: v for k, v in settings_before["llm"].items() if k != "providers"
    }
    chain = (await api("GET", "models")).data["purposes"]["chat"]["chain"]
    assert chain[0] == {"provider": "local", "model": "m2", "source": "priority"}


@pytest.mark.parametrize("jp_server_config", [Config({"ServerApp": {"jpserver_extensions": {"jupyter_ext": True}}})])
async def test_without_a_model_ask_is_refused_until_a_provider_is_saved(
    api: Any, jp_ws_fetch: Any, llm_server: ScriptedLLM
) -> None:
    session_id = (await api("POST", "sessions")).data["id"]
    assert (await api("POST", "sessions", session_id, "ask", body={"message": "hi"})).status == 503
    saved = await api(
        "PUT",
        "models",
        "providers",
        "ollama",
        body={"kind": "openai", "base_url": llm_server.base_url, "model": "qwen"},
    )
    assert saved.status == 200
    llm_server.reply(text("hello from the new provider"))
    ws = await jp_ws_fetch("nini", "api", "sessions", session_id, "events")
    assert (await api("POST", "sessions", session_id, "ask", body={"message": "hi"})).status == 202
    assert (await events_until_done(ws))[-1]["data"]["answer"] == "hello from the new provider"
    assert llm_server.requests[-1]["model"] == "qwen"
    ws.close()


async def test_saving_during_a_model_call_does_not_break_it(
    api: Any, jp_ws_fetch: Any, llm_server: ScriptedLLM
) -> None:
    held = threading.Event()  # the model answers once the save is done
    llm_server.reply(text("slow but whole", hold=held))
    session_id = (await api("POST", "sessions")).data["id"]
    ws = await jp_ws_fetch("nini", "api", "sessions", session_id, "events")
    assert (await api("POST", "sessions", session_id, "ask", body={"message": "take your time"})).status == 202
    await llm_server.async_wait_for_requests(
        len(llm_server.requests) + 1
    )  # the call is under way on the current router
    assert (
        await api("PUT", "models", "providers", "other", body={"model": "o2", "base_url": llm_server.base_url})
    ).status == 200
    held.set()
    done = (await events_until_done(ws))[-1]["data"]
    assert (done["answer"], done["ended_by"]) == ("slow but whole", "finished")
    ws.close()


@pytest.mark.parametrize(
    "body",
    [
        {"model": "m", "api_key": SECRET},
        {"model": "m", "key": SECRET},
        {"model": "m", "apiKey": "anything"},
        {"model": "m", "api_key_env": SECRET},
        {"model": "m", "api_key_env": "a1b2c3d4e5f6a7b8c9d0e1f2"},
        {"model": SECRET},
        {"model": "m", "base_url": f"https://user:{SECRET}@api.example.com/v1"},
        {"model": "m", "base_url": f"https://api.example.com/v1?api_key={SECRET}"},
    ],
    ids=["api_key", "key", "apiKey", "key-as-env", "random-env", "key-as-model", "url-userinfo", "url-query"],
)
async def test_a_key_is_never_accepted(api: Any, nini_home: Path, body: dict[str, Any]) -> None:
    before = (nini_home / "settings.json").read_bytes()
    reply = await api("PUT", "models", "providers", "leaky", body=body)
    assert reply.status == 400 and reply.error["code"] == "INVALID_ARGUMENT"
    assert "put the key in an environment variable and name it in api_key_env" in reply.error["message"]
    assert SECRET.encode() not in reply.raw and b"a1b2c3d4e5f6" not in reply.raw
    assert (nini_home / "settings.json").read_bytes() == before
    tested = await api("POST", "models", "test", body={"name": "leaky", **body})
    assert tested.status == 400 and SECRET.encode() not in tested.raw


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ({"kind": "gemini", "model": "m"}, "kind"),
        ({"kind": "openai"}, "model"),
        ({"model": "m", "vision_models": "m-vl"}, "vision_models"),
        ({"model": "m", "colour": "red"}, "colour"),
        ({"model": "m", "name": "someone-else"}, "name"),
        ("[1]", "JSON object"),
    ],
)
async def test_invalid_providers_are_refused_and_nothing_is_written(
    api: Any, nini_home: Path, body: Any, needle: str
) -> None:
    before = (nini_home / "settings.json").read_bytes()
    reply = await api("PUT", "models", "providers", "bad", body=body)
    assert reply.status == 400 and reply.error["code"] == "INVALID_ARGUMENT" and needle in reply.error["message"]
    assert (nini_home / "settings.json").read_bytes() == before


async def test_a_broken_settings_file_is_left_as_it_is(api: Any, nini_home: Path) -> None:
    (nini_home / "settings.json").write_text('{"llm": {"providers": [ broken')
    reply = await api("PUT", "models", "providers", "new", body={"model": "m"})
    assert (
        reply.status == 400 and reply.error["code"] == "INVALID_ARGUMENT" and "settings.json" in reply.error["message"]
    )
    assert str(nini_home) not in reply.error["message"]
    assert (nini_home / "settings.json").read_text() == '{"llm": {"providers": [ broken'


async def test_delete_removes_one_provider(api: Any, nini_home: Path) -> None:
    reply = await api("DELETE", "models", "providers", "keyed")
    assert reply.status == 200 and reply.data == {"deleted": "keyed"}
    assert [p["name"] for p in stored_providers(nini_home)] == ["local", "nokey", "off"]
    assert [p["name"] for p in (await api("GET", "models")).data["providers"]] == ["local", "nokey", "off"]
    again = await api("DELETE", "models", "providers", "keyed")
    assert again.status == 404 and again.error["code"] == "NOT_FOUND"


async def test_testing_a_configured_provider_makes_one_tiny_call(api: Any, llm_server: ScriptedLLM) -> None:
    llm_server.reply(text("OK"))
    reply = await api("POST", "models", "test", body={"name": "keyed"})
    assert reply.status == 200
    assert reply.data["ok"] is True and reply.data["provider"] == "keyed" and reply.data["model"] == "k"
    assert isinstance(reply.data["latency_ms"], int) and reply.data["latency_ms"] >= 0
    (request,) = llm_server.requests
    assert request["model"] == "k" and request["max_tokens"] == 5 and request["temperature"] == 0
    assert request["messages"] == [{"role": "user", "content": "Reply with OK"}] and "tools" not in request
    assert llm_server.request_headers[0]["authorization"] == f"Bearer {SECRET}"  # the key, from the environment
    assert SECRET.encode() not in reply.raw


async def test_testing_an_unsaved_provider_saves_nothing(api: Any, nini_home: Path, llm_server: ScriptedLLM) -> None:
    before = (nini_home / "settings.json").read_bytes()
    llm_server.reply(text("OK"))
    body = {"name": "draft", "kind": "openai", "base_url": llm_server.base_url, "model": "draft-model"}
    reply = await api("POST", "models", "test", body=body)
    assert (
        reply.data["ok"] is True
        and reply.data["provider"] == "draft"
        and llm_server.requests[0]["model"] == "draft-model"
    )
    assert (nini_home / "settings.json").read_bytes() == before


async def test_a_dead_url_fails_quickly_with_a_reason(api: Any) -> None:
    body = {"kind": "openai", "base_url": f"http://127.0.0.1:{closed_port()}/v1", "model": "m"}
    reply = await api("POST", "models", "test", body=body)  # refused at once: no retry waits (not timed here)
    assert reply.status == 200 and reply.data["ok"] is False and reply.data["provider"] == "unsaved"
    assert reply.data["reason"].startswith("UPSTREAM_ERROR: cannot reach provider unsaved")


async def test_an_upstream_error_and_a_missing_key_are_reasons(api: Any, llm_server: ScriptedLLM) -> None:
    from tests.llm_server import error

    llm_server.reply(error(401, message="invalid api key"))
    refused = (await api("POST", "models", "test", body={"name": "local"})).data
    assert refused["ok"] is False and refused["reason"].startswith("UPSTREAM_ERROR: provider local answered HTTP 401")
    missing = (await api("POST", "models", "test", body={"name": "nokey"})).data
    assert missing == {
        "ok": False,
        "provider": "nokey",
        "reason": "NO_MODEL_AVAILABLE: environment variable NINI_TEST_UNSET_KEY (its API key) is not set; "
        "set the variable NINI_TEST_UNSET_KEY",
    }
    assert len(llm_server.requests) == 1  # no call without the key


@pytest.mark.parametrize(("body", "status"), [({"name": "nobody"}, 404), ({}, 400), ({"name": 3}, 400)])
async def test_wrong_tests(api: Any, body: Any, status: int, llm_server: ScriptedLLM) -> None:
    reply = await api("POST", "models", "test", body=body)
    assert reply.status == status and llm_server.requests == []


async def test_testing_every_purposes_first_choice_for_the_sidebar(api: Any, llm_server: ScriptedLLM) -> None:
    """Issue 22: the sidebar tests what each purpose would call, as `nini models test` does."""
    llm_server.reply(text("OK"), text("OK"))
    results = (await api("POST", "models", "test", body={"all": True})).data["results"]
    assert [(r["target"], r["ok"]) for r in results] == [("local/m", True), ("local/m-vl", True)]
    assert "chat" in results[0]["detail"] and results[1]["detail"].endswith("(image_analysis)")
    assert [request["model"] for request in llm_server.requests] == ["m", "m-vl"]  # never the unusable provider


async def test_the_single_user_may_edit_but_never_test_with_the_servers_token(
    api: Any, monkeypatch: pytest.MonkeyPatch, nini_home: Path
) -> None:
    """A personal server's one user administers it (GET says editable), and still no test sends
    JUPYTER_TOKEN to the URL in the form: a capture server on 127.0.0.1 receives nothing."""
    monkeypatch.setenv("JUPYTER_TOKEN", "the-servers-own-token-0123")
    assert (await api("GET", "models")).data["editable"] is True
    with ScriptedLLM() as capture:
        form = {"kind": "openai", "base_url": capture.base_url, "model": "m", "api_key_env": "JUPYTER_TOKEN"}
        refused = await api("POST", "models", "test", body=form)
        saved = await api("PUT", "models", "providers", "evil", body=form)
        assert capture.requests == []
    assert (refused.status, refused.error["code"]) == (saved.status, saved.error["code"]) == (403, "POLICY_VIOLATION")
    assert "evil" not in (nini_home / "settings.json").read_text()
