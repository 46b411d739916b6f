"""Model providers are the server's, and no route sends an environment value where an administrator
did not configure it (issue 31, items 4 and 5).

On a server that names its users (``X-Test-User``; carol is an admin): bob sees the providers
read-only and cannot repoint, remove or test an unsaved one; every refusal leaves settings.json
and the router as they were. ``POST models/test`` calls a provider's own base URL with its own key
variable: a capture server on 127.0.0.1 named by the caller gets neither ``JUPYTER_TOKEN`` nor any
other variable the caller names, even from an admin, while a configured provider (the scripted
model server) is still tested with its own key.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from traitlets.config import Config

from tests.conftest import write_settings
from tests.jupyter_ext.test_owners_api import HeaderIdentityProvider, as_user  # noqa: F401 - fixture
from tests.llm_server import ScriptedLLM, text

KEY = "sk-test-provider-key-0123456789"
SECRETS = {
    "JUPYTER_TOKEN": "jupyter-token-value-0123",
    "JPY_API_TOKEN": "hub-token-value-0123",
    "COMPANY_DB_PASSWORD": "db-password-value-0123",
    "NINI_TEST_ARBITRARY": "arbitrary-value-0123",
}


@pytest.fixture
def capture() -> Iterator[ScriptedLLM]:
    """The attacker's server: records whatever reaches it."""
    with ScriptedLLM() as server:
        yield server


@pytest.fixture
def jp_server_config(nini_home: Path, llm_server: ScriptedLLM, monkeypatch: pytest.MonkeyPatch) -> Config:
    for name, value in {**SECRETS, "NINI_TEST_KEY": KEY}.items():
        monkeypatch.setenv(name, value)
    providers = [
        {
            "name": "shared",
            "kind": "openai",
            "base_url": llm_server.base_url,
            "model": "m",
            "api_key_env": "NINI_TEST_KEY",
        }
    ]
    write_settings(
        nini_home,
        {
            "llm": {"providers": providers, "max_retries": 0},
            "server": {"admins": ["carol"], "secret_env_deny": ["COMPANY_*"]},
        },
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


def settings_bytes(home: Path) -> bytes:
    return (home / "settings.json").read_bytes()


def leaked(server: ScriptedLLM) -> str:
    """Everything the capture server received, as one text to search."""
    return json.dumps([server.paths, server.requests, server.request_headers])


async def test_bob_sees_the_providers_read_only_and_cannot_repoint_them(
    as_user: Any, nini_home: Path, capture: ScriptedLLM, llm_server: ScriptedLLM
) -> None:
    before = settings_bytes(nini_home)
    shown = (await as_user("bob", "GET", "models")).data
    assert shown["editable"] is False and [p["name"] for p in shown["providers"]] == ["shared"]
    assert (await as_user("carol", "GET", "models")).data["editable"] is True

    repoint = {"kind": "openai", "base_url": capture.base_url, "model": "m", "api_key_env": "NINI_TEST_KEY"}
    for method, body in (("PUT", repoint), ("DELETE", None)):
        refused = await as_user("bob", method, "models", "providers", "shared", body=body)
        assert (refused.status, refused.error["code"]) == (403, "POLICY_VIOLATION"), refused.body
        assert "server.admins" in refused.error["message"]
    unsaved = await as_user("bob", "POST", "models", "test", body={"name": "shared", **repoint})
    assert (unsaved.status, unsaved.error["code"]) == (403, "POLICY_VIOLATION")
    assert settings_bytes(nini_home) == before and capture.requests == []

    # alice's turn still goes to the shared provider, with its key
    llm_server.reply(text("OK"))
    tested = (await as_user("bob", "POST", "models", "test", body={"name": "shared"})).data
    assert tested["ok"] is True and llm_server.request_headers[0]["authorization"] == f"Bearer {KEY}"
    assert KEY not in json.dumps(tested)
    assert capture.requests == []


@pytest.mark.parametrize("variable", sorted(SECRETS))
async def test_models_test_sends_no_variable_to_a_url_the_caller_names(
    as_user: Any, capture: ScriptedLLM, variable: str
) -> None:
    """The attack as it was: a provider form naming the capture server and a variable. bob is
    refused outright; carol, an admin, may test a form, but never with a server secret."""
    form = {"kind": "openai", "base_url": capture.base_url, "model": "m", "api_key_env": variable}
    refused = await as_user("bob", "POST", "models", "test", body=form)
    assert (refused.status, refused.error["code"]) == (403, "POLICY_VIOLATION")
    if variable != "NINI_TEST_ARBITRARY":  # the server's own secrets: refused for anyone
        secret = await as_user("carol", "POST", "models", "test", body=form)
        assert (secret.status, secret.error["code"]) == (403, "POLICY_VIOLATION")
        assert "JUPYTER_TOKEN" in secret.error["message"] and SECRETS[variable] not in secret.raw.decode()
    assert capture.requests == [] and SECRETS[variable] not in leaked(capture)


async def test_a_provider_naming_a_server_secret_is_never_saved(
    as_user: Any, nini_home: Path, capture: ScriptedLLM
) -> None:
    before = settings_bytes(nini_home)
    for variable in ("JUPYTER_TOKEN", "JPY_API_TOKEN", "jupyter_token", "COMPANY_DB_PASSWORD"):
        body = {"kind": "openai", "base_url": capture.base_url, "model": "m", "api_key_env": variable}
        refused = await as_user("carol", "PUT", "models", "providers", "evil", body=body)
        assert (refused.status, refused.error["code"]) == (403, "POLICY_VIOLATION"), variable
    assert settings_bytes(nini_home) == before and capture.requests == []


async def test_an_admin_saves_and_tests_a_provider_of_their_own(
    as_user: Any, nini_home: Path, llm_server: ScriptedLLM
) -> None:
    form = {"kind": "openai", "base_url": llm_server.base_url, "model": "n", "api_key_env": "NINI_TEST_KEY"}
    llm_server.reply(text("OK"), text("OK"))
    assert (await as_user("carol", "POST", "models", "test", body=form)).data["ok"] is True
    assert (await as_user("carol", "PUT", "models", "providers", "second", body=form)).status == 200
    assert (await as_user("bob", "POST", "models", "test", body={"name": "second"})).data["ok"] is True
    assert [h["authorization"] for h in llm_server.request_headers] == [f"Bearer {KEY}"] * 2
    assert [p["name"] for p in json.loads(settings_bytes(nini_home))["llm"]["providers"]] == ["shared", "second"]
