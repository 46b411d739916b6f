"""MCP servers as tools of the agent: each enabled server of ``mcp.servers`` is started (stdio) or
reached (streamable HTTP), its tools listed, and each registered as a function skill named
``mcp__<server>__<tool>``, so a call goes through ``invoke`` and is recorded like any other.

Each connection lives in a task of its own (the SDK's transports are anyio task groups, which must
be entered and left by one task); calls are made from the run's task over the open session. A
server that fails to start or list its tools is left out with the reason (``problems``, shown by
``nini doctor``): it never fails a run.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from nini.errors import ErrorCode, NiniError, error_dict
from nini.skills.function import FunctionSkill
from nini.skills.output import ToolOutput

if TYPE_CHECKING:
    from nini.config import MCPServerSettings, Settings
    from nini.skills.registry import SkillRegistry

log = logging.getLogger("nini.mcp")

START_TIMEOUT_S = 20
CALL_TIMEOUT_S = 120
_WIRE = re.compile(r"[^A-Za-z0-9_-]+")
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


class _AnyArguments(BaseModel):
    """Placeholder: an MCP tool's arguments are checked by its server, against its own schema."""


@dataclass(frozen=True)
class MCPToolSkill(FunctionSkill):
    """A tool of an MCP server, offered with the server's own input schema."""

    schema: dict[str, Any] = field(default_factory=dict)

    def input_schema(self) -> dict[str, Any]:
        return self.schema or {"type": "object", "properties": {}}

    def validate_arguments(self, arguments: dict[str, Any]) -> dict[str, Any]:
        if not isinstance(arguments, dict):
            raise NiniError(ErrorCode.INVALID_ARGUMENT, f"{self.name}: arguments must be an object")
        return {"arguments": arguments}


def skill_name(server: str, tool: str) -> str:
    return f"mcp__{_WIRE.sub('_', server)}__{_WIRE.sub('_', tool)}"


class MCPConnections:
    """The runtime's MCP client connections (started once, on first use; closed with the runtime)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.problems: dict[str, str] = {}  # server name -> why it is left out
        self._sessions: dict[str, Any] = {}
        self._stops: list[asyncio.Event] = []
        self._tasks: list[asyncio.Task[None]] = []
        self._started = False
        self._lock = asyncio.Lock()

    async def start(self, registry: SkillRegistry) -> None:
        """Connect every enabled server and register its tools (once; later calls return at once)."""
        async with self._lock:
            if self._started:
                return
            self._started = True
            for server in self.settings.mcp.servers:
                if server.enabled:
                    await self._connect(server, registry)

    async def _connect(self, server: MCPServerSettings, registry: SkillRegistry) -> None:
        ready: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        stop = asyncio.Event()
        task = asyncio.get_running_loop().create_task(self._hold(server, ready, stop), name=f"nini-mcp-{server.name}")
        try:
            session, tools = await asyncio.wait_for(asyncio.shield(ready), START_TIMEOUT_S)
        except Exception as exc:  # a server that cannot start is left out, with the reason
            stop.set()
            task.cancel()
            reason = _reason(exc)
            self.problems[server.name] = reason[:300]
            log.warning("MCP server %s left out: %s", server.name, reason)
            return
        self._sessions[server.name], self._stops, self._tasks = session, [*self._stops, stop], [*self._tasks, task]
        for tool in tools:
            name = skill_name(server.name, tool.name)
            with contextlib.suppress(NiniError):  # a name taken already (two servers, one tool name): first wins
                registry.register(self._skill(server.name, tool, name))

    async def _hold(self, server: MCPServerSettings, ready: asyncio.Future[Any], stop: asyncio.Event) -> None:
        """Open the connection, hand back (session, tools), keep it open until ``stop``, close it here."""
        from mcp.client.session import ClientSession

        try:
            async with _transport(server) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                tools = (await session.list_tools()).tools
                if not ready.done():
                    ready.set_result((session, tools))
                await stop.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc if isinstance(exc, Exception) else RuntimeError("the connection was cancelled"))
            if not isinstance(exc, Exception):
                raise

    def _skill(self, server: str, tool: Any, name: str) -> MCPToolSkill:
        async def call(arguments: dict[str, Any]) -> ToolOutput:
            session = self._sessions.get(server)
            if session is None:
                raise NiniError(ErrorCode.UPSTREAM_ERROR, f"MCP server {server} is not connected")
            try:
                result = await asyncio.wait_for(session.call_tool(tool.name, arguments), CALL_TIMEOUT_S)
            except TimeoutError:
                raise NiniError(
                    ErrorCode.TIMEOUT, f"MCP server {server}: {tool.name} gave no answer in {CALL_TIMEOUT_S} s"
                ) from None
            except Exception as exc:
                raise NiniError(
                    ErrorCode.UPSTREAM_ERROR, f"MCP server {server}: {type(exc).__name__}: {exc}"[:500]
                ) from None
            text = "\n".join(getattr(part, "text", "") for part in result.content if getattr(part, "text", None))
            payload = {"server": server, "tool": tool.name, "text": text, "structured": result.structured_content}
            if result.is_error:
                return ToolOutput(
                    result=payload,
                    success=False,
                    error=error_dict(ErrorCode.UPSTREAM_ERROR, text[:1000] or "the tool failed"),
                )
            return ToolOutput(result=payload, summary=f"{server}.{tool.name}: {text[:120]}")

        description = f"{tool.description or tool.name} (tool {tool.name} of the MCP server {server})"
        return MCPToolSkill(
            name=name,
            description=description[:1024],
            category="other",
            func=call,
            input_model=_AnyArguments,
            metadata={"source": "mcp", "server": server},
            source_location=f"mcp:{server}/{tool.name}",
            schema=dict(tool.input_schema or {}),
        )

    async def aclose(self) -> None:
        for stop in self._stops:
            stop.set()
        if self._tasks:
            await asyncio.wait(self._tasks, timeout=10)


@contextlib.asynccontextmanager
async def _transport(server: MCPServerSettings) -> Any:
    if server.url:
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        # the SDK's own timeouts: a server may hold a response stream open for a long call
        timeout = httpx2.Timeout(30, read=300)
        async with (
            httpx2.AsyncClient(headers=_headers(server), timeout=timeout) as http,
            streamable_http_client(server.url, http_client=http) as streams,
        ):
            yield streams[0], streams[1]
        return
    from mcp.client.stdio import StdioServerParameters, stdio_client

    env = {
        name: os.environ[name] for name in server.env if name in os.environ
    }  # secrets by name, from nini's environment
    parameters = StdioServerParameters(command=server.command or "", args=list(server.args), env=env or None)
    with open(os.devnull, "w") as quiet:  # a server's own stderr is not nini's output
        async with stdio_client(parameters, errlog=quiet) as (read, write):
            yield read, write


def _reason(exc: BaseException) -> str:
    """Why a connection failed, in one line: the first error inside the SDK's task groups (an
    HTTP 403, a missing program), not "unhandled errors in a TaskGroup"."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _headers(server: MCPServerSettings) -> dict[str, str]:
    """The server's HTTP headers, each ``${NAME}`` replaced by the variable NAME of nini's
    environment, for names the server lists in ``env`` only (a token stays out of settings.json)."""

    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in server.env:
            raise ValueError(f"header value ${{{name}}}: {name} is not in this server's env list")
        if name not in os.environ:
            raise ValueError(f"header value ${{{name}}}: the environment variable {name} is not set")
        return os.environ[name]

    return {header: _VARIABLE.sub(value, text) for header, text in server.headers.items()}


async def check_servers(settings: Settings, registry: SkillRegistry) -> dict[str, str | None]:
    """Each enabled server: None when it starts and lists its tools into ``registry``, else why not
    (``nini doctor``)."""
    connections = MCPConnections(settings)
    try:
        await connections.start(registry)
    finally:
        await connections.aclose()
    return {server.name: connections.problems.get(server.name) for server in settings.mcp.servers if server.enabled}
