"""``/nini/mcp``: nini's MCP server over streamable HTTP, behind Jupyter's authentication.

A client (Claude Code, Cursor, Jupyter AI, ...) connects with the server's token
(``Authorization: Bearer TOKEN`` or ``token TOKEN``); a request without it is refused by Jupyter
before MCP sees it. Each authenticated request is handed to the MCP SDK's streamable-HTTP transport
(``nini.mcp.server.HTTPEndpoint``) as an ASGI call: this module is only the bridge between
tornado and ASGI, streaming server-sent events as they are produced.
"""

from __future__ import annotations

import asyncio
from typing import Any

from jupyter_server.auth.decorator import authorized
from tornado import iostream, web

from jupyter_ext.handlers.base import NiniHandler, client_error, dumps
from jupyter_ext.handlers.bodies import check_id
from nini.owners import VIEWER_SCOPE

MCP_SETTING = "nini_mcp_endpoint"
INVALID_REQUEST, INTERNAL_ERROR = -32600, -32603  # JSON-RPC's codes


def endpoint(settings: dict[str, Any], runtime: Any) -> Any:
    """The server's one HTTPEndpoint, made at the first MCP request (the SDK is imported then)."""
    if settings.get(MCP_SETTING) is None:
        from nini.mcp.server import HTTPEndpoint

        settings[MCP_SETTING] = HTTPEndpoint(runtime)
    return settings[MCP_SETTING]


class MCPHandler(NiniHandler):
    """POST (client messages), GET (the server's event stream) and DELETE (end the MCP session)."""

    _disconnected: asyncio.Event

    async def _forward(self) -> None:
        session = self.get_query_argument("session", None)
        if session is not None:  # INVALID_ARGUMENT, or NOT_FOUND for another user's (see write_error), before MCP
            await self.read(self.runtime.session_or_new, check_id("session", session), "MCP", self.viewer)
        body = self.body_bytes()
        self._disconnected = asyncio.Event()
        pending = [{"type": "http.request", "body": body, "more_body": False}]
        content_type = "application/json"

        async def receive() -> dict[str, Any]:
            if pending:
                return pending.pop()
            await self._disconnected.wait()
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            nonlocal content_type
            if message["type"] == "http.response.start":
                self.set_status(message["status"])
                for name, value in message.get("headers", ()):
                    name, value = name.decode("latin-1"), value.decode("latin-1")
                    if name.lower() == "content-type":
                        content_type = value
                    if name.lower() != "content-length":  # tornado counts what it sends
                        self.set_header(name, value)
            elif message["type"] == "http.response.body" and not self._disconnected.is_set():
                self.write(message.get("body", b""))
                if message.get("more_body"):  # an event stream: each event reaches the client now
                    try:
                        await self.flush()
                    except iostream.StreamClosedError:
                        self._disconnected.set()

        await endpoint(self.settings, self.runtime).handle(self._scope(), receive, send)
        if not self._finished and not self._disconnected.is_set():
            self.finish(set_content_type=content_type)

    def _scope(self) -> dict[str, Any]:
        request = self.request
        host, _, port = request.host.partition(":")
        return {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": request.version.removeprefix("HTTP/"),
            "method": request.method,
            "scheme": request.protocol,
            "path": request.path,
            "raw_path": request.path.encode(),
            "query_string": request.query.encode("latin-1"),
            "root_path": "",
            "headers": [
                (name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in request.headers.get_all()
            ],
            "server": (host, int(port) if port.isdigit() else None),
            "client": (request.remote_ip, 0),
            VIEWER_SCOPE: self.viewer,
        }

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        """A refusal before MCP (no token, a bad ``session``) as a JSON-RPC error, which MCP clients
        show as it is (an envelope would reach their users as "Server returned an error response");
        nini's stable code is in ``error.data.code``."""
        status, error = client_error(self, status_code, **kwargs)
        message = f"HTTP {status} {error.code.value}: {error.message}"
        body = {
            "jsonrpc": "2.0",
            "id": None,
            "error": {
                "code": INVALID_REQUEST if status < 500 else INTERNAL_ERROR,
                "message": message,
                "data": {"code": error.code.value},
            },
        }
        self.set_status(status)
        self.finish(dumps(body), set_content_type="application/json")

    def on_connection_close(self) -> None:
        if hasattr(self, "_disconnected"):
            self._disconnected.set()

    post = web.authenticated(authorized(_forward))
    get = web.authenticated(authorized(_forward))
    delete = web.authenticated(authorized(_forward))


handlers = [(r"/nini/mcp", MCPHandler)]
