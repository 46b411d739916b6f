"""The Anthropic Messages API as a provider (optional extra ``anthropic``), in the OpenAI chat format.

Requests go out converted from OpenAI messages and function tools (system prompt, tool_use and
tool_result blocks, image blocks); answers come back as the same ``Completion`` the OpenAI
provider returns, with OpenAI finish reasons.
"""

from __future__ import annotations

import json
from typing import Any

from nini.agent.llm import Completion, OnText, ToolCall
from nini.agent.providers import KEYLESS_PLACEHOLDER, emit, upstream_error, usage_dict
from nini.config import ProviderSettings

# Anthropic requires max_tokens on every request; OpenAI-style callers may leave it unset.
DEFAULT_MAX_TOKENS = 4096
FINISH_REASONS = {"end_turn": "stop", "stop_sequence": "stop", "tool_use": "tool_calls", "max_tokens": "length"}
USAGE_NAMES = {"prompt_tokens": "input_tokens", "completion_tokens": "output_tokens"}


class AnthropicProvider:
    def __init__(self, settings: ProviderSettings, api_key: str | None, max_retries: int) -> None:
        from anthropic import AsyncAnthropic

        self.settings = settings
        self._api_key = api_key
        base_url = settings.base_url
        # the SDK appends /v1/messages itself; accept a base_url written OpenAI-style with /v1
        if base_url and base_url.rstrip("/").endswith("/v1"):
            base_url = base_url.rstrip("/")[: -len("/v1")]
        self._client = AsyncAnthropic(
            api_key=api_key or KEYLESS_PLACEHOLDER, base_url=base_url, max_retries=max_retries
        )

    def __repr__(self) -> str:
        return f"AnthropicProvider(name={self.settings.name!r}, base_url={self.settings.base_url!r})"

    async def call(
        self,
        purpose: str,
        model: str,
        messages: list[dict],
        *,
        tools: list[dict] | None,
        temperature: float | None,
        max_tokens: int | None,
        timeout_s: float,
        on_text: OnText | None,
    ) -> Completion:
        import anthropic

        system, converted = to_anthropic_messages(messages)
        request: dict[str, Any] = {
            "model": model,
            "messages": converted,
            "max_tokens": max_tokens or DEFAULT_MAX_TOKENS,
            "timeout": timeout_s,
        }
        if system:
            request["system"] = system
        if tools:
            request["tools"] = to_anthropic_tools(tools)
        if temperature is not None:
            request["temperature"] = temperature
        try:
            if on_text is None:
                return self._completion(await self._client.messages.create(**request), model)
            return await self._collect(await self._client.messages.create(**request, stream=True), model, on_text)
        except anthropic.AnthropicError as exc:
            raise upstream_error(exc, self.settings.name, self._api_key, timeout_s) from None

    def _completion(self, message: Any, model: str) -> Completion:
        text = "".join(block.text for block in message.content if block.type == "text")
        calls = [
            ToolCall(id=block.id, name=block.name, arguments=json.dumps(block.input, ensure_ascii=False))
            for block in message.content
            if block.type == "tool_use"
        ]
        return Completion(
            text=text,
            tool_calls=calls,
            finish_reason=FINISH_REASONS.get(message.stop_reason, message.stop_reason),
            provider=self.settings.name,
            model=message.model or model,
            usage=usage_dict(message.usage, **USAGE_NAMES),
        )

    async def _collect(self, stream: Any, model: str, on_text: OnText) -> Completion:
        parts: list[str] = []
        blocks: dict[int, dict[str, str]] = {}
        stop, answered_model, counts = None, model, {"input_tokens": 0, "output_tokens": 0}
        async with stream:
            async for event in stream:
                if event.type == "message_start":
                    answered_model = event.message.model or model
                    counts["input_tokens"] = event.message.usage.input_tokens or 0
                elif event.type == "content_block_start" and event.content_block.type == "tool_use":
                    block = event.content_block
                    blocks[event.index] = {"id": block.id, "name": block.name, "arguments": ""}
                elif event.type == "content_block_delta" and event.delta.type == "text_delta":
                    parts.append(event.delta.text)
                    await emit(on_text, event.delta.text)
                elif event.type == "content_block_delta" and event.delta.type == "input_json_delta":
                    blocks[event.index]["arguments"] += event.delta.partial_json
                elif event.type == "message_delta":
                    stop = event.delta.stop_reason or stop
                    counts["output_tokens"] = event.usage.output_tokens or 0
        calls = [
            # a call without arguments streams no input_json_delta at all
            ToolCall(id=b["id"], name=b["name"], arguments=b["arguments"] or "{}")
            for _, b in sorted(blocks.items())
        ]
        return Completion(
            text="".join(parts),
            tool_calls=calls,
            finish_reason=FINISH_REASONS.get(stop, stop) if stop else None,
            provider=self.settings.name,
            model=answered_model,
            usage={
                "prompt_tokens": counts["input_tokens"],
                "completion_tokens": counts["output_tokens"],
                "total_tokens": counts["input_tokens"] + counts["output_tokens"],
            },
        )

    async def aclose(self) -> None:
        await self._client.close()


def to_anthropic_tools(tools: list[dict]) -> list[dict]:
    """OpenAI function tools as Anthropic tools."""
    converted = []
    for tool in tools:
        function = tool.get("function", tool)
        converted.append(
            {
                "name": function["name"],
                "description": function.get("description", ""),
                "input_schema": function.get("parameters") or {"type": "object", "properties": {}},
            }
        )
    return converted


def to_anthropic_messages(messages: list[dict]) -> tuple[str, list[dict]]:
    """OpenAI chat messages as ``(system, messages)`` for the Messages API.

    System messages join into the system prompt; tool results become ``tool_result`` blocks of a
    user turn; consecutive turns of one role merge, since Anthropic requires them to alternate.
    """
    system: list[str] = []
    turns: list[dict] = []
    for message in messages:
        role = message.get("role")
        if role == "system":
            system.append(_plain_text(message.get("content")))
            continue
        if role == "tool":
            blocks = [
                {
                    "type": "tool_result",
                    "tool_use_id": message.get("tool_call_id", ""),
                    "content": _plain_text(message.get("content")),
                }
            ]
            role = "user"
        elif role == "assistant":
            blocks = _content_blocks(message.get("content"))
            for call in message.get("tool_calls") or []:
                function = call.get("function", {})
                blocks.append(
                    {
                        "type": "tool_use",
                        "id": call.get("id", ""),
                        "name": function.get("name", ""),
                        "input": _arguments(function.get("arguments")),
                    }
                )
        else:
            blocks, role = _content_blocks(message.get("content")), "user"
        if not blocks:
            continue
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    return "\n\n".join(s for s in system if s), turns


def _content_blocks(content: Any) -> list[dict]:
    if content is None or content == "":
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    blocks = []
    for part in content:
        if part.get("type") == "text":
            blocks.append({"type": "text", "text": part.get("text", "")})
        elif part.get("type") == "image_url":
            blocks.append(
                _image_block(part["image_url"]["url"] if isinstance(part["image_url"], dict) else part["image_url"])
            )
    return blocks


def _image_block(url: str) -> dict:
    if url.startswith("data:") and ";base64," in url:
        header, data = url.split(",", 1)
        return {"type": "image", "source": {"type": "base64", "media_type": header[5:].split(";")[0], "data": data}}
    return {"type": "image", "source": {"type": "url", "url": url}}


def _plain_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content if part.get("type") == "text")


def _arguments(arguments: Any) -> dict:
    if isinstance(arguments, dict):
        return arguments
    try:
        value = json.loads(arguments or "{}")
    except json.JSONDecodeError:
        return {"_raw_arguments": arguments}  # keep what the model sent; Anthropic needs an object
    return value if isinstance(value, dict) else {"value": value}
