"""The model endpoints behind ``ModelRouter``: OpenAI-compatible, Anthropic and replay.

Every provider takes and returns the OpenAI chat format (messages, function tools) and turns the
SDK's failures into ``NiniError`` (UPSTREAM_ERROR or TIMEOUT) at this boundary, with any API key
scrubbed from the text. ``asyncio.CancelledError`` is never caught here. Retries of 429/5xx are the
SDK's own (``max_retries``), which honour ``retry-after-ms`` / ``retry-after``.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import re
from pathlib import Path
from typing import Any, Protocol

from nini.agent.llm import Completion, OnText, ToolCall
from nini.config import ProviderSettings
from nini.errors import ErrorCode, NiniError
from nini.logs import redact

# keyless local servers (Ollama, vLLM) ignore the key, but the SDKs refuse to start without one
KEYLESS_PLACEHOLDER = "not-needed"


class Provider(Protocol):
    settings: ProviderSettings

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
    ) -> Completion: ...

    async def aclose(self) -> None: ...


def make_provider(settings: ProviderSettings, api_key: str | None, max_retries: int) -> Provider:
    """The provider for ``settings``; ``api_key`` is the resolved key value (None when keyless)."""
    if settings.kind == "anthropic":
        from nini.agent.anthropic_provider import AnthropicProvider

        return AnthropicProvider(settings, api_key, max_retries)
    if settings.kind == "replay":
        return ReplayProvider(settings)
    return OpenAIProvider(settings, api_key, max_retries)


async def emit(on_text: OnText | None, delta: str) -> None:
    """Pass one text delta to ``on_text``, which may be sync or async."""
    if on_text is not None and delta:
        result = on_text(delta)
        if inspect.isawaitable(result):
            await result


def upstream_error(exc: Exception, provider: str, api_key: str | None, timeout_s: float | None = None) -> NiniError:
    """``NiniError`` for an SDK exception of either SDK (they share the class layout)."""
    name = type(exc).__name__
    text = scrub(_error_text(exc), api_key)
    if name == "APITimeoutError":
        after = f" after {timeout_s:g} s" if timeout_s else ""
        return NiniError(
            ErrorCode.TIMEOUT, f"the model request to provider {provider} timed out{after}", {"provider": provider}
        )
    status = getattr(exc, "status_code", None)
    if status is not None and status >= 400:  # (Anthropic reports an error event mid-stream with the 200)
        return NiniError(
            ErrorCode.UPSTREAM_ERROR,
            f"provider {provider} answered HTTP {status}: {text}",
            {"provider": provider, "status": status},
        )
    if name == "APIConnectionError":
        cause = scrub(str(exc.__cause__ or exc), api_key)
        return NiniError(ErrorCode.UPSTREAM_ERROR, f"cannot reach provider {provider}: {cause}", {"provider": provider})
    return NiniError(ErrorCode.UPSTREAM_ERROR, f"provider {provider} failed: {text}", {"provider": provider})


def _error_text(exc: Exception) -> str:
    """The upstream's own error message when its body has one, else the SDK's text."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = error if isinstance(error := body.get("error"), dict) else body
        if isinstance(inner.get("message"), str) and inner["message"]:
            return inner["message"]
    return re.sub(r"^Error code: \d+ - ", "", str(getattr(exc, "message", None) or exc))


def scrub(text: str, api_key: str | None) -> str:
    """``text`` without the key value (whatever its shape) nor anything key-shaped."""
    if api_key and api_key != KEYLESS_PLACEHOLDER:
        text = text.replace(api_key, "[REDACTED]")
    return redact(text)


def usage_dict(usage: Any, **names: str) -> dict[str, int]:
    """Token counts of an SDK usage object as ``{prompt_tokens, completion_tokens, total_tokens}``."""
    if usage is None:
        return {}
    names = names or {"prompt_tokens": "prompt_tokens", "completion_tokens": "completion_tokens"}
    counts = {ours: int(getattr(usage, theirs, 0) or 0) for ours, theirs in names.items()}
    counts["total_tokens"] = counts.get("prompt_tokens", 0) + counts.get("completion_tokens", 0)
    return counts


class OpenAIProvider:
    """Any OpenAI-compatible endpoint, through the ``openai`` SDK."""

    def __init__(self, settings: ProviderSettings, api_key: str | None, max_retries: int) -> None:
        from openai import AsyncOpenAI

        self.settings = settings
        self._api_key = api_key
        self._client = AsyncOpenAI(
            api_key=api_key or KEYLESS_PLACEHOLDER, base_url=settings.base_url, max_retries=max_retries
        )

    def __repr__(self) -> str:
        return f"OpenAIProvider(name={self.settings.name!r}, base_url={self.settings.base_url!r})"

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
        import openai

        # The messages and tools are already in the API's shape: they go into the body as they are
        # (extra_body replaces the empty list). Given as ``messages=``, the SDK walks each one against
        # its type definitions first, about 0.7 ms a message: a long session's prompt of hundreds
        # of messages cost more than a local model's answer, growing with the session (issue 38).
        body: dict[str, Any] = {"messages": messages, **({"tools": tools} if tools else {})}
        request: dict[str, Any] = {"model": model, "messages": [], "extra_body": body, "timeout": timeout_s}
        if temperature is not None:
            request["temperature"] = temperature
        if max_tokens is not None:
            request["max_tokens"] = max_tokens
        try:
            if on_text is None:
                response = await self._client.chat.completions.create(**request)
                return self._completion(response, model)
            stream = await self._client.chat.completions.create(
                **request, stream=True, stream_options={"include_usage": True}
            )
            return await self._collect(stream, model, on_text)
        except openai.OpenAIError as exc:
            raise upstream_error(exc, self.settings.name, self._api_key, timeout_s) from None

    def _completion(self, response: Any, model: str) -> Completion:
        if not response.choices:
            raise NiniError(ErrorCode.UPSTREAM_ERROR, f"provider {self.settings.name} returned no choices")
        choice = response.choices[0]
        calls = [
            ToolCall(id=c.id or f"call_{i}", name=c.function.name, arguments=c.function.arguments or "")
            for i, c in enumerate(choice.message.tool_calls or [])
            if getattr(c, "function", None) is not None
        ]
        return Completion(
            text=choice.message.content or "",
            tool_calls=calls,
            finish_reason=choice.finish_reason,
            provider=self.settings.name,
            model=response.model or model,
            usage=usage_dict(response.usage),
        )

    async def _collect(self, stream: Any, model: str, on_text: OnText) -> Completion:
        parts: list[str] = []
        calls: dict[int, dict[str, str]] = {}
        finish, usage, answered_model = None, {}, model
        async with stream:
            async for chunk in stream:
                answered_model = chunk.model or answered_model
                if chunk.usage:
                    usage = usage_dict(chunk.usage)
                for choice in chunk.choices:
                    delta = choice.delta
                    if delta is not None and delta.content:
                        parts.append(delta.content)
                        await emit(on_text, delta.content)
                    # a call arrives in pieces keyed by index: the id and name first, then the arguments
                    for piece in (delta.tool_calls if delta is not None else None) or []:
                        slot = calls.setdefault(piece.index, {"id": "", "name": "", "arguments": ""})
                        slot["id"] = piece.id or slot["id"]
                        if piece.function is not None:
                            slot["name"] += piece.function.name or ""
                            slot["arguments"] += piece.function.arguments or ""
                    finish = choice.finish_reason or finish
        tool_calls = [
            ToolCall(id=slot["id"] or f"call_{index}", name=slot["name"], arguments=slot["arguments"])
            for index, slot in sorted(calls.items())
        ]
        return Completion(
            text="".join(parts),
            tool_calls=tool_calls,
            finish_reason=finish,
            provider=self.settings.name,
            model=answered_model,
            usage=usage,
        )

    async def aclose(self) -> None:
        await self._client.close()


class ReplayProvider:
    """Answers from a recorded script (the demo; DESIGN.md section 7), never from the network.

    The script is ``{"responses": {"<purpose>": [reply, ...], "*": [reply, ...]}}`` with
    ``reply = {"content": str | null, "tool_calls": [{"name": str, "arguments": {...}}]}``; each
    call takes the next reply of its purpose's queue, else of ``"*"``.
    """

    STREAM_CHUNKS = 3

    def __init__(self, settings: ProviderSettings) -> None:
        self.settings = settings
        self._queues: dict[str, list[dict]] | None = None
        self._calls = 0

    def __repr__(self) -> str:
        return f"ReplayProvider(name={self.settings.name!r}, script={str(self.settings.script)!r})"

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
        if self._queues is None:
            self._queues = await asyncio.to_thread(self._load)
        queue = self._queues.get(purpose) or self._queues.get("*")
        if not queue:
            raise NiniError(
                ErrorCode.UPSTREAM_ERROR,
                f"replay script {self.settings.script} has no reply left for purpose {purpose}",
                {"provider": self.settings.name, "purpose": purpose},
            )
        reply = queue.pop(0)
        content = reply.get("content") or ""
        size = max(1, -(-len(content) // self.STREAM_CHUNKS))
        for start in range(0, len(content), size):
            await emit(on_text, content[start : start + size])
        tool_calls = []
        for call in reply.get("tool_calls") or []:
            self._calls += 1
            arguments = call.get("arguments", {})
            text = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
            tool_calls.append(ToolCall(id=f"call_{self._calls}", name=call["name"], arguments=text))
        return Completion(
            text=content,
            tool_calls=tool_calls,
            finish_reason="tool_calls" if tool_calls else "stop",
            provider=self.settings.name,
            model=model,
        )

    def _load(self) -> dict[str, list[dict]]:
        path = Path(self.settings.script or "")
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            responses = data["responses"]
            queues = {str(k): list(v) for k, v in responses.items()}
            if not all(isinstance(r, dict) for q in queues.values() for r in q):
                raise ValueError("every reply must be an object")
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise NiniError(
                ErrorCode.UPSTREAM_ERROR,
                f'replay script {path} cannot be used: {exc}; expected {{"responses": {{purpose: [reply, ...]}}}}',
                {"provider": self.settings.name},
            ) from None
        return queues

    async def aclose(self) -> None:
        pass
