"""Models as a client edits them while nini runs: describe them, save or remove a provider in
settings.json, and test one with a single tiny call.

This is the REST API's model management (``/nini/api/models``), kept in the core so the rules live
in one place: a provider is validated by ``nini.config.ProviderSettings`` as when settings load, the
facts shown are the router's (``ModelRouter.report``, what ``nini doctor`` prints), and a key is
never accepted, stored or shown. Keys stay in environment variables, which settings.json only names
(``api_key_env``): a body that carries a key is refused before anything is written, and the refusal
never repeats the value. A variable holding one of the server's own secrets (``JUPYTER_TOKEN``,
``JPY_*``, ``server.secret_env_deny``: ``ServerSettings.is_secret_env``) is never a provider's key
variable: saving or testing such a provider is refused (``check_key_env``), so no test sends it
anywhere. Who may save, remove or test an unsaved provider is the REST layer's question (admins).
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pydantic import ValidationError

from nini.agent.llm import PURPOSES, ModelRouter, provider_problem
from nini.config import ProviderSettings, ServerSettings, Settings, update_setting
from nini.errors import ErrorCode, NiniError, validation_message
from nini.language import words_language
from nini.redact import redact_paths

KEY_ADVICE = "put the key in an environment variable and name it in api_key_env"
# what a client may set; ``script`` is the replay kind's recorded script (relative to NINI_HOME)
EDITABLE_FIELDS = (
    "kind",
    "base_url",
    "model",
    "api_key_env",
    "vision_models",
    "enabled",
    "script",
    "input_per_mtok",
    "output_per_mtok",
    "currency",
)
# what GET /models shows of a provider beyond those: a client may send a provider back as it got it
ECHOED_FIELDS = ("name", "usable", "reason")
TEST_PROMPT = [{"role": "user", "content": "Reply with OK"}]
TEST_TIMEOUT_S = 10.0
UNSAVED_NAME = "unsaved"
BODY_WORDS = {
    "zh": {
        "url": "base_url {url!r} 不是带主机名的 http(s) URL，例如 http://127.0.0.1:11434/v1",
        "model": "{kind} 类提供方需要一个模型：请给出 model（命令行：--model，例如 --model qwen2.5:7b）",
    },
    "en": {
        "url": "base_url {url!r} is not an http(s) URL with a host, e.g. http://127.0.0.1:11434/v1",
        "model": "a provider of kind {kind} needs a model: give model (on the command line --model, "
        "e.g. --model qwen2.5:7b)",
    },
}

_SECRET_FIELD = re.compile(r"key|secret|token|passw|credential|authori[sz]ation|bearer", re.IGNORECASE)
# the shapes providers give keys: OpenAI/DeepSeek sk-..., Anthropic sk-ant-..., Groq gsk_, Hugging Face hf_, ...
_SECRET_VALUE = re.compile(r"^(?:bearer\s|(?:sk|pk|rk|gsk|hf|ghp|xai|sess)[-_][A-Za-z0-9])", re.IGNORECASE)
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
_URL_SECRET = re.compile(r"//[^/@?#]*@|[?&](?:api[-_]?key|key|token|access[-_]?token|secret)=", re.IGNORECASE)


def provider_from_body(
    name: str | None, body: Mapping[str, Any], server: ServerSettings, language: str | None = None
) -> ProviderSettings:
    """The provider a client sent, validated as settings.json's would be; INVALID_ARGUMENT otherwise,
    in ``language`` (None: ``nini.language``'s for this request) where the words are this module's:
    a base_url that is not an http(s) URL with a host, and a missing model (a replay needs none).

    ``name`` is the one in the URL (None: the body's, else ``UNSAVED_NAME``, for a test). A key in
    the body, under any name or in any field, is refused with ``KEY_ADVICE``; a key variable that
    holds a server secret with POLICY_VIOLATION (``check_key_env``).
    """
    refuse_secrets(body)
    unknown = sorted(set(body) - set(EDITABLE_FIELDS) - set(ECHOED_FIELDS))
    if unknown:
        raise NiniError(
            ErrorCode.INVALID_ARGUMENT,
            f"unknown provider field(s) {', '.join(unknown)}; a provider has {', '.join(EDITABLE_FIELDS)}",
            {"fields": unknown},
        )
    given = body.get("name")
    if given is not None and (not isinstance(given, str) or (name is not None and given != name)):
        raise NiniError(ErrorCode.INVALID_ARGUMENT, f"the body's name must be the provider's name in the URL, {name!r}")
    fields = {key: body[key] for key in EDITABLE_FIELDS if key in body and body[key] is not None}
    words = BODY_WORDS[language or words_language(None)]
    check_base_url(fields.get("base_url"), words)
    if fields.get("kind", "openai") != "replay" and not fields.get("model"):
        raise NiniError(
            ErrorCode.INVALID_ARGUMENT, words["model"].format(kind=fields.get("kind", "openai")), {"field": "model"}
        )
    try:
        provider = ProviderSettings(name=name or given or UNSAVED_NAME, **fields)
    except ValidationError as exc:
        # loc and message only: pydantic's text repeats the input, and the input could be anything
        problems = [
            f"{'.'.join(str(p) for p in e['loc']) or 'provider'}: {validation_message(e)}" for e in exc.errors()
        ]
        raise NiniError(
            ErrorCode.INVALID_ARGUMENT, f"invalid provider: {'; '.join(problems)}", {"problems": problems}
        ) from None
    check_key_env(provider, server)
    return provider


def check_base_url(url: Any, words: Mapping[str, str]) -> None:
    """INVALID_ARGUMENT naming ``url`` unless it is unset or an http(s) URL with a host: "localhost:11434"
    or "htp://..." used to be saved and fail only at the first question, far from the typo."""
    if url is None:
        return
    try:
        parts = urlsplit(url) if isinstance(url, str) else None
        good = parts is not None and parts.scheme in ("http", "https") and bool(parts.hostname) and parts.port != 0
    except ValueError:  # a port that is no number
        good = False
    if not good:
        raise NiniError(ErrorCode.INVALID_ARGUMENT, words["url"].format(url=str(url)[:200]), {"field": "base_url"})


def check_key_env(provider: ProviderSettings, server: ServerSettings) -> None:
    """POLICY_VIOLATION when ``provider``'s key variable holds one of the server's own secrets: its
    value would go to the provider's URL with every call (and with a test, to a URL anyone typed)."""
    name = provider.api_key_env
    if name and server.is_secret_env(name):
        raise NiniError(
            ErrorCode.POLICY_VIOLATION,
            f"api_key_env {name} holds one of this server's own secrets "
            "(JUPYTER_TOKEN, JPY_*, JUPYTERHUB_*, NINI_DATABASE_URL, server.secret_env_deny), which is never "
            f"sent to a model; {KEY_ADVICE}",
            {"field": "api_key_env"},
        )


def refuse_secrets(body: Mapping[str, Any]) -> None:
    """INVALID_ARGUMENT when ``body`` holds what looks like an API key; the message names the field,
    never the value."""
    for field, value in body.items():
        if field == "api_key_env":
            continue
        values = value if isinstance(value, list) else [value]
        if _SECRET_FIELD.search(str(field)) or any(
            isinstance(v, str) and _SECRET_VALUE.match(v.strip()) for v in values
        ):
            raise _key_refused(field)
    env = body.get("api_key_env")
    if isinstance(env, str) and env and not _is_variable_name(env):
        raise _key_refused("api_key_env", "api_key_env is the name of an environment variable (like DEEPSEEK_API_KEY)")
    url = body.get("base_url")
    if isinstance(url, str) and _URL_SECRET.search(url):
        raise _key_refused("base_url", "base_url must not carry credentials")


def _is_variable_name(text: str) -> bool:
    """Whether ``text`` reads as an environment variable's name, not as a key pasted in its place:
    a key has a provider's prefix (sk-, gsk_, ...) or is a long run of lower-case letters and digits."""
    if not _ENV_NAME.fullmatch(text):
        return False
    if text.isupper():
        return True
    random = len(text) >= 20 and sum(c.isdigit() for c in text) >= 4
    return not (random or _SECRET_VALUE.match(text))


def key_env_status(name: Any, environ: Mapping[str, str], server: ServerSettings) -> dict[str, Any]:
    """Whether the key variable ``name`` is set (non-empty) in ``environ``: ``{name, set}``, never its
    value, so the Models form can say whether a provider's key is in place before it is saved.

    A name that does not read as a variable's (a key pasted in its place) is INVALID_ARGUMENT without
    repeating it; one of the server's own secrets is POLICY_VIOLATION (``check_key_env``), as saving
    a provider naming it would be.
    """
    if not isinstance(name, str) or not _is_variable_name(name):
        raise _key_refused("name", "name is the name of an environment variable (like DEEPSEEK_API_KEY)")
    check_key_env(ProviderSettings(name=UNSAVED_NAME, model=UNSAVED_NAME, api_key_env=name), server)
    return {"name": name, "set": bool(environ.get(name))}


def _key_refused(field: str, why: str = "an API key must not be sent to nini") -> NiniError:
    return NiniError(ErrorCode.INVALID_ARGUMENT, f"{why} (field {field!r}): {KEY_ADVICE}", {"field": field})


def save_provider(home: Path, provider: ProviderSettings) -> None:
    """Put ``provider`` into settings.json's ``llm.providers``: in place of the one of its name, else
    appended. Atomic; a settings.json that does not parse is refused and left as it is."""
    stored = provider.model_dump(mode="json", exclude_none=True)

    def change(current: Any) -> list[Any]:
        providers = _listed(current)
        replaced = [stored if _named(p, provider.name) else p for p in providers]
        return replaced if any(_named(p, provider.name) for p in providers) else [*providers, stored]

    update_setting(home, "llm.providers", change)


def delete_provider(home: Path, name: str) -> None:
    """Remove provider ``name`` from settings.json's ``llm.providers``; NOT_FOUND when it is not there."""

    def change(current: Any) -> list[Any]:
        providers = _listed(current)
        if not any(_named(p, name) for p in providers):
            raise NiniError(ErrorCode.NOT_FOUND, f"no provider named {name!r} in settings.json", {"name": name})
        return [p for p in providers if not _named(p, name)]

    update_setting(home, "llm.providers", change)


def _listed(current: Any) -> list[Any]:
    if current is None:
        return []
    if not isinstance(current, list):
        raise NiniError(
            ErrorCode.INVALID_ARGUMENT,
            "llm.providers in settings.json is not a list; fix it first, nothing was changed",
        )
    return current


def _named(entry: Any, name: str) -> bool:
    return isinstance(entry, dict) and entry.get("name") == name


def describe_models(router: ModelRouter, home: Path) -> dict[str, Any]:
    """Every provider (usable now, or why not) and every purpose's chain with its skipped candidates:
    the facts ``nini doctor`` shows, as data. Whether a key variable is set, never its value."""
    providers = []
    for provider in router.settings.providers:
        reason = router.provider_problem(provider)
        providers.append(
            {
                "name": provider.name,
                "kind": provider.kind,
                "base_url": provider.base_url,
                "model": provider.model,
                "api_key_env": provider.api_key_env,
                "vision_models": list(provider.vision_models),
                "enabled": provider.enabled,
                "usable": reason is None,
                "reason": _shown(reason, home),
                "input_per_mtok": provider.input_per_mtok,
                "output_per_mtok": provider.output_per_mtok,
                "currency": provider.currency,
            }
        )
    purposes = {}
    for purpose in PURPOSES:
        facts = router.report(purpose)
        for skipped in facts["skipped"]:
            skipped["reason"] = _shown(skipped["reason"], home)
        purposes[purpose] = {**facts, "error": _shown(facts["error"], home)}
    return {"providers": providers, "purposes": purposes}


async def test_provider(
    provider: ProviderSettings, environ: Mapping[str, str], settings: Settings, *, timeout_s: float = TEST_TIMEOUT_S
) -> dict[str, Any]:
    """One tiny real call to ``provider`` through its provider class (no retries, ``timeout_s``), to
    its own ``base_url`` with the value of its own ``api_key_env``:
    ``{ok: true, provider, model, latency_ms}`` or ``{ok: false, provider, reason: "CODE: message"}``.

    Never raises for the provider's failures: a dead URL, a refused key or a timeout is the answer.
    A disabled provider is tried too, so that it can be checked before it is enabled. A key variable
    holding a server secret is POLICY_VIOLATION, before anything is sent.
    """
    from nini.agent.llm_advice import advised
    from nini.agent.providers import make_provider

    check_key_env(provider, settings.server)
    home = settings.home
    problem = provider_problem(provider, environ, check_enabled=False)
    if problem is not None:
        return _failed(provider, ErrorCode.NO_MODEL_AVAILABLE.value, problem, home)
    key = environ.get(provider.api_key_env) if provider.api_key_env else None
    client = make_provider(provider, key, max_retries=0)
    started = time.monotonic()
    try:
        completion = await asyncio.wait_for(
            client.call(
                "chat",
                provider.model,
                TEST_PROMPT,
                tools=None,
                temperature=0,
                max_tokens=5,
                timeout_s=timeout_s,
                on_text=None,
            ),
            timeout_s + 2,  # the SDK's own timeout should win; this one bounds anything else
        )
    except NiniError as exc:  # with the URL called and what to do next
        if exc.code in (ErrorCode.UPSTREAM_ERROR, ErrorCode.TIMEOUT):
            exc = advised(exc, provider, settings.ui.current_language, suggest_test=False)
        return _failed(provider, exc.code.value, exc.message, home)
    except TimeoutError:
        late = advised(
            NiniError(ErrorCode.TIMEOUT, f"no answer within {timeout_s:g} s"),
            provider,
            settings.ui.current_language,
            suggest_test=False,
        )
        return _failed(provider, late.code.value, late.message, home)
    finally:
        await client.aclose()
    latency_ms = round((time.monotonic() - started) * 1000)
    return {
        "ok": True,
        "provider": provider.name,
        "model": completion.model or provider.model,
        "latency_ms": latency_ms,
    }


async def test_routes(
    settings: Settings, name: str | None = None, *, router: ModelRouter | None = None
) -> list[tuple[str, bool, str]]:
    """``nini models test`` / ``nini doctor --check-models`` / REST ``{"all": true}``: one tiny call per
    (provider, model) to try: ``name``'s default model, or the first choice of every purpose (as
    ``router`` resolves them: the runtime's where there is one). Each is (provider/model, ok,
    latency or why not, with the purposes it serves)."""
    import os

    providers = {p.name: p for p in settings.llm.providers}
    if name is not None:
        if name not in providers:
            raise NiniError(ErrorCode.NOT_FOUND, f"no provider {name!r}; nini models list shows them")
        targets = {(name, providers[name].model): [name]}
    else:
        targets = {}
        router = router or ModelRouter.from_settings(settings)
        for purpose in PURPOSES:
            try:
                first = router.chain(purpose, require_vision=purpose == "image_analysis")[0]
            except NiniError:
                continue
            targets.setdefault((first.provider, first.model), []).append(purpose)
    results = []
    for (provider_name, model), purposes in targets.items():
        provider = providers[provider_name].model_copy(update={"model": model})
        try:
            outcome = await test_provider(provider, os.environ, settings)
        except NiniError as exc:  # a key variable that holds a server secret: said, never sent
            outcome = _failed(provider, exc.code.value, exc.message, settings.home)
        detail = f"{outcome['latency_ms']} ms" if outcome["ok"] else outcome["reason"]
        results.append((f"{provider_name}/{model}", bool(outcome["ok"]), f"{detail} ({', '.join(purposes)})"))
    return results


def _failed(provider: ProviderSettings, code: str, message: str, home: Path) -> dict[str, Any]:
    short = " ".join(message.split())
    short = short if len(short) <= 300 else short[:299] + "…"
    return {"ok": False, "provider": provider.name, "reason": f"{code}: {_shown(short, home)}"}


def _shown(text: str | None, home: Path) -> str | None:
    """``text`` as a client may see it: no host path (a replay script's, say)."""
    return redact_paths(text, nini_home=home) if text else text
