"""Purpose routing over the configured LLM providers: which model serves a call, and the fallbacks.

A purpose (chat, planning, image_analysis, ...) resolves to a chain of (provider, model) choices:
its own route, its fallback purpose's route (recursively), the preferred provider, then every
other provider in list order. ``ModelRouter.complete`` tries the usable choices in that order.
Provider classes live in ``nini.agent.providers``; API keys are read from the environment
variable a provider names, at call time, and never logged, returned or put in an error.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import logging
import os
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from nini.agent.llm_advice import advised, no_model
from nini.agent.usage import record_call
from nini.config import LLMSettings, ProviderSettings, Settings
from nini.errors import ErrorCode, NiniError
from nini.language import words_language

if TYPE_CHECKING:
    from nini.agent.providers import Provider

log = logging.getLogger("nini.agent.llm")

PURPOSES = (
    "chat",
    "analysis",
    "fast",
    "planning",
    "verification",
    "deep_reasoning",
    "title_generation",
    "summarize",
    "image_analysis",
    "report",
)
# where a purpose without a usable route of its own goes next (chains: deep_reasoning -> planning -> chat)
FALLBACK_PURPOSE = {
    "image_analysis": "chat",
    "title_generation": "chat",
    "deep_reasoning": "planning",
    "analysis": "chat",
    "fast": "chat",
    "planning": "chat",
    "verification": "chat",
    "summarize": "chat",
    "report": "chat",
}

VISION_PURPOSE = "image_analysis"  # the purpose whose calls carry images: only vision_models serve it

OnText = Callable[[str], Awaitable[None] | None]


def provider_problem(
    provider: ProviderSettings, environ: Mapping[str, str], *, check_enabled: bool = True
) -> str | None:
    """Why ``provider`` cannot be called now, whatever the model, or None; never a key's value.

    Shared by routing (a skipped candidate), ``GET /nini/api/models`` (usable or not) and the
    provider test, which also tries a disabled provider (``check_enabled=False``) before it is enabled.
    """
    if check_enabled and not provider.enabled:
        return f"provider {provider.name} is disabled"
    if provider.api_key_env and not environ.get(provider.api_key_env):
        return (
            f"environment variable {provider.api_key_env} (its API key) is not set; set the "
            f"variable {provider.api_key_env}"
        )
    if provider.kind == "anthropic" and importlib.util.find_spec("anthropic") is None:
        return "the anthropic SDK is not installed (pip install 'nini[anthropic]')"
    if provider.kind == "replay":
        if provider.script is None:
            return f"replay provider {provider.name} has no script"
        if not provider.script.is_file():
            return f"replay script {provider.script} does not exist"
    return None


@dataclass(frozen=True)
class ToolCall:
    """One function call the model asked for; ``arguments`` is the JSON text exactly as it sent it."""

    id: str
    name: str
    arguments: str


@dataclass
class Completion:
    """A finished model answer (streamed or not)."""

    text: str
    tool_calls: list[ToolCall] = field(default_factory=list)
    finish_reason: str | None = None
    provider: str = ""
    model: str = ""
    usage: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class ModelChoice:
    """One link of a purpose's provider chain, and why it is there."""

    provider: str
    model: str
    source: str  # "purpose:<p>", "fallback:<p>", "preferred", "priority"


# failures that move a call on to the next choice of its chain (when nothing was streamed yet)
_FALLBACK_CODES = (ErrorCode.UPSTREAM_ERROR, ErrorCode.TIMEOUT)


class ModelRouter:
    """Resolves purposes to provider chains and calls them, falling back on upstream failures.

    ``environ`` is where ``api_key_env`` names are looked up (default ``os.environ``, read at
    call time so a key exported after start-up is seen). SDK clients are cached per provider
    until ``aclose()``.
    """

    def __init__(
        self, settings: LLMSettings, *, environ: Mapping[str, str] | None = None, language: str = "auto"
    ) -> None:
        self.settings = settings
        self._environ = environ
        self._language = language  # ``ui.language``: the words of its errors (``nini.language``)
        # one provider (SDK client) per name, key and event loop: an SDK client's connection pool
        # belongs to the loop it first ran on, and a router may outlive a loop (asyncio.run twice).
        # A replay provider holds no connection (loop None) and keeps its place in the script.
        self._providers: dict[tuple[str, str, asyncio.AbstractEventLoop | None], Provider] = {}
        self._in_flight = 0  # calls under way: a replaced router closes only once they end

    @classmethod
    def from_settings(cls, settings: Settings) -> ModelRouter:
        """The one way nini builds a router: the models of ``settings.llm``, its errors in the
        words of ``ui.language``. A runtime builds it once (``Runtime.router``); a command with no
        runtime (``nini doctor`` must work when parts are broken, the curator's judge runs in its
        own event loop) builds its own here."""
        return cls(settings.llm, language=settings.ui.language)

    def __repr__(self) -> str:
        return f"ModelRouter(providers={[p.name for p in self.settings.providers]!r})"

    def context_window(self, provider: str) -> int:
        """The context window ``provider`` declares for its models (``context_window``); 0 when it declares none."""
        found = next((p for p in self.settings.providers if p.name == provider), None)
        return (found.context_window or 0) if found is not None else 0

    # -- resolution --------------------------------------------------------------------------

    def explain(self, purpose: str, *, require_vision: bool = False) -> list[dict]:
        """Every candidate considered for ``purpose``, in order, and why any is unusable."""
        return [
            {"provider": c.provider, "model": c.model, "source": c.source, "usable": reason is None, "reason": reason}
            for c, reason in self._candidates(purpose, require_vision)
        ]

    def chain(self, purpose: str, *, require_vision: bool = False) -> list[ModelChoice]:
        """The usable choices for ``purpose`` in order; NO_MODEL_AVAILABLE (saying why) when none."""
        candidates = self._candidates(purpose, require_vision)
        usable = [choice for choice, reason in candidates if reason is None]
        if usable:
            return usable
        need = " with vision" if require_vision else ""
        if not candidates and self.settings.rejected:
            message = f"no model is configured for purpose {purpose}{need}: " + "; ".join(self.settings.rejected)
        elif not candidates:  # nothing configured at all: say how to add a model
            message = no_model(words_language(self._language))
        else:
            tried = "; ".join(f"{c.provider}/{c.model or '?'} ({c.source}): {reason}" for c, reason in candidates)
            message = f"no usable model for purpose {purpose}{need}; tried {tried}"
        details = {"purpose": purpose, "candidates": self.explain(purpose, require_vision=require_vision)}
        raise NiniError(ErrorCode.NO_MODEL_AVAILABLE, message, details)

    def _candidates(self, purpose: str, require_vision: bool) -> list[tuple[ModelChoice, str | None]]:
        if purpose not in PURPOSES:
            raise NiniError(
                ErrorCode.INVALID_ARGUMENT,
                f"unknown model purpose {purpose!r}; purposes are: {', '.join(PURPOSES)}",
                {"purpose": purpose},
            )
        by_name = {p.name: p for p in self.settings.providers}
        raw: list[ModelChoice] = []
        current: str | None = purpose
        while current is not None:
            source = f"purpose:{current}" if current == purpose else f"fallback:{current}"
            route = self.settings.purposes.get(current)
            if route is not None and (route.provider or route.model):
                name = route.provider or self.settings.preferred_provider or next(iter(by_name), None)
                if name is not None:
                    default = by_name[name].model if name in by_name else ""
                    raw.append(ModelChoice(name, route.model or default, source))
            current = FALLBACK_PURPOSE.get(current)
        ordered = ([(self.settings.preferred_provider, "preferred")] if self.settings.preferred_provider else []) + [
            (p.name, "priority") for p in self.settings.providers
        ]
        for name, source in ordered:
            provider = by_name.get(name)
            raw.append(ModelChoice(name, provider.model if provider else "", source))
            # an image needs a vision model; offer the provider's listed ones after its default
            if require_vision and provider is not None:
                raw += [ModelChoice(name, model, source) for model in provider.vision_models]
        seen: set[tuple[str, str]] = set()
        candidates = []
        for choice in raw:
            if (choice.provider, choice.model) not in seen:
                seen.add((choice.provider, choice.model))
                candidates.append((choice, self._unusable(by_name.get(choice.provider), choice, require_vision)))
        return candidates

    def _unusable(self, provider: ProviderSettings | None, choice: ModelChoice, require_vision: bool) -> str | None:
        """Why ``choice`` cannot be called now, or None. Never includes a key value."""
        if provider is None:
            return f"no provider named {choice.provider}"
        reason = provider_problem(provider, self._environ_map())
        if reason is None and require_vision and choice.model not in provider.vision_models:
            reason = f"model {choice.model} is not in provider {provider.name}'s vision_models"
        return reason

    def report(self, purpose: str) -> dict[str, Any]:
        """What ``nini doctor`` and ``GET /nini/api/models`` show of ``purpose``: the chain a call
        would try, every candidate skipped and why, and the error a call gets when none is usable
        (``error``, else None). ``image_analysis`` is judged with vision required, as its calls are."""
        vision = purpose == VISION_PURPOSE
        explained = self.explain(purpose, require_vision=vision)
        chain = [
            {"provider": c["provider"], "model": c["model"], "source": c["source"]} for c in explained if c["usable"]
        ]
        skipped = [
            {"provider": c["provider"], "model": c["model"], "source": c["source"], "reason": c["reason"]}
            for c in explained
            if not c["usable"]
        ]
        error = None
        if not chain:
            try:
                self.chain(purpose, require_vision=vision)
            except NiniError as exc:
                error = exc.message
        return {"chain": chain, "skipped": skipped, "error": error}

    def provider_problem(self, provider: ProviderSettings) -> str | None:
        """Why ``provider`` cannot be called now whatever the model (disabled, key unset, ...), or None."""
        return provider_problem(provider, self._environ_map())

    def _environ_map(self) -> Mapping[str, str]:
        return self._environ if self._environ is not None else os.environ

    # -- calls -------------------------------------------------------------------------------

    async def complete(
        self,
        purpose: str,
        messages: list[dict],
        *,
        tools: list[dict] | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        timeout_s: float | None = None,
        on_text: OnText | None = None,
        require_vision: bool = False,
    ) -> Completion:
        """One model answer for ``purpose``; streams (calling ``on_text``) iff ``on_text`` is given.

        Each choice of the chain is tried in turn while the failure is UPSTREAM_ERROR or TIMEOUT
        and no text has reached ``on_text`` yet (the caller cannot take text back). The last error
        is raised with ``details.attempts``. Cancellation propagates at once.
        """
        self._in_flight += 1
        try:
            return await self._complete(
                purpose,
                messages,
                tools=tools,
                temperature=temperature,
                max_tokens=max_tokens,
                timeout_s=timeout_s,
                on_text=on_text,
                require_vision=require_vision,
            )
        finally:
            self._in_flight -= 1

    async def _complete(
        self,
        purpose: str,
        messages: list[dict],
        *,
        tools: list[dict] | None,
        temperature: float | None,
        max_tokens: int | None,
        timeout_s: float | None,
        on_text: OnText | None,
        require_vision: bool,
    ) -> Completion:
        from nini.agent.providers import emit

        choices = self.chain(purpose, require_vision=require_vision)
        streamed = False

        async def relay(delta: str) -> None:
            nonlocal streamed
            if delta:
                streamed = True
                await emit(on_text, delta)

        attempts: list[dict[str, Any]] = []
        last: NiniError | None = None
        for choice in choices:
            started = time.monotonic()
            try:
                provider = self._provider(choice.provider)
                completion = await provider.call(
                    purpose,
                    choice.model,
                    messages,
                    tools=tools,
                    temperature=temperature,
                    max_tokens=max_tokens,
                    timeout_s=timeout_s or self.settings.request_timeout_s,
                    on_text=relay if on_text else None,
                )
            except asyncio.CancelledError:
                self._log(purpose, choice, started, "canceled", {}, logging.INFO)
                raise
            except NiniError as exc:
                if exc.code in _FALLBACK_CODES:  # the provider, its URL and what to do next
                    configured = next(p for p in self.settings.providers if p.name == choice.provider)
                    exc = advised(exc, configured, words_language(self._language))
                self._log(purpose, choice, started, exc.code.value, {}, logging.WARNING, exc.message)
                attempts.append(
                    {"provider": choice.provider, "model": choice.model, "code": exc.code.value, "message": exc.message}
                )
                last = exc
                if streamed or exc.code not in _FALLBACK_CODES:
                    break
                continue
            self._log(purpose, choice, started, "ok", completion.usage, logging.INFO)
            record_call(completion.usage, next((p for p in self.settings.providers if p.name == choice.provider), None))
            return completion
        assert last is not None  # chain() never returns an empty list
        raise NiniError(last.code, last.message, {**(last.details or {}), "purpose": purpose, "attempts": attempts})

    async def prepare(self, purpose: str) -> None:
        """Make the SDK clients of ``purpose``'s usable chain now, off the event loop (the SDK's import
        and its HTTP client's setup take seconds on a fresh process), so the first call does not
        wait for them. A server warms ``chat`` after it starts; nothing is sent to any model."""
        from nini.agent.providers import make_provider

        for choice in self.chain(purpose):
            settings, key, slot = self._slot(choice.provider)
            if slot not in self._providers:
                made = await asyncio.to_thread(make_provider, settings, key, self.settings.max_retries)
                if self._providers.setdefault(slot, made) is not made:  # a call made one meanwhile
                    await made.aclose()

    def _provider(self, name: str) -> Provider:
        from nini.agent.providers import make_provider

        settings, key, slot = self._slot(name)
        provider = self._providers.get(slot)
        if provider is None:
            for stale in [s for s in self._providers if s[2] is not None and s[2].is_closed()]:
                del self._providers[stale]  # its connections died with their loop
            provider = self._providers[slot] = make_provider(settings, key, self.settings.max_retries)
        return provider

    def _slot(
        self, name: str
    ) -> tuple[ProviderSettings, str | None, tuple[str, str, asyncio.AbstractEventLoop | None]]:
        """Provider ``name``'s settings, key and place in the client cache."""
        settings = next(p for p in self.settings.providers if p.name == name)
        key = self._environ_map().get(settings.api_key_env) if settings.api_key_env else None
        # the key's fingerprint, not the key: a changed key gets a new client
        loop = None if settings.kind == "replay" else asyncio.get_running_loop()
        return settings, key, (name, hashlib.sha256((key or "").encode()).hexdigest(), loop)

    def _log(
        self,
        purpose: str,
        choice: ModelChoice,
        started: float,
        outcome: str,
        usage: dict,
        level: int,
        error: str | None = None,
    ) -> None:
        # never the prompt, the answer or a key: what was called, how long it took and how it ended
        data = {
            "purpose": purpose,
            "provider": choice.provider,
            "model": choice.model,
            "source": choice.source,
            "duration_ms": round((time.monotonic() - started) * 1000),
            "usage": usage,
            "outcome": outcome,
        }
        if error:
            data["error"] = error
        log.log(level, "model call %s", outcome, extra={"data": data})

    async def aclose_when_idle(self, poll_s: float = 0.1) -> None:
        """``aclose`` once no call is under way: a router replaced by new settings lets the calls it
        is serving finish on their connections (the next call of a running turn takes the new router)."""
        while self._in_flight:
            await asyncio.sleep(poll_s)
        await self.aclose()

    async def aclose(self) -> None:
        """Close the SDK clients (HTTP connection pools) of the running loop; forget the others."""
        loop = asyncio.get_running_loop()
        closing = [slot for slot in self._providers if slot[2] is not None]
        for slot in closing:
            provider = self._providers.pop(slot)
            if slot[2] is loop:
                await provider.aclose()
