"""A small stdio MCP server for the tests: one tool, ``add(a, b)``, and ``fail()`` that errs."""

from __future__ import annotations

from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

ADD = types.Tool(
    name="add",
    description="Add two numbers.",
    input_schema={
        "type": "object",
        "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
        "required": ["a", "b"],
    },
)
FAIL = types.Tool(name="fail", description="Always fails.", input_schema={"type": "object", "properties": {}})


async def list_tools(_ctx: Any, _params: Any) -> types.ListToolsResult:
    return types.ListToolsResult(tools=[ADD, FAIL])


async def call_tool(_ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    arguments = params.arguments or {}
    if params.name == "add":
        total = arguments["a"] + arguments["b"]
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=f"sum is {total}")], structured_content={"sum": total}
        )
    return types.CallToolResult(content=[types.TextContent(type="text", text="it broke")], is_error=True)


async def main() -> None:
    server = Server("calc", on_list_tools=list_tools, on_call_tool=call_tool)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
