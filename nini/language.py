"""Which language nini words its messages in: ``ui.language``, or the client's when it is ``auto``.

``ui.language`` is ``zh`` or ``en`` to force one language everywhere, or ``auto`` (the default) to
follow the person's client: the JupyterLab sidebar says its language with every request (the
``X-Nini-Language`` header, see ``jupyter_ext.handlers.base``), and the server holds it for the
request and everything the request starts (an agent turn, its R and Python runs, a report) in a
context variable, as a web framework activates a request's locale. Where no client says a
language (the CLI, MCP, the magics), ``auto`` words messages in Chinese, as before ``auto`` existed
(issue 35 makes those follow the locale).

Context variables follow asyncio tasks and ``asyncio.to_thread``; ``HistoryStore.call`` carries the
context to its threads too, so code that picks words reads ``settings.ui.current_language`` and needs
to know nothing of where the request came from.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Literal

Language = Literal["zh", "en"]
LANGUAGES: tuple[Language, ...] = ("zh", "en")
NO_CLIENT_LANGUAGE: Language = "zh"  # ``auto`` where no client says one (until issue 35: the locale)

_client: ContextVar[Language | None] = ContextVar("nini_client_language", default=None)


def language_of(value: object) -> Language | None:
    """``zh`` or ``en`` for a language tag a client sends (``zh``, ``zh-CN``, ``zh_Hans``, ``en-GB``...), else None."""
    if not isinstance(value, str):
        return None
    tag = value.strip().lower()
    return next((language for language in LANGUAGES if tag == language or tag.startswith((f"{language}-", f"{language}_"))), None)


def words_language(setting: str | None) -> Language:
    """The language of nini's words now: ``setting`` (``ui.language``) when it forces one, else the
    client's language of this request, else Chinese."""
    if setting in LANGUAGES:
        return setting  # type: ignore[return-value]
    return _client.get() or NO_CLIENT_LANGUAGE


def set_client_language(value: object) -> None:
    """The client's language for the rest of the current context (a request's task and what it
    starts); a value that names neither language leaves it unset."""
    _client.set(language_of(value))

