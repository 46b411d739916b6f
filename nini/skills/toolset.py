"""The tools a model is offered: a run's allowed skills as OpenAI function schemas.

A skills concern, used by the agent (a run's and a task's tools) and by the MCP server (its tool
list) alike, so it lives with the registry and not in ``agent/``.

Skill names are not always valid function names (``task:explore`` has colons; OpenAI accepts
``^[a-zA-Z0-9_-]{1,64}$``), so each tool has a wire name and ``ToolSet.skill_name`` maps back.
Markdown skills are offered too: calling one reads its definition (read-before-execute, in
``invoke``) and its steps come back to the model to follow.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nini.skills.registry import SkillRegistry

TASK_PREFIX = "task:"
_INVALID = re.compile(r"[^a-zA-Z0-9_-]")
MARKDOWN_PARAMETERS = {
    "type": "object",
    "properties": {"request": {"type": "string", "description": "What you want to do with this skill, in a sentence."}},
    "additionalProperties": False,
}

SkillFilter = Callable[[dict[str, Any]], bool]


def is_task(name: str) -> bool:
    """Whether a skill name is a task:* command (a sub-agent whose return is summarised)."""
    return isinstance(name, str) and name.startswith(TASK_PREFIX)


def wire_name(skill_name: str) -> str:
    """The function name the model sees: ``task:skill:search`` -> ``task__skill__search``."""
    return _INVALID.sub("_", skill_name.replace(":", "__"))[:64]


@dataclass
class ToolSet:
    """The schemas for one model call and the wire-name -> skill-name map to run what it picks."""

    schemas: list[dict[str, Any]] = field(default_factory=list)
    _skills: dict[str, str] = field(default_factory=dict)

    def skill_name(self, wire: str) -> str | None:
        """The skill behind a tool name the model used; None when it is not offered in this run."""
        return self._skills.get(wire)

    def __contains__(self, skill_name: object) -> bool:
        return skill_name in self._skills.values()

    def add(self, skill_name: str, description: str, parameters: dict[str, Any]) -> None:
        wire = wire_name(skill_name)
        if wire in self._skills:  # a function skill shadows a Markdown skill of the same name
            return
        self._skills[wire] = skill_name
        self.schemas.append(
            {
                "type": "function",
                "function": {"name": wire, "description": description[:1024], "parameters": parameters},
            }
        )


def build_toolset(registry: SkillRegistry, allow: SkillFilter) -> ToolSet:
    """Every enabled skill that ``allow`` admits (given its record), function skills first."""
    tools = ToolSet()
    records = [r for r in registry.list() if r["enabled"] and allow(r)]
    for record in sorted(records, key=lambda r: r["type"] != "function"):
        if record["type"] == "function":
            schema = registry.function(record["name"]).input_schema()
            tools.add(record["name"], record["description"], _clean_schema(schema))
        else:
            description = f"{record['description']} (Markdown skill: calling it returns its instructions to follow.)"
            tools.add(record["name"], description, MARKDOWN_PARAMETERS)
    return tools


def _clean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """pydantic's schema minus its ``title`` noise, which only costs tokens."""
    cleaned = {k: v for k, v in schema.items() if k != "title"}
    cleaned["properties"] = {
        name: {k: v for k, v in prop.items() if k != "title"} for name, prop in schema.get("properties", {}).items()
    }
    cleaned.setdefault("type", "object")
    return cleaned
