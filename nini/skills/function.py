"""Function skills: Python callables registered with ``@skill``; their input schema comes from
type hints and the docstring (Google style ``Args:``), validated by pydantic."""

from __future__ import annotations

import functools
import importlib.util
import inspect
import json
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from nini.errors import ErrorCode, NiniError, validation_message
from nini.skills.rules import normalise_category

# A parameter with this name is not an argument of the skill: invoke() passes the calling Session.
SESSION_PARAMETER = "session"
_ARGS_HEADER = re.compile(r"^\s*(Args|Arguments|Parameters):\s*$")
_ARG_LINE = re.compile(r"^\s*(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


@dataclass(frozen=True)
class FunctionSkill:
    """A skill implemented in Python. ``input_model`` validates the arguments an LLM or user sends."""

    name: str
    description: str
    category: str
    func: Callable[..., Any]
    input_model: type[BaseModel]
    metadata: dict[str, Any] = field(default_factory=dict)
    source_location: str | None = None  # set for skills loaded from a skill.py, relative to its root

    @property
    def location(self) -> str:
        return self.source_location or f"{self.func.__module__}:{self.func.__qualname__}"

    @functools.cached_property
    def takes_session(self) -> bool:
        """Whether ``invoke`` passes the calling session as the ``session`` keyword (read once: the
        function of a skill never changes, and ``inspect.signature`` costs ~0.1 ms a call)."""
        return SESSION_PARAMETER in inspect.signature(self.func).parameters

    def input_schema(self) -> dict[str, Any]:
        """JSON schema of the arguments, as offered to the model as a tool: a copy of the one made
        once per model (pydantic takes about 1.5 ms to make it, and every model call and every MCP
        call lists the tools)."""
        return json.loads(_schema_json(self.input_model))

    def validate_arguments(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Checked and coerced arguments, or ``NiniError(INVALID_ARGUMENT)`` listing every problem."""
        try:
            model = self.input_model.model_validate(arguments)
        except ValidationError as exc:
            problems = [
                {"field": ".".join(str(p) for p in err["loc"]) or "(arguments)", "message": validation_message(err)}
                for err in exc.errors()
            ]
            summary = "; ".join(f"{p['field']}: {p['message']}" for p in problems)
            raise NiniError(
                ErrorCode.INVALID_ARGUMENT,
                f"invalid arguments for skill {self.name!r}: {summary}",
                {"skill": self.name, "problems": problems},
            ) from None
        return {name: getattr(model, name) for name in type(model).model_fields}


def skill(
    name: str | None = None,
    *,
    category: str = "other",
    description: str | None = None,
    **metadata: Any,
) -> Callable[[Callable[..., Any]], FunctionSkill]:
    """Turn a function into a ``FunctionSkill``; register it with ``SkillRegistry.register``.

    The description defaults to the docstring's first paragraph; each parameter's description
    comes from its line under ``Args:``. Parameters need type hints (they become the schema).
    """

    def decorate(func: Callable[..., Any]) -> FunctionSkill:
        summary, arg_docs = parse_docstring(inspect.getdoc(func) or "")
        skill_name = name or func.__name__
        normalised, unknown = normalise_category(category)
        meta = dict(metadata)
        if unknown is not None:
            meta["raw_category"] = unknown
        return FunctionSkill(
            name=skill_name,
            description=(description or summary or skill_name).strip(),
            category=normalised,
            func=func,
            input_model=_input_model(skill_name, func, arg_docs),
            metadata=meta,
        )

    return decorate


def parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """``(first paragraph, {parameter: description})`` from a Google-style docstring."""
    summary = " ".join(doc.split("\n\n", 1)[0].split())
    lines = doc.splitlines()
    start = next((i for i, line in enumerate(lines) if _ARGS_HEADER.match(line)), None)
    args: dict[str, str] = {}
    if start is None:
        return summary, args
    arg_indent: int | None = None
    current: str | None = None
    for line in lines[start + 1 :]:
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        if indent == 0:
            break  # the next section ("Returns:", ...) ends the arguments
        arg_indent = indent if arg_indent is None else arg_indent
        match = _ARG_LINE.match(line)
        if indent == arg_indent and match:
            current = match.group(1).lstrip("*")
            args[current] = match.group(2).strip()
        elif current:
            args[current] = f"{args[current]} {line.strip()}".strip()
    return summary, args


def _input_model(skill_name: str, func: Callable[..., Any], arg_docs: dict[str, str]) -> type[BaseModel]:
    signature = inspect.signature(func)
    hints = _resolved_hints(skill_name, func)
    fields: dict[str, Any] = {}
    for param in signature.parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD) or param.name == SESSION_PARAMETER:
            continue
        if param.name not in hints:
            raise NiniError(
                ErrorCode.INVALID_ARGUMENT,
                f"skill {skill_name!r}: parameter {param.name!r} needs a type hint (it becomes the input schema)",
            )
        default = ... if param.default is param.empty else param.default
        fields[param.name] = (hints[param.name], Field(default, description=arg_docs.get(param.name)))
    model_name = "".join(part.capitalize() for part in re.split(r"[^0-9A-Za-z]+", skill_name)) + "Input"
    return create_model(model_name, __config__=ConfigDict(extra="forbid"), **fields)


def _resolved_hints(skill_name: str, func: Callable[..., Any]) -> dict[str, Any]:
    """Evaluated type hints of the schema parameters. The ``session`` hint is skipped: it is
    usually imported under TYPE_CHECKING only, and it is not part of the schema anyway."""
    raw = {k: v for k, v in inspect.get_annotations(func).items() if k not in (SESSION_PARAMETER, "return")}
    namespace = dict(getattr(func, "__globals__", {}))
    hints: dict[str, Any] = {}
    for name, hint in raw.items():
        try:
            hints[name] = eval(hint, namespace) if isinstance(hint, str) else hint  # noqa: S307 - the skill's own annotation
        except Exception as exc:  # a hint that names something undefined
            raise NiniError(
                ErrorCode.INVALID_ARGUMENT, f"skill {skill_name!r}: type hints cannot be resolved: {exc}"
            ) from exc
    return hints


def load_skill_module(path: Path, module_name: str) -> list[FunctionSkill]:
    """Import a ``skill.py`` file and return the function skills it defines.

    Raises whatever the import raises; the registry turns that into a doctor warning.
    """
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(module_name, None)
        raise
    return [value for value in vars(module).values() if isinstance(value, FunctionSkill)]


@functools.lru_cache(maxsize=1024)
def _schema_json(model: type[BaseModel]) -> str:
    """``model``'s JSON schema as text, so that each caller gets a copy of its own to change."""
    return json.dumps(model.model_json_schema())
