"""What a model error says to do next: the provider, the URL it called and the next step.

A bare "cannot reach provider local: Connection error." left the person to guess which address was
called and what to try. Every UPSTREAM_ERROR or TIMEOUT a provider gives (``ModelRouter.complete``,
``nini models test``) and every NO_MODEL_AVAILABLE for want of any provider goes through here. A
base URL is an address the person configured, fine to show (never its user:password part or its
query, where a key could hide); a key is never shown.
"""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

from nini.config import ProviderSettings
from nini.errors import ErrorCode, NiniError

# where the SDKs send a provider without a base_url
DEFAULT_URLS = {"openai": "https://api.openai.com/v1", "anthropic": "https://api.anthropic.com"}
ADD_EXAMPLE = "nini models add ollama --base-url http://127.0.0.1:11434/v1 --model qwen2.5:7b"
NO_MODEL = {
    "zh": f"尚未配置任何模型；请添加一个，例如 {ADD_EXAMPLE}",
    "en": f"no model is configured; add one, e.g. {ADD_EXAMPLE}",
}
STEPS = {
    "zh": {
        "unreachable": "请确认 {url} 上的服务器正在运行",
        "timeout": "请确认 {url} 上的服务器正在运行且能及时回答（或调大 llm.request_timeout_s）",
        "key": "请检查变量 {env} 中的 API 密钥",
        "no_key": "请检查该服务是否需要 API 密钥（设置一个变量并用 --api-key-env 指定它的名字）",
        "model": "请检查模型名 {model} 和 base URL {url}",
        "test": "用 nini models test {name} 试一试",
        "at": "（提供方 {name}，地址 {url}）",
    },
    "en": {
        "unreachable": "check that the server at {url} is running",
        "timeout": "check that the server at {url} is running and answers in time (or raise llm.request_timeout_s)",
        "key": "check the API key in the variable {env}",
        "no_key": "check whether it needs an API key (set a variable and name it with --api-key-env)",
        "model": "check the model name {model} and the base URL {url}",
        "test": "try nini models test {name}",
        "at": " (provider {name} at {url})",
    },
}


def shown_url(provider: ProviderSettings) -> str:
    """The URL ``provider`` calls, as a person may see it: no credentials, no query."""
    url = provider.base_url or DEFAULT_URLS.get(provider.kind, "")
    if not url:
        return ""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"[{host}]" if ":" in host else host
    if parts.port is not None:
        netloc += f":{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def next_step(error: NiniError, provider: ProviderSettings, language: str, *, suggest_test: bool = True) -> str:
    """What to do about ``error`` from ``provider``, in ``language``: start the server, check the key
    or the model name, or try ``nini models test NAME`` (left out where that is what failed)."""
    words = STEPS.get(language, STEPS["en"])
    url = shown_url(provider)
    status = (error.details or {}).get("status")
    facts = {"url": url, "name": provider.name, "env": provider.api_key_env, "model": provider.model}
    steps = []
    if provider.kind == "replay" or not url:
        pass
    elif error.code is ErrorCode.TIMEOUT:
        steps.append(words["timeout"])
    elif status is None:
        steps.append(words["unreachable"])
    elif status in (401, 403):
        steps.append(words["key"] if provider.api_key_env else words["no_key"])
    elif status == 404:
        steps.append(words["model"])
    if suggest_test:
        steps.append(words["test"])
    separator = "；" if language == "zh" else "; "
    return separator.join(step.format(**facts) for step in steps)


def advised(error: NiniError, provider: ProviderSettings, language: str, *, suggest_test: bool = True) -> NiniError:
    """``error`` (UPSTREAM_ERROR or TIMEOUT) with the provider, its URL and the next step in its message."""
    words = STEPS.get(language, STEPS["en"])
    url = shown_url(provider)
    step = next_step(error, provider, language, suggest_test=suggest_test)
    where = words["at"].format(name=provider.name, url=url) if url and url not in error.message + step else ""
    separator = "；" if language == "zh" else "; "
    message = error.message.rstrip(". ") + where + (separator + step if step else "")
    return NiniError(error.code, message, {**(error.details or {}), "base_url": url or None})


def no_model(language: str) -> str:
    """NO_MODEL_AVAILABLE's words when no provider is configured at all: how to add one."""
    return NO_MODEL.get(language, NO_MODEL["en"])
