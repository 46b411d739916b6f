"""The shapes of experience: an INDEX.md row, a candidate waiting for the user, and their vocabularies.

INDEX.md is the single source of truth of a library: one Markdown table whose columns are
``COLUMNS`` in this order. A row's ID is its file's name (``EXP-0003``); ``Replaces`` and
``ReplacedBy`` hold IDs. ``Tag`` holds space-separated ``#tags``, the first of them the stage the
experience came from (``#analysis #revenue``), which is how matching knows a row's stage without
a column the format does not have.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import asdict, dataclass, field, fields
from typing import Any

COLUMNS = (
    "Tag",
    "Type",
    "Title",
    "Trigger (when to load)",
    "Surface signal",
    "Hidden risk",
    "Status",
    "Scope",
    "Strength",
    "Replaces",
    "ReplacedBy",
    "File",
)
STATUSES = ("active", "deprecated")
SCOPES = ("narrow", "medium", "broad")  # narrowest first: max() of their positions is the broader
STRENGTHS = ("hypothesis", "validated", "enforced")  # weakest first
TYPES = ("standard", "knowledge")
LEVELS = ("team", "project")
STAGES = ("init", "analysis", "report", "review")  # in the order of a project's life: neighbours are adjacent
ID_PATTERN = re.compile(r"EXP-\d{4,}")


@dataclass
class IndexRow:
    """One line of an INDEX.md table (its cells, stripped)."""

    tag: str
    type: str
    title: str
    trigger: str
    surface_signal: str
    hidden_risk: str
    status: str
    scope: str
    strength: str
    replaces: str
    replaced_by: str
    file: str

    @property
    def id(self) -> str:
        """``EXP-0003`` from ``knowledge/EXP-0003.md``; "" when the file is not named like that."""
        found = ID_PATTERN.search(self.file.rsplit("/", 1)[-1])
        return found.group(0) if found else ""

    @property
    def stage(self) -> str | None:
        """The first ``#tag`` when it names a stage."""
        first = self.tag.split()[0].lstrip("#") if self.tag.split() else ""
        return first if first in STAGES else None

    def cells(self) -> list[str]:
        return [getattr(self, f.name) for f in fields(self)]

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "id": self.id, "stage": self.stage}


@dataclass
class Candidate:
    """An experience the user has not confirmed yet (EXP-CANDIDATE): what was decided, against what,
    on which signal. Stored in the pending file in its JSON form (``to_json``, camelCase keys)."""

    decision: str
    alternatives: list[str]
    signal: str
    stage: str = "analysis"
    task_id: str | None = None  # the session it came from
    trigger: str = ""
    solution: str = ""
    verify: str = ""
    pointers: list[str] = field(default_factory=list)
    level: str = ""  # team | project; "" until stage 1 decides
    type: str = ""  # standard | knowledge; "" until stage 1 decides
    title: str = ""
    surface_signal: str = ""
    hidden_risk: str = ""
    used_to_think: str = ""
    now_believe: str = ""
    because: str = ""
    scope: str = "narrow"
    strength: str = "hypothesis"
    source: str = "explicit"  # explicit (the user said it) or model (extracted from a conversation)
    quote: str = ""  # the user's words it came from
    notes: list[str] = field(default_factory=list)  # what stage-1 changed, for the user to see
    id: str = field(default_factory=lambda: uuid.uuid4().hex[:8])

    _KEYS = {
        "task_id": "taskId",
        "surface_signal": "surfaceSignal",
        "hidden_risk": "hiddenRisk",
        "used_to_think": "usedToThink",
        "now_believe": "nowBelieve",
    }

    def to_json(self) -> dict[str, Any]:
        return {self._KEYS.get(f.name, f.name): getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Candidate:
        """From the JSON form; unknown keys are ignored, text fields coerced to str, lists to lists of str."""
        reverse = {v: k for k, v in cls._KEYS.items()}
        known = {f.name: f for f in fields(cls)}
        values: dict[str, Any] = {}
        for key, value in data.items():
            name = reverse.get(key, key)
            if name not in known or value is None:
                continue
            if name in ("alternatives", "pointers", "notes"):
                items = value if isinstance(value, list) else [value]
                values[name] = [str(item).strip() for item in items if str(item).strip()]
            else:
                values[name] = str(value).strip()
        values.setdefault("decision", "")
        values.setdefault("alternatives", [])
        values.setdefault("signal", "")
        return cls(**values)

    def text(self) -> str:
        """What similarity compares: title, trigger and decision."""
        return " ".join(part for part in (self.title, self.trigger, self.decision) if part)
