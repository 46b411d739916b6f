"""Sessions belong to their owner: on a server whose identity provider names its users, alice cannot
list, read, run in or watch bob's sessions (REST, the WebSocket and /nini/mcp), and an admin can.

One Jupyter server, several users: ``HeaderIdentityProvider`` accepts the server's token like
jupyter_server's own provider and takes the user's name from the ``X-Test-User`` header. carol is
an admin through ``server.admins``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2
import pytest
from jupyter_server.auth import IdentityProvider, User
from tornado.httpclient import HTTPClientError
from traitlets.config import Config

from tests.jupyter_ext.test_auth import REQUESTS
from tests.timeouts import timeout

HEADER = "X-Test-User"
MISSING = "s0123456789ab"  # a well-formed id no session has
# A body each session route accepts, so that only the session's owner decides the answer.
BODIES = {
    "run-code": {"code": "1"},
    "run-r-code": {"code": "1"},
    "ask": {"message": "hi"},
    "approvals/a123": {"approve": True},
    "proposals/p123": {"decision": "accept"},
}
PARAMS = {"files": {"name": "a.csv"}}
SESSION_ROUTES = [
    (method, path.removeprefix("sessions/s1").lstrip("/"))
    for method, path in REQUESTS
    if path.startswith("sessions/s1")
]


class HeaderIdentityProvider(IdentityProvider):
    """The server's token authenticates; ``X-Test-User`` names who is calling (alice by default)."""

    async def get_user(self, handler: Any) -> User | None:
        user = await self._get_user(handler)
        if user is None:
            return None
        return User(handler.request.headers.get(HEADER, "alice"))


@pytest.fixture
def jp_server_config(nini_home: Path) -> Config:
    nini_home.mkdir(parents=True, exist_ok=True)
    (nini_home / "settings.json").write_text(json.dumps({"server": {"admins": ["carol"]}}))
    return Config(
        {
            "ServerApp": {
                "jpserver_extensions": {"jupyter_ext": True},
                "identity_provider_class": HeaderIdentityProvider,
            },
            "MultiKernelManager": {"default_kernel_name": "python3"},
            "NiniExtensionApp": {"nini_home": str(nini_home)},
        }
    )


@pytest.fixture
def as_user(api: Any) -> Any:
    """``await as_user(name, method, *path, ...)``: ``api`` as the user ``name``."""

    async def call(name: str, method: str, *path: str, **kwargs: Any) -> Any:
        return await api(method, *path, headers={HEADER: name}, **kwargs)

    return call


async def new_session(as_user: Any, name: str) -> str:
    reply = await as_user(name, "POST", "sessions", body={"title": f"{name}'s"})
    assert reply.status == 201 and reply.data["owner"] == name
    return reply.data["id"]


async def test_each_user_lists_only_their_own_sessions_and_an_admin_all(as_user: Any) -> None:
    alice, bob = await new_session(as_user, "alice"), await new_session(as_user, "bob")

    async def listed(name: str) -> set[str]:
        return {row["id"] for row in (await as_user(name, "GET", "sessions")).data}

    assert await listed("alice") == {alice}
    assert await listed("bob") == {bob}
    assert await listed("dave") == set()
    assert await listed("carol") >= {alice, bob}
    assert (await as_user("alice", "GET", "sessions", alice)).data["owner"] == "alice"


@pytest.mark.parametrize(("method", "route"), SESSION_ROUTES)
async def test_another_users_session_is_not_found_like_a_missing_one(as_user: Any, method: str, route: str) -> None:
    """Every route naming a session answers bob for alice's session exactly as for no session at all."""
    alice = await new_session(as_user, "alice")

    async def ask(name: str, session_id: str) -> Any:
        path = f"sessions/{session_id}/{route}".removesuffix("/")
        return await as_user(name, method, *path.split("/"), body=BODIES.get(route), params=PARAMS.get(route))

    refused, missing = await ask("bob", alice), await ask("bob", MISSING)
    assert refused.status == missing.status == 404
    assert json.dumps(refused.error) == json.dumps(missing.error).replace(MISSING, alice)
    assert refused.error["details"] == {"session_id": alice}


async def test_the_owner_and_an_admin_read_what_others_cannot(as_user: Any) -> None:
    alice = await new_session(as_user, "alice")
    for name in ("alice", "carol"):
        assert (await as_user(name, "GET", "sessions", alice, "tool-calls")).data == []
        assert (await as_user(name, "GET", "sessions", alice, "export", params={"format": "json"})).status == 200
    capture = {"text": "always plot revenue on a log scale", "session_id": alice}
    assert (await as_user("bob", "POST", "experience", "pending", body=capture)).status == 404
    assert (await as_user("alice", "POST", "experience", "pending", body=capture)).status in (200, 201)


async def test_creating_another_users_session_id_answers_as_a_missing_session(as_user: Any) -> None:
    """Naming a session id is first come: bob cannot create alice's, nor reach it by creating it, and
    the refusal is the very answer a session that does not exist gets (no CONFLICT says it exists);
    alice, who sees it, and carol, an admin, are told it is taken."""
    alice = await new_session(as_user, "alice")
    refused = await as_user("bob", "POST", "sessions", body={"id": alice, "title": "bob's"})
    missing = await as_user("bob", "GET", "sessions", MISSING)
    assert refused.status == missing.status == 404
    assert json.dumps(refused.error) == json.dumps(missing.error).replace(MISSING, alice)
    for name in ("alice", "carol"):
        assert (await as_user(name, "POST", "sessions", body={"id": alice})).error["code"] == "CONFLICT"
    assert (await as_user("alice", "GET", "sessions", alice)).data["title"] == "alice's"
    assert alice not in {row["id"] for row in (await as_user("bob", "GET", "sessions")).data}


async def test_websocket_of_another_users_session_is_refused_before_upgrade(as_user: Any, jp_ws_fetch: Any) -> None:
    alice = await new_session(as_user, "alice")
    with pytest.raises(HTTPClientError) as refused:
        await jp_ws_fetch("nini", "api", "sessions", alice, "events", headers={HEADER: "bob"})
    assert refused.value.code == 404
    for name in ("alice", "carol"):
        ws = await jp_ws_fetch(
            "nini", "api", "sessions", alice, "events", params={"since": "0"}, headers={HEADER: name}
        )
        ws.close()


async def test_mcp_cannot_name_another_users_session(
    as_user: Any, jp_serverapp: Any, http_server_client: Any, jp_http_port: int, jp_base_url: str, jp_auth_header: dict
) -> None:
    alice = await new_session(as_user, "alice")
    url = f"http://127.0.0.1:{jp_http_port}{jp_base_url}nini/mcp"
    async with httpx2.AsyncClient(headers={**jp_auth_header, HEADER: "bob"}, timeout=timeout(60)) as http:
        reply = await http.post(url, params={"session": alice}, json={})
    assert reply.status_code == 404
    assert reply.json()["error"]["data"] == {"code": "NOT_FOUND"} and alice in reply.json()["error"]["message"]


MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}},
}
LIST_TOOLS = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}


async def test_an_mcp_session_answers_only_the_user_who_opened_it(
    jp_serverapp: Any, http_server_client: Any, jp_http_port: int, jp_base_url: str, jp_auth_header: dict
) -> None:
    """alice's MCP session id, used by bob (a call, its event stream, a DELETE ending it), gets the
    answer an unknown MCP session id gets; alice's session goes on working."""
    url = f"http://127.0.0.1:{jp_http_port}{jp_base_url}nini/mcp"
    async with httpx2.AsyncClient(headers={**jp_auth_header, **MCP_HEADERS}, timeout=timeout(60)) as http:
        opened = await http.post(url, json=INITIALIZE, headers={HEADER: "alice"})
        assert opened.status_code == 200, opened.text
        mcp_id = opened.headers["mcp-session-id"]
        version = {"mcp-protocol-version": "2025-06-18"}
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert (
            await http.post(url, json=initialized, headers={HEADER: "alice", "mcp-session-id": mcp_id, **version})
        ).status_code == 202

        async def as_bob(method: str, session: str) -> httpx2.Response:
            return await http.request(
                method,
                url,
                json=LIST_TOOLS if method == "POST" else None,
                headers={HEADER: "bob", "mcp-session-id": session, **version},
            )

        for method in ("POST", "GET", "DELETE"):
            refused, unknown = await as_bob(method, mcp_id), await as_bob(method, "0" * 32)
            assert refused.status_code == unknown.status_code == 404, (method, refused.text)
            assert refused.content == unknown.content
        tools = await http.post(url, json=LIST_TOOLS, headers={HEADER: "alice", "mcp-session-id": mcp_id, **version})
    assert tools.status_code == 200 and "run_code" in tools.text
