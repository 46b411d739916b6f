"""Which preferences a prompt carries, and the block they make.

``select_memory_for_injection``: one owner's preferences (the session owner's: a turn is given its
owner's and nobody else's) at or above the confidence floor, a project's before the
global one of the same key, ranked by confidence plus a small bonus when the key concerns the skill
type (``report.*`` for reports, ``chart.*`` for charts and reports), Top-N, then lines kept in rank
order while they fit the token budget. Ties go by key, then id, so the same preferences give the
same bytes whatever order they were stored in. The ranking reads only the top rows by confidence
(the confidence index, walked from the top), never the whole table: 2N overall plus 2N of the skill
type's keys, with every row tied at the cut, are enough, since a key has at most two rows (project
and global).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from nini.errors import ErrorCode, NiniError
from nini.history.schema import user_preferences as table
from nini.memory.preferences.rules import describe
from nini.memory.preferences.store import owner_filter
from nini.tokens import count_tokens

if TYPE_CHECKING:
    from nini.history.store import HistoryStore

RELEVANT_BONUS = 0.05
SKILL_PREFIXES = {"report": ("report.", "chart."), "chart": ("chart.",), "answer": ()}
MAX_ITEMS_RANGE = (5, 12)
TOKEN_BUDGET_RANGE = (50, 4000)
HEADER = {
    "zh": "## 用户偏好\n\n按这些偏好调整回答与报告的写法：",
    "en": "## User preferences\n\nWrite answers and reports to these preferences:",
}
LINE = {
    "zh": "- 规则: {rule}（confidence={confidence:.2f}, source={source}）",
    "en": "- Rule: {rule} (confidence={confidence:.2f}, source={source})",
}
NONE = "(none)"


@dataclass
class Selection:
    rows: list[dict[str, Any]] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    block: str = ""

    @property
    def ids(self) -> list[int]:
        return [row["id"] for row in self.rows]

    def to_dict(self) -> dict[str, Any]:
        return {
            "block": self.block,
            "preferences": [{**row, "line": line} for row, line in zip(self.rows, self.lines, strict=True)],
        }


def select_memory_for_injection(
    store: HistoryStore,
    project_id: str | None,
    skill_type: str = "answer",
    max_items: int = 8,
    token_budget: int = 400,
    *,
    floor: float = 0.6,
    language: str = "zh",
    enabled: bool = True,
    owner: str | None = None,
) -> Selection:
    """The preferences for one prompt and their block ("(none)" when there are none)."""
    if not MAX_ITEMS_RANGE[0] <= max_items <= MAX_ITEMS_RANGE[1]:
        raise NiniError(
            ErrorCode.INVALID_ARGUMENT,
            f"max_items must be {MAX_ITEMS_RANGE[0]} to {MAX_ITEMS_RANGE[1]}, not {max_items}",
        )
    if not TOKEN_BUDGET_RANGE[0] <= token_budget <= TOKEN_BUDGET_RANGE[1]:
        raise NiniError(
            ErrorCode.INVALID_ARGUMENT,
            f"token_budget must be {TOKEN_BUDGET_RANGE[0]} to {TOKEN_BUDGET_RANGE[1]}, not {token_budget}",
        )
    header = HEADER.get(language, HEADER["zh"])
    if not enabled:
        return Selection(block=f"{header}\n{NONE}")
    prefixes = SKILL_PREFIXES.get(skill_type, ())
    rows = _top_rows(store, owner, project_id, floor, 2 * max_items, prefixes)
    best: dict[str, dict[str, Any]] = {}
    for row in rows:  # one per key: the project's row wins over the global one
        held = best.get(row["key"])
        if held is None or (held["project_id"] is None and row["project_id"] is not None):
            best[row["key"]] = row
    ranked = sorted(
        best.values(),
        key=lambda r: (
            -round(r["confidence"] + (RELEVANT_BONUS if r["key"].startswith(prefixes) and prefixes else 0), 6),
            r["key"],
            r["id"],
        ),
    )[:max_items]
    selection = Selection()
    used = count_tokens(header)
    line_format = LINE.get(language, LINE["zh"])
    for row in ranked:
        line = line_format.format(
            rule=describe(row["key"], row["value"], language), confidence=row["confidence"], source=row["source"]
        )
        cost = count_tokens(line) + 1
        if used + cost > token_budget:
            continue  # a long one left out; a shorter one after it may still fit
        selection.rows.append(row)
        selection.lines.append(line)
        used += cost
    selection.block = "\n".join([header, *(selection.lines or [NONE])])
    return selection


def _top_rows(
    store: HistoryStore, owner: str | None, project_id: str | None, floor: float, limit: int, prefixes: tuple[str, ...]
) -> list[dict[str, Any]]:
    columns = (table.c.id, table.c.project_id, table.c.key, table.c.value, table.c.source, table.c.confidence)
    mine = owner_filter(owner)
    scopes = [mine & table.c.project_id.is_(None)] + (
        [mine & (table.c.project_id == project_id)] if project_id is not None else []
    )
    found: dict[int, dict[str, Any]] = {}
    with store.reading() as conn:
        for (
            scope
        ) in scopes:  # one scope per query: the (owner, project_id, confidence) index serves it, walked from the top
            wheres = [scope & (table.c.confidence >= floor)]
            if prefixes:
                wheres.append(
                    wheres[0] & sa.or_(*(table.c.key.startswith(prefix, autoescape=True) for prefix in prefixes))
                )
            for where in wheres:
                top = [
                    dict(row._mapping)
                    for row in conn.execute(
                        sa.select(*columns).where(where).order_by(table.c.confidence.desc()).limit(limit)
                    )
                ]
                if len(top) == limit:  # every row tied with the last one, so the (key, id) tie-break sees them all
                    top += [
                        dict(row._mapping)
                        for row in conn.execute(
                            sa.select(*columns).where(where & (table.c.confidence == top[-1]["confidence"]))
                        )
                    ]
                found.update((row["id"], row) for row in top)
        keys = sorted({row["key"] for row in found.values()})
        if project_id is not None and keys:  # a project's own row of a chosen key, even when lower than the global one
            own = sa.select(*columns).where(
                mine & (table.c.project_id == project_id) & table.c.key.in_(keys) & (table.c.confidence >= floor)
            )
            for row in conn.execute(own):
                found[row.id] = dict(row._mapping)
    return list(found.values())
