"""Every nini endpoint is authenticated and authorized like the rest of Jupyter."""

from __future__ import annotations

import re
import warnings
from typing import Any

import pytest
from jupyter_server.auth import Authorizer
from jupyter_server.utils import JupyterServerAuthWarning
from tornado.httpclient import HTTPClientError
from tornado.web import RequestHandler
from traitlets.config import Config

from jupyter_ext.handlers import routes

# One request per (verb, route); the completeness test below fails when a route is missing here.
REQUESTS = [
    ("GET", "skills"),
    ("POST", "skills"),
    ("GET", "skill-problems"),
    ("GET", "skills/run_code/source"),
    ("PUT", "skills/run_code/source"),
    ("GET", "models"),
    ("POST", "models/test"),
    ("POST", "models/key-variable"),
    ("PUT", "models/providers/p1"),
    ("DELETE", "models/providers/p1"),
    ("GET", "skills/run_code"),
    ("POST", "skills/refresh"),
    ("PUT", "skills/run_code/enabled"),
    ("GET", "sessions"),
    ("POST", "sessions"),
    ("GET", "sessions/s1"),
    ("PATCH", "sessions/s1"),
    ("DELETE", "sessions/s1"),
    ("GET", "sessions/s1/tool-calls"),
    ("GET", "sessions/s1/tool-calls/c123"),
    ("GET", "sessions/s1/executions"),
    ("POST", "sessions/s1/run-code"),
    ("POST", "sessions/s1/run-r-code"),
    ("POST", "sessions/s1/ask"),
    ("POST", "ask"),
    ("GET", "sessions/s1/feedback"),
    ("POST", "sessions/s1/cancel"),
    ("GET", "approvals"),
    ("GET", "sessions/s1/approvals"),
    ("POST", "sessions/s1/approvals/a123"),
    ("DELETE", "sessions/s1/approvals/session"),
    ("GET", "sessions/s1/proposals"),
    ("POST", "sessions/s1/proposals/p123"),
    ("GET", "experience/pending"),
    ("POST", "experience/pending"),
    ("PUT", "experience/pending/abc123"),
    ("DELETE", "experience/pending/abc123"),
    ("POST", "experience/plan"),
    ("POST", "experience/deposit"),
    ("GET", "experience/entries"),
    ("GET", "experience/entries/team/knowledge/EXP-0001.md"),
    ("POST", "experience/entries/team/EXP-0001/deprecate"),
    ("GET", "sessions/s1/experience"),
    ("GET", "preferences"),
    ("POST", "preferences"),
    ("GET", "preferences/preview"),
    ("GET", "preferences/switches"),
    ("PUT", "preferences/switches"),
    ("GET", "preferences/1"),
    ("PUT", "preferences/1"),
    ("DELETE", "preferences/1"),
    ("POST", "feedback"),
    ("GET", "sessions/s1/preferences"),
    ("POST", "sessions/s1/files"),
    ("GET", "files/text"),
    ("POST", "sessions/s1/report"),
    ("GET", "sessions/s1/reports"),
    ("GET", "sessions/s1/artifacts/artifacts/a.png"),
    ("GET", "sessions/s1/export"),
    ("GET", "ui"),
    ("GET", "nothing/here"),
    ("POST", "nothing/here"),
    ("PUT", "nothing/here"),
    ("PATCH", "nothing/here"),
    ("DELETE", "nothing/here"),
]


def implemented_methods(handler: type[RequestHandler]) -> list[str]:
    return [
        m
        for m in handler.SUPPORTED_METHODS
        if m != "OPTIONS" and getattr(handler, m.lower()) is not RequestHandler._unimplemented_method
    ]


def test_the_request_table_covers_every_route() -> None:
    for pattern, handler, *_ in routes():
        if handler.__name__ in ("SessionEventsHandler", "MCPHandler"):
            continue  # the WebSocket and /nini/mcp (refused as JSON-RPC errors) have their own tests
        for method in implemented_methods(handler):
            assert any(m == method and re.fullmatch(pattern, f"/nini/api/{path}") for m, path in REQUESTS), (
                f"{method} {pattern} ({handler.__name__}) has no unauthenticated request in REQUESTS"
            )


@pytest.mark.parametrize(
    "jp_server_config",
    [Config({"ServerApp": {"allow_unauthenticated_access": False, "jpserver_extensions": {"jupyter_ext": True}}})],
)
@pytest.mark.filterwarnings("error::jupyter_server.utils.JupyterServerAuthWarning")
def test_every_handler_declares_authentication(jp_serverapp: Any) -> None:
    """As the extension template checks: jupyter_server starts with unauthenticated access off
    and warns about any extension handler lacking @authenticated / @ws_authenticated (an error here)."""
    assert jp_serverapp.web_app.settings["allow_unauthenticated_access"] is False
    assert "nini_runtime" in jp_serverapp.web_app.settings, "the extension did not load (see the log)"
    with warnings.catch_warnings():
        warnings.simplefilter("error", JupyterServerAuthWarning)
        for pattern, handler, *_ in routes():
            assert jp_serverapp.web_app._check_handler_auth(pattern, handler) == [], handler.__name__


@pytest.mark.parametrize(("method", "path"), REQUESTS)
@pytest.mark.parametrize("token", ["", "token wrong-token"])
async def test_403_without_a_valid_token(api: Any, method: str, path: str, token: str) -> None:
    reply = await api(method, *path.split("/"), headers={"Authorization": token})
    assert reply.status == 403
    assert reply.error["code"] == "POLICY_VIOLATION"


@pytest.mark.parametrize("token", ["", "token wrong-token"])
async def test_websocket_403_before_upgrade(api: Any, jp_ws_fetch: Any, token: str) -> None:
    session_id = (await api("POST", "sessions")).data["id"]
    with pytest.raises(HTTPClientError) as refused:
        await jp_ws_fetch("nini", "api", "sessions", session_id, "events", headers={"Authorization": token})
    assert refused.value.code == 403


class ReadOnlyAuthorizer(Authorizer):
    """Lets everyone read nini and nothing else: checks that handlers ask for resource "nini"."""

    def is_authorized(self, handler: Any, user: Any, action: str, resource: str) -> bool:
        return resource == "nini" and action == "read"


async def test_authorization_uses_the_nini_resource(jp_serverapp: Any, api: Any, jp_ws_fetch: Any) -> None:
    session_id = (await api("POST", "sessions")).data["id"]
    jp_serverapp.web_app.settings["authorizer"] = ReadOnlyAuthorizer(parent=jp_serverapp)
    assert (await api("GET", "skills")).status == 200
    denied = await api("PUT", "skills", "run_code", "enabled", body={"enabled": False})
    assert denied.status == 403 and "not authorized" in denied.error["message"]
    assert (await api("POST", "sessions")).status == 403
    ws = await jp_ws_fetch("nini", "api", "sessions", session_id, "events")  # reading events is "read"
    ws.close()


async def test_a_bug_is_a_500_envelope_without_traceback(api: Any, jp_serverapp: Any, monkeypatch: Any) -> None:
    registry = jp_serverapp.web_app.settings["nini_runtime"].registry

    def broken(type: str | None = None) -> None:  # noqa: A002
        raise RuntimeError("internal detail /home/secret")

    monkeypatch.setattr(registry, "list", broken)
    reply = await api("GET", "skills")
    assert reply.status == 500 and reply.error == {"code": "INTERNAL", "message": reply.error["message"]}
    assert b"secret" not in reply.raw and b"RuntimeError" not in reply.raw
