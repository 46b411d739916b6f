"""Caps on the text a person or a model hands nini: code, a step's label, a session's title.

One place for them (``limits.*`` in the settings, ``LimitsSettings``) and one check, called on
every path before anything is stored or run: the CLI (``run-code``, ``run-r``), MCP, REST (the
request-body parser) and ``invoke`` (the agent's tool calls, and a backstop for every other path).

A text over its cap is TOO_LARGE (413), naming the setting that raises it; a lone surrogate (a
half of a UTF-16 pair: JSON's ``"\\ud800"``, or stdin read with ``surrogateescape``) cannot be
stored or shown and is INVALID_ARGUMENT, where it used to surface as INTERNAL from the database.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from nini.errors import ErrorCode, NiniError

if TYPE_CHECKING:
    from nini.config import Settings

Kind = Literal["code", "label", "title"]

# The skill arguments each cap applies to, whatever the skill (run_code, run_r_code, a magic's).
ARGUMENT_KINDS: dict[str, Kind] = {"code": "code", "label": "label"}


@dataclass(frozen=True)
class Limits:
    """The caps in characters, as ``settings.limits`` gives them (``Limits.of(settings)``)."""

    code: int
    label: int
    title: int

    @classmethod
    def of(cls, settings: Settings) -> Limits:
        section = settings.limits
        return cls(code=section.max_code_chars, label=section.max_label_chars, title=section.max_title_chars)

    def cap(self, kind: Kind) -> int:
        return int(getattr(self, kind))


def setting_name(kind: Kind) -> str:
    """The setting that caps ``kind``, as a person writes it in settings.json (dotted)."""
    return f"limits.max_{kind}_chars"


def check_surrogates(value: str, what: str) -> None:
    """INVALID_ARGUMENT when ``value`` holds a lone surrogate (no UTF-8 for it: the database,
    the event stream and a terminal would all fail on it). ``what`` names the field."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise NiniError(
            ErrorCode.INVALID_ARGUMENT,
            f"{what} holds a lone surrogate (U+{ord(value[exc.start]):04X} at character {exc.start:,}), which is not "
            "text: send it as UTF-8",
            {"field": what, "position": exc.start},
        ) from None


def check_text(kind: Kind, value: str, limits: Limits, what: str | None = None) -> None:
    """TOO_LARGE when ``value`` is longer than the cap on ``kind`` (the message names the setting),
    INVALID_ARGUMENT when it holds a lone surrogate. ``what`` names the field (default: ``kind``)."""
    what = what or kind
    cap = limits.cap(kind)
    if len(value) > cap:
        raise NiniError(
            ErrorCode.TOO_LARGE,
            f"{what} has {len(value):,} characters; at most {cap:,} are accepted (setting {setting_name(kind)})",
            {"field": what, "chars": len(value), "limit": cap, "setting": setting_name(kind)},
        )
    check_surrogates(value, what)


def check_arguments(arguments: Mapping[str, Any], limits: Limits) -> None:
    """The caps on a skill call's arguments: its ``code`` and ``label`` (when they are text; a value
    of another type is the skill's own validation to refuse), and no lone surrogate in any text."""
    for name, kind in ARGUMENT_KINDS.items():
        value = arguments.get(name)
        if isinstance(value, str):
            check_text(kind, value, limits, name)
    _no_surrogates(arguments, "arguments")


def _no_surrogates(value: Any, where: str) -> None:
    """``check_surrogates`` on every string in a JSON-like value, keys included (a loop, not
    recursion: a value nested deeper than Python's stack is still checked)."""
    stack: list[tuple[Any, str]] = [(value, where)]
    while stack:
        item, path = stack.pop()
        if isinstance(item, str):
            check_surrogates(item, path)
        elif isinstance(item, Mapping):
            for key, inner in item.items():
                stack.append((key, path))
                stack.append((inner, f"{path}.{key}" if isinstance(key, str) and key.isidentifier() else path))
        elif isinstance(item, (list, tuple)):
            stack.extend((inner, path) for inner in item)


def recordable(arguments: Mapping[str, Any], limits: Limits) -> dict[str, Any]:
    """``arguments`` as a refused call's record keeps them: a ``code`` or ``label`` over its cap
    replaced by a line saying how long it was, lone surrogates by "?" (so the refusal itself can
    be stored and shown; the refused text is not kept)."""
    kept: dict[str, Any] = {}
    for name, value in arguments.items():
        kind = ARGUMENT_KINDS.get(name)
        if isinstance(value, str) and kind is not None and len(value) > limits.cap(kind):
            value = f"({len(value):,} characters, over {setting_name(kind)}: not kept)"
        kept[_utf8(name)] = _json_utf8(value)
    return kept


def _utf8(text: str) -> str:
    return text.encode("utf-8", "replace").decode("utf-8") if isinstance(text, str) else text


def _json_utf8(value: Any) -> Any:
    """``value`` with every lone surrogate in its strings replaced (a refused call's arguments are
    what a model sent: shallow JSON, so recursion is bounded by the parser that built them)."""
    if isinstance(value, str):
        return _utf8(value)
    if isinstance(value, Mapping):
        return {_utf8(k): _json_utf8(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_utf8(v) for v in value]
    return value


def recordable_json(text: Any, limits: Limits) -> Any:
    """A model's tool call arguments (JSON text) as its stored message keeps them: with
    ``recordable``'s stand-ins when they would be refused (invoke refuses the call itself), else
    as they came. A later turn's context replays the stand-in, not megabytes of refused code."""
    if not isinstance(text, str) or len(text) <= limits.label:
        return text  # nothing in it can be over a cap
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        value = None
    if not isinstance(value, dict):
        return (
            text if len(text) <= limits.code else json.dumps({"(arguments)": f"({len(text):,} characters: not kept)"})
        )
    try:
        check_arguments(value, limits)
    except NiniError:
        return json.dumps(recordable(value, limits), ensure_ascii=False)
    return text
