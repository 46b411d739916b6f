"""``nini mcp``: nini's enabled skills as MCP tools and a session's files as MCP resources.

Any MCP client (Claude Code, Cursor, Jupyter AI, ...) gets nini's sandboxed Python, policy-checked
R, datasets and reports. Every call goes through ``invoke``, so it is recorded and published like
an agent's; a failed call (a policy refusal with its reasons, say) comes back as a tool error. One
session per connection unless the client names one (``nini mcp --session ID``). Tool names are the
wire names the agent's models see (``task:explore`` is ``task__explore``).
"""

from __future__ import annotations

import base64
import mimetypes
from typing import TYPE_CHECKING, Any

import mcp_types as types

from nini.agent.tools import build_toolset
from nini.errors import ErrorCode, NiniError
from nini.skills.invoke import invoke

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server

    from nini.session import Session

URI_PREFIX = "nini://sessions/"
TEXT_FORMATS = {"md", "csv", "json", "txt", "html", "svg", "py", "r"}


def build_server(session: Session) -> Server:
    """An MCP server serving ``session``: its runtime's enabled skills and its workspace files."""
    from mcp.server.lowlevel import Server

    runtime = session.runtime

    def toolset() -> Any:
        return build_toolset(runtime.registry, lambda record: True)

    async def list_tools(_ctx: Any, _params: Any) -> types.ListToolsResult:
        tools = [types.Tool(name=s["function"]["name"], description=s["function"].get("description", ""),
                            input_schema=s["function"].get("parameters") or {"type": "object"})
                 for s in toolset().schemas]  # fmt: skip
        return types.ListToolsResult(tools=tools)

    async def call_tool(_ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        skill = toolset().skill_name(params.name)
        if skill is None:
            return _error(f"NOT_FOUND: no tool {params.name!r}")
        result = await invoke(session, skill, dict(params.arguments or {}))
        text = result.text_for_llm(runtime.settings.execution.output_cap_chars)
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=not result.success,
                                    structured_content=result.to_dict())  # fmt: skip

    async def list_resources(_ctx: Any, _params: Any) -> types.ListResourcesResult:
        rows = await runtime.store.call(runtime.store.list_artifacts, session.id)
        resources = [types.Resource(uri=f"{URI_PREFIX}{session.id}/artifacts/{row['path']}", name=row["name"],
                                    mime_type=mimetypes.guess_type(row["path"])[0] or "application/octet-stream")
                     for row in rows]  # fmt: skip
        return types.ListResourcesResult(resources=resources)

    async def read_resource(_ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        uri = str(params.uri)
        prefix = f"{URI_PREFIX}{session.id}/artifacts/"
        if not uri.startswith(prefix):
            raise NiniError(ErrorCode.NOT_FOUND, f"{uri}: this connection serves {prefix}...")
        relative = uri[len(prefix):]
        data = session.workspace.fs.read_bytes(relative, limit=50_000_000)  # no link followed, nothing outside
        mime = mimetypes.guess_type(relative)[0] or "application/octet-stream"
        if relative.rsplit(".", 1)[-1].lower() in TEXT_FORMATS:
            return types.ReadResourceResult(contents=[types.TextResourceContents(uri=uri, mime_type=mime, text=data.decode("utf-8", "replace"))])
        return types.ReadResourceResult(contents=[types.BlobResourceContents(uri=uri, mime_type=mime, blob=base64.b64encode(data).decode())])

    return Server("nini", instructions="nini: sandboxed Python and policy-checked R on your data, recorded; "
                  "datasets persist across calls in this session.", on_list_tools=list_tools, on_call_tool=call_tool,
                  on_list_resources=list_resources, on_read_resource=read_resource)  # fmt: skip


def _error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


async def serve_stdio(session: Session) -> None:
    """Serve ``session`` over this process's stdin and stdout until the client closes."""
    from mcp.server.stdio import stdio_server

    server = build_server(session)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())
