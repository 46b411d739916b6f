"""Request bodies of nini's REST endpoints: read once, parsed with bounds, validated by one model each.

A handler reads its body with ``NiniHandler.parse(Model)`` and nothing else. First the JSON itself
is bounded (``load_body``), so no body can make the server fail with INTERNAL:

- nesting at most ``MAX_DEPTH`` deep (JSON nested 10,000 deep used to raise RecursionError);
- integers within 64 bits (Python refuses 4,300 digits and more with ValueError, and a database
  column any over 64 bits), no NaN or Infinity, floats finite;
- text that is UTF-8: no lone surrogate (``"\\ud800"`` is valid JSON that no database, event
  stream or terminal takes).

Then the endpoint's pydantic model (``Body``: unknown fields refused, types strict, so "yes" is no
``true``), with ids checked for shape and length and titles capped by ``limits.max_title_chars``
(``nini.limits``: TOO_LARGE). Each refusal is INVALID_ARGUMENT naming the field. Fields whose rules
live elsewhere stay that code's to check: a skill's arguments (its input model, in ``invoke``; the
caps on code and labels here too, ``nini.limits.check_arguments``) and a model provider
(``provider_from_body``, which checks it against ``ProviderSettings``).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import fields as dataclass_fields
from typing import Annotated, Any, Literal, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    ValidationInfo,
    create_model,
    model_validator,
)

from nini.errors import ErrorCode, NiniError, validation_message
from nini.execution.approvals import Decision
from nini.limits import Limits, check_arguments, check_text
from nini.memory.experience.model import LEVELS, STAGES, Candidate

MAX_DEPTH = 64  # arrays and objects inside each other; a notebook's context is about 6 deep
INT64 = (-(2**63), 2**63 - 1)
LIMITS_CONTEXT = "limits"  # the validation context's key for the caps (``Limits``)

B = TypeVar("B", bound="Body")


def refuse(message: str, field: str | None = None) -> NiniError:
    return NiniError(ErrorCode.INVALID_ARGUMENT, message, {"field": field} if field else None)


def shown(path: str) -> str:
    """A field's path as a message names it: a client's keys can be of any length."""
    return path if len(path) <= 80 else path[:77] + "..."


# -- the JSON ------------------------------------------------------------------------------------


class _Refused:
    """A number the parser would not take, kept in place so that the walk names its field."""

    def __init__(self, why: str) -> None:
        self.why = why


def _int(text: str) -> int | _Refused:
    if len(text.lstrip("-")) > 19:  # before int(): 5,000 digits cost time and raise ValueError
        return _Refused("an integer outside the 64-bit range")
    value = int(text)
    return value if INT64[0] <= value <= INT64[1] else _Refused("an integer outside the 64-bit range")


def _float(text: str) -> float | _Refused:
    value = float(text)
    return value if math.isfinite(value) else _Refused("a number too large for a double")


def _constant(text: str) -> _Refused:
    return _Refused(f"{text}, which is not JSON")


def load_body(raw: bytes) -> dict[str, Any]:
    """The JSON object of a request body (empty: ``{}``), within the bounds above; INVALID_ARGUMENT
    naming the field otherwise."""
    raw = raw.strip()
    if not raw:
        return {}
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise refuse(f"the body is not UTF-8 (byte {exc.start:,})") from None
    try:
        body = json.loads(text, parse_int=_int, parse_float=_float, parse_constant=_constant)
    except RecursionError:
        raise refuse(f"the body is nested deeper than {MAX_DEPTH} levels") from None
    except json.JSONDecodeError as exc:
        raise refuse(f"the body is not valid JSON: {exc}") from None
    if not isinstance(body, dict):
        raise refuse(f"the body must be a JSON object, not {_json_type(body)}")
    check_value(body)
    return body


def check_value(value: Any) -> None:
    """Refuse, naming the field, what ``load_body`` parsed but nini does not take: nesting past
    ``MAX_DEPTH``, a refused number, a lone surrogate (in a key too). A loop, not recursion; a
    field's path is spelled out only for the refusal (``_Path``), as most bodies pass."""
    stack: list[tuple[Any, _Path | None, int]] = [(value, None, 0)]
    while stack:
        item, path, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise refuse(f"{_spelled(path) or 'the body'} is nested deeper than {MAX_DEPTH} levels", _spelled(path))
        pairs = item.items() if isinstance(item, dict) else enumerate(item)
        for key, inner in pairs:
            if isinstance(key, str) and not key.isascii():
                _no_surrogate(key, path)
            if isinstance(inner, str):
                if not inner.isascii():
                    _no_surrogate(inner, (path, key))
            elif isinstance(inner, dict | list):
                stack.append((inner, (path, key), depth + 1))
            elif isinstance(inner, _Refused):
                where = _spelled((path, key))
                raise refuse(f"{where} is {inner.why}", where)


_Path = tuple[Any, str | int]  # (the parent's path or None, a key or an index)


def _spelled(path: _Path | None) -> str | None:
    """``notebook.cells[2].source`` for a path; None for the body itself."""
    keys: list[str | int] = []
    while path is not None:
        path, key = path
        keys.append(key)
    text = "".join(f"[{key}]" if isinstance(key, int) else f".{key}" for key in reversed(keys)).lstrip(".")
    return shown(text) if text else None


def _no_surrogate(text: str, path: _Path | None) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        where = _spelled(path)
        raise refuse(
            f"{where or 'a key of the body'} holds a lone surrogate (U+{ord(text[exc.start]):04X}), which is "
            "not text: send it as UTF-8",
            where,
        ) from None


def _json_type(value: Any) -> str:
    return {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(type(value), "a number")


def validate(model: type[B], body: Mapping[str, Any], limits: Limits) -> B:
    """``body`` as ``model``; INVALID_ARGUMENT listing each problem with its field (TOO_LARGE from a cap)."""
    try:
        return model.model_validate(body, context={LIMITS_CONTEXT: limits})
    except ValidationError as exc:
        problems = [
            {"field": shown(".".join(str(p) for p in err["loc"])) or "(body)", "message": validation_message(err)}
            for err in exc.errors()
        ]
        summary = "; ".join(f"{p['field']}: {p['message']}" for p in problems)
        raise NiniError(
            ErrorCode.INVALID_ARGUMENT, f"invalid request body: {summary}", {"problems": problems}
        ) from None


# -- query and path arguments ----------------------------------------------------------------------

_WHOLE = re.compile(r"[0-9]{1,19}")  # ASCII digits only: str.isdigit() takes "²", which int() refuses
_ID = re.compile(r"[A-Za-z0-9_.:-]{1,128}")
_NAME_MAX = 200


def whole_number(name: str, raw: str, low: int = 0, high: int = INT64[1]) -> int:
    """Query or path argument ``name`` as a whole number from ``low`` to ``high``; INVALID_ARGUMENT
    (naming it, never echoing 5,000 digits) otherwise."""
    if not _WHOLE.fullmatch(raw) or not low <= int(raw) <= high:
        given = raw if len(raw) <= 40 else raw[:40] + "..."
        raise refuse(f"{name} must be a whole number from {low} to {high}, not {given!r}", name)
    return int(raw)


def check_id(name: str, value: str) -> str:
    """An id nini made (a session's, a proposal's, an approval's, a run's): letters, digits and
    ``_.:-``, at most 128 characters; INVALID_ARGUMENT otherwise (without echoing it), as no such id exists."""
    return _outside_model(_id, name, value)


def check_name(name: str, value: str) -> str:
    """A name a person chose (a skill's, a provider's): 1 to 200 characters, no control character."""
    return _outside_model(_name, name, value)


def _outside_model(check: Callable[[str], str], name: str, value: str) -> str:
    """A model's field check on a value from the URL or the query: INVALID_ARGUMENT naming ``name``."""
    try:
        return check(value)
    except ValueError as exc:
        raise refuse(f"{name}: {exc}", name) from None


def _id(value: str) -> str:
    if not _ID.fullmatch(value):
        raise ValueError("not an id (letters, digits and _.:- up to 128 characters)")
    return value


def _name(value: str) -> str:
    if not 0 < len(value) <= _NAME_MAX or not value.isprintable():
        raise ValueError(f"must be 1 to {_NAME_MAX} printable characters")
    return value


def _id_or_none(value: str) -> str:
    return _id(value) if value else value


def _limits(info: ValidationInfo) -> Limits:
    """The caps ``validate`` passes in the validation context (no body model is validated without)."""
    assert info.context is not None
    limits: Limits = info.context[LIMITS_CONTEXT]
    return limits


def _title(value: str, info: ValidationInfo) -> str:
    check_text("title", value, _limits(info), "title")
    return value


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be empty")
    return value


Id = Annotated[str, AfterValidator(_id)]
Name = Annotated[str, AfterValidator(_name)]
Title = Annotated[str, AfterValidator(_title)]
Text = Annotated[str, AfterValidator(_not_blank)]
Stage = Literal[STAGES]  # type: ignore[valid-type]
Level = Literal[LEVELS]  # type: ignore[valid-type]
Short = Annotated[str, StringConstraints(max_length=_NAME_MAX)]


# -- the models ------------------------------------------------------------------------------------


class Body(BaseModel):
    """A request body: only the fields the endpoint names, each of its type (no coercion)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class NoBody(Body):
    """An action that takes nothing (cancel, skills/refresh): no body, or ``{}``."""


class Passed(Body):
    """A body whose fields another validator owns (``fields``): JSON-checked here, no more."""

    model_config = ConfigDict(extra="allow", strict=True, frozen=True)

    @property
    def fields(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


class SkillArguments(Passed):
    """A skill's arguments (report): its own input model checks them in ``invoke``; code and
    labels are capped here first (``nini.limits``), so an over-long one is refused before any record."""

    @model_validator(mode="after")
    def _capped(self, info: ValidationInfo) -> SkillArguments:
        check_arguments(self.fields, _limits(info))
        return self


class RunCodeBody(SkillArguments):
    """run-code's and run-r-code's: the skill's arguments, and where Python is to run."""

    kernel_id: Id | None = None


class AskBody(Body):
    message: Text
    kernel_id: Id | None = None
    notebook_kernel_id: Id | None = None
    notebook: dict[str, Any] | None = None  # its shape is NotebookContext.from_json's to check
    stage: Stage | None = None
    title: Title | None = None


class NewSessionBody(Body):
    title: Title | None = None
    id: Id | None = None  # a session id: Runtime.create_session checks its shape further (check_session_id)


class RenameBody(Body):
    title: Title


class ApprovalBody(Body):
    """``{"decision"}``, or ``{"approve": bool}`` (once or reject)."""

    decision: Decision | None = None
    approve: bool | None = None

    @model_validator(mode="after")
    def _one(self) -> ApprovalBody:
        if self.decision is None and self.approve is None:
            raise ValueError('the body must be {"decision": "once"}, {"decision": "session"} or {"decision": "reject"}')
        return self

    @property
    def chosen(self) -> Decision:
        return self.decision or ("once" if self.approve else "reject")


class ProposalBody(Body):
    decision: Literal["accept", "reject"]
    ran: bool = False


class StatementBody(Body):
    text: Text
    level: Short | None = None
    type: Short | None = None
    trigger: str | None = None
    signal: str | None = None
    alternatives: list[str] | None = None
    stage: Stage = "analysis"
    session_id: Id | None = None  # then checked as any session id (Runtime.session)


def _confirmed(value: bool) -> bool:
    if value is not True:
        raise ValueError("nothing is changed in an experience library without the user's confirmation (confirm: true)")
    return value


Confirm = Annotated[bool, AfterValidator(_confirmed), Field(validate_default=True)]


class PlanBody(Body):
    ids: list[Id]
    targets: dict[Id, Level] | None = None


class DepositBody(PlanBody):
    confirm: Confirm = False
    plan: list[str] | None = None  # the lines the user saw


class DeprecateBody(Body):
    confirm: Confirm = False
    replaced_by: Short | None = None


def _candidate_body() -> type[Body]:
    """A pending candidate's edit: any of its fields as its JSON form spells them (``Candidate``)."""
    lists = ("alternatives", "pointers", "notes")
    spelled = {f.name: Candidate._KEYS.get(f.name, f.name) for f in dataclass_fields(Candidate)}
    return create_model(
        "CandidateBody",
        __base__=Body,
        **{  # type: ignore[call-overload]
            key: ((list[str] if name in lists else str) | None, None) for name, key in spelled.items()
        },
    )


CandidateBody = _candidate_body()


class PreferenceBody(Body):
    key: str  # its shape is the preference table's to check (one place, the CLI's too)
    value: Any  # any JSON: required, null included
    project: str | None = None


class PreferenceEditBody(Body):
    value: Any = None
    confidence: float | None = None


class SwitchesBody(Body):
    learning: bool | None = None
    injection: bool | None = None


class FeedbackBody(Body):
    run_id: Annotated[str, AfterValidator(_id_or_none)] = ""  # a turn's, a tool call's, a proposal's, "report:N"
    action: Short = ""
    signals: list[Short] | None = None
    comment: str | None = None
    evidence: dict[str, Any] | None = None  # a reference, never the text


class SkillBody(Body):
    name: Name
    description: str
    category: Short | None = None
    type: Literal["function", "markdown"] | None = None


class SkillSourceBody(Body):
    content: str


class EnabledBody(Body):
    enabled: bool


class KeyVariableBody(Body):
    name: Short


class ProviderNameBody(Body):
    """A configured provider to test, by name."""

    name: Name
