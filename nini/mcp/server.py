"""``nini mcp``: nini's enabled skills as MCP tools and a session's files as MCP resources.

Any MCP client (Claude Code, Cursor, Jupyter AI, ...) gets nini's sandboxed Python, policy-checked
R, datasets and reports. Every call goes through ``invoke``, so it is recorded and published like
an agent's; a failed call (a policy refusal with its reasons, say) comes back as a tool error. One
session per connection unless the client names one (``nini mcp --session ID``, or ``?session=ID``
on the HTTP endpoint). Tool names are the wire names the agent's models see (``task:explore`` is
``task__explore``).

Two transports share one server: stdio (``serve_stdio``, one connection, one session) and
streamable HTTP (``HTTPEndpoint``, which the Jupyter server extension mounts at ``/nini/mcp``
behind Jupyter's own authentication), where each MCP session gets its own nini session.
"""

from __future__ import annotations

import asyncio
import base64
import mimetypes
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import mcp_types as types

from nini.errors import ErrorCode, NiniError
from nini.limits import Limits, check_arguments
from nini.owners import VIEWER_SCOPE
from nini.skills.invoke import invoke
from nini.skills.toolset import build_toolset

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server

    from nini.runtime import Runtime
    from nini.session import Session

# The nini session a request belongs to, from the request's context (the SDK's ServerRequestContext).
SessionOf = Callable[[Any], Awaitable["Session"]]

URI_PREFIX = "nini://sessions/"
TEXT_FORMATS = {"md", "csv", "json", "txt", "html", "svg", "py", "r"}


def build_server(runtime: Runtime, session_of: SessionOf) -> Server:
    """An MCP server of ``runtime``'s enabled skills; each request works in the session
    ``session_of`` gives for it (its tool calls recorded there, its files the resources)."""
    from mcp.server.lowlevel import Server

    def toolset(ctx: Any) -> Any:
        """The caller's skills: a named user's own (``Runtime.registry_for``), the server user's elsewhere."""
        request = getattr(ctx, "request", None)
        viewer = request.scope.get(VIEWER_SCOPE) if request is not None else None
        return build_toolset(runtime.registry_for(viewer.name if viewer is not None else None), lambda record: True)

    async def list_tools(ctx: Any, _params: Any) -> types.ListToolsResult:
        tools = [
            types.Tool(
                name=s["function"]["name"],
                description=s["function"].get("description", ""),
                input_schema=s["function"].get("parameters") or {"type": "object"},
            )
            for s in toolset(ctx).schemas
        ]
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        skill = toolset(ctx).skill_name(params.name)
        if skill is None:
            return _error(f"NOT_FOUND: no tool {params.name!r}")
        arguments = dict(params.arguments or {})
        try:  # before any session, row or event: code or a label over its cap, a lone surrogate
            check_arguments(arguments, Limits.of(runtime.settings))
        except NiniError as exc:
            return _error(f"{exc.code.value}: {exc.message}")
        session = await session_of(ctx)
        result = await invoke(session, skill, arguments)
        text = result.text_for_llm(runtime.settings.execution.output_cap_chars)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)],
            is_error=not result.success,
            structured_content=result.to_dict(),
        )

    async def list_resources(ctx: Any, _params: Any) -> types.ListResourcesResult:
        session = await session_of(ctx)
        rows = await runtime.store.call(runtime.store.list_artifacts, session.id)
        resources = [
            types.Resource(
                uri=f"{URI_PREFIX}{session.id}/artifacts/{row['path']}",
                name=row["name"],
                mime_type=mimetypes.guess_type(row["path"])[0] or "application/octet-stream",
            )
            for row in rows
        ]
        return types.ListResourcesResult(resources=resources)

    async def read_resource(ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        session = await session_of(ctx)
        uri = str(params.uri)
        prefix = f"{URI_PREFIX}{session.id}/artifacts/"
        if not uri.startswith(prefix):
            raise NiniError(ErrorCode.NOT_FOUND, f"{uri}: this connection serves {prefix}...")
        relative = uri[len(prefix) :]
        # no link followed, nothing outside; off the event loop, which may be a Jupyter server's
        data = await asyncio.to_thread(session.workspace.fs.read_bytes, relative, limit=50_000_000)
        mime = mimetypes.guess_type(relative)[0] or "application/octet-stream"
        if relative.rsplit(".", 1)[-1].lower() in TEXT_FORMATS:
            return types.ReadResourceResult(
                contents=[types.TextResourceContents(uri=uri, mime_type=mime, text=data.decode("utf-8", "replace"))]
            )
        return types.ReadResourceResult(
            contents=[types.BlobResourceContents(uri=uri, mime_type=mime, blob=base64.b64encode(data).decode())]
        )

    return Server(
        "nini",
        instructions="nini: sandboxed Python and policy-checked R on your data, recorded; "
        "datasets persist across calls in this session.",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_read_resource=read_resource,
    )


def _principal(viewer: Any) -> Any:
    """The SDK's authenticated user for a nini ``Viewer``: MCP sessions are bound to its name."""
    from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
    from mcp.server.auth.provider import AccessToken

    return AuthenticatedUser(AccessToken(token="", client_id="jupyter", scopes=[], subject=viewer.name))


def _error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


async def serve_stdio(runtime: Runtime, session: Session) -> None:
    """Serve ``session`` of ``runtime`` over this process's stdin and stdout until the client closes."""
    from mcp.server.stdio import stdio_server

    async def session_of(_ctx: Any) -> Session:
        return session

    server = build_server(runtime, session_of)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


class HTTPEndpoint:
    """nini over streamable HTTP: the SDK's session manager, run in a task of its own, with one nini
    session per MCP session (``Mcp-Session-Id``), or the one the client names with ``?session=ID``.

    The transport knows nothing of who may call it: its host (the Jupyter server extension)
    authenticates each request before it gets here. The manager starts at the first request, so a
    server whose MCP endpoint is never used pays nothing for it.
    """

    def __init__(self, runtime: Runtime) -> None:
        from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

        self.runtime = runtime
        self.manager = StreamableHTTPSessionManager(build_server(runtime, self.session_of))
        self._sessions: dict[str, Session] = {}  # by MCP session id
        self._task: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()
        self._lock = asyncio.Lock()

    async def session_of(self, ctx: Any) -> Session:
        """The request's nini session: the one its MCP session has, else the one it names (created
        if new), else a new one; an MCP session keeps the session its first call got. Only a session
        the caller may see (the host puts its ``Viewer`` in the scope as ``VIEWER_SCOPE``): an MCP
        session id used by another user gets NOT_FOUND."""
        request = getattr(ctx, "request", None)
        mcp_id = request.headers.get("mcp-session-id") if request is not None else None
        viewer = request.scope.get(VIEWER_SCOPE) if request is not None else None
        if mcp_id and mcp_id in self._sessions:
            session = self._sessions[mcp_id]
            if viewer is not None:
                await self.runtime.store.call(self.runtime.session, session.id, viewer)
            return session
        named = request.query_params.get("session") if request is not None else None
        session = await self.runtime.store.call(self.runtime.session_or_new, named, "MCP", viewer)
        if mcp_id:
            self._sessions[mcp_id] = session
        return session

    async def handle(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """Serve one HTTP request (an ASGI call) of any MCP session.

        The host's ``Viewer`` (``VIEWER_SCOPE``) becomes the request's principal, which the SDK binds
        an MCP session to when it opens: a request of another user naming that session (a POST, its
        event stream, a DELETE ending it) gets the SDK's answer to an unknown session, 404 "Session not found".
        """
        await self._start()
        viewer = scope.get(VIEWER_SCOPE)
        if viewer is not None:
            scope = {**scope, "user": _principal(viewer)}
        await self.manager.handle_request(scope, receive, send)
        if scope["method"] == "DELETE":  # the client ended its MCP session
            mcp_id = dict(scope["headers"]).get(b"mcp-session-id", b"").decode("latin-1")
            self._sessions.pop(mcp_id, None)

    async def _start(self) -> None:
        async with self._lock:
            if self._task is not None:
                return
            ready = asyncio.Event()

            async def run() -> None:
                async with self.manager.run():
                    ready.set()
                    await self._stop.wait()

            self._task = asyncio.create_task(run(), name="nini-mcp-http")
            waiter = asyncio.create_task(ready.wait())
            await asyncio.wait({self._task, waiter}, return_when=asyncio.FIRST_COMPLETED)
            if not ready.is_set():
                waiter.cancel()
                self._task.result()  # the manager failed to start: raise its error here

    async def aclose(self) -> None:
        """End every MCP session (their requests in flight are cancelled); safe to call twice."""
        self._stop.set()
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)
