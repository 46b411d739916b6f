"""The value types the skills subsystem hands out."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

SkillType = Literal["function", "markdown"]


@dataclass(frozen=True)
class SkillRecord:
    """One skill in the unified list. ``to_dict()`` is the contract of DESIGN.md section 4."""

    name: str
    description: str
    type: SkillType
    location: str  # relative to its skills root (or module:function for code), never absolute
    enabled: bool
    category: str
    metadata: dict[str, Any] = field(default_factory=dict)
    path: Path | None = field(default=None, compare=False, repr=False)  # internal, never serialised

    @property
    def source(self) -> str:
        return self.metadata.get("source", "code")

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "type": self.type,
            "location": self.location,
            "enabled": self.enabled,
            "category": self.category,
            "metadata": self.metadata,
        }


@dataclass(frozen=True)
class SkillProblem:
    """Something ``nini skills doctor`` reports: a skipped file, a broken rule, a shadow, a conflict."""

    severity: Literal["error", "warning"]
    kind: Literal["invalid", "rule", "shadowed", "conflict", "untrusted", "refused", "state", "snapshot"]
    message: str
    source: str = ""
    location: str = ""
    name: str | None = None
    path: Path | None = field(default=None, compare=False, repr=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "severity": self.severity,
            "kind": self.kind,
            "name": self.name,
            "source": self.source,
            "location": self.location,
            "message": self.message,
        }


@dataclass(frozen=True)
class SkillDefinition:
    """A Markdown skill's definition as read from disk at the moment of use."""

    name: str
    body: str
    content_hash: str  # sha256 of the file's bytes; invocation records carry it
    location: str
    folder: Path = field(repr=False)
