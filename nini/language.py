"""Which language nini words its messages in: a per-command override, ``ui.language``, the client's, or the locale's.

``ui.language`` is ``zh`` or ``en`` to force one language everywhere, or ``auto`` (the default) to
follow the person: the JupyterLab sidebar says its language with every request (the
``X-Nini-Language`` header, see ``jupyter_ext.handlers.base``), and the server holds it for the
request and everything the request starts (an agent turn, its R and Python runs, a report) in a
context variable, as a web framework activates a request's locale. Where no client says a
language (the CLI, MCP over stdio, the magics, a REST call without the header), ``auto`` follows
the process's locale as POSIX programs do: the first non-empty of ``LC_ALL``, ``LC_MESSAGES``,
``LANG``; Chinese for ``zh*``, English for anything else (``C``, ``POSIX``, unset included).

One command can say its language outright (``nini --lang en``, ``nini report --lang``):
``use_language`` sets an override for the rest of the context that beats everything, a forced
``ui.language`` included, because the person asked for it just now.

Context variables follow asyncio tasks and ``asyncio.to_thread``; ``HistoryStore.call`` carries the
context to its threads too, so code that picks words reads ``settings.ui.current_language`` and needs
to know nothing of where the request came from.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from contextvars import ContextVar
from typing import Literal

Language = Literal["zh", "en"]
LANGUAGES: tuple[Language, ...] = ("zh", "en")
LOCALE_VARIABLES = ("LC_ALL", "LC_MESSAGES", "LANG")  # POSIX precedence for messages

_client: ContextVar[Language | None] = ContextVar("nini_client_language", default=None)
_override: ContextVar[Language | None] = ContextVar("nini_language_override", default=None)


def language_of(value: object) -> Language | None:
    """``zh`` or ``en`` for a language tag a client sends (``zh``, ``zh-CN``, ``zh_Hans``, ``en-GB``...), else None."""
    if not isinstance(value, str):
        return None
    tag = value.strip().lower()
    return next(
        (language for language in LANGUAGES if tag == language or tag.startswith((f"{language}-", f"{language}_"))),
        None,
    )


def locale_language(environ: Mapping[str, str] | None = None) -> Language:
    """The language of the locale (``environ``, default the process's): Chinese when the first
    non-empty of ``LC_ALL``, ``LC_MESSAGES``, ``LANG`` starts with ``zh`` (``zh_CN.UTF-8``, ``zh_TW``,
    ``zh``), English otherwise. Read at each call: a process that changes its environment (a test,
    a server started under another locale) is followed."""
    env = os.environ if environ is None else environ
    value = next((env[name] for name in LOCALE_VARIABLES if env.get(name)), "")
    return "zh" if value.strip().lower().startswith("zh") else "en"


def words_language(setting: str | None) -> Language:
    """The language of nini's words now: the override of this command (``use_language``), else
    ``setting`` (``ui.language``) when it forces one, else the client's language of this request,
    else the locale's."""
    if (chosen := _override.get()) is not None:
        return chosen
    if setting in LANGUAGES:
        return setting
    return _client.get() or locale_language()


def use_language(value: Language | None) -> None:
    """Word everything in ``value`` for the rest of the current context (``--lang``), whatever
    ``ui.language`` or the client says; None (or a value that names neither language) lifts the override."""
    _override.set(language_of(value))


def set_client_language(value: object) -> None:
    """The client's language for the rest of the current context (a request's task and what it
    starts); a value that names neither language leaves it unset."""
    _client.set(language_of(value))
