"""Skills about skills, for task:skill:search and task:skill:enhance: find one, save a better one.

Search is lexical (words, and character pairs for Chinese) over names and descriptions, with
rarer terms counting more: no model, no download, good enough to shortlist.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import TYPE_CHECKING, Any

from nini.skills.editing import save_markdown_skill
from nini.skills.function import skill

if TYPE_CHECKING:
    from nini.session import Session

_WORD = re.compile(r"[a-z0-9]+")
_CJK = re.compile(r"[\u4e00-\u9fff]+")


@skill("search_skills", category="other", read_only=True)
def search_skills(session: Session, query: str, limit: int = 5) -> list[dict[str, Any]]:
    """Find the skills that best match a need, by name and description.

    Args:
        query: What the skill should do, in a few words (English or Chinese).
        limit: How many matches to return (1-20).
    """
    records = [r for r in session.registry.list() if r["enabled"]]
    documents = [terms(f"{r['name'].replace('-', ' ').replace('_', ' ')} {r['description']}") for r in records]
    frequency = Counter(term for doc in documents for term in set(doc))
    wanted = set(terms(query))
    scored = []
    for record, doc in zip(records, documents, strict=True):
        counts = Counter(doc)
        score = sum(math.log(1 + len(records) / frequency[t]) * (1 + math.log(counts[t])) for t in wanted if t in counts)
        if score > 0:
            scored.append((round(score, 3), record))
    scored.sort(key=lambda pair: (-pair[0], pair[1]["name"]))
    return [
        {"name": r["name"], "type": r["type"], "description": r["description"], "score": score}
        for score, r in scored[: max(1, min(limit, 20))]
    ]


@skill("save_skill", category="other", writes=True)
def save_skill(session: Session, name: str, content: str) -> dict[str, Any]:
    """Save a Markdown skill (a whole SKILL.md) to the session owner's skills folder, replacing its earlier version.

    The file must pass the Agent Skills rules; the earlier user version is kept as SKILL.md.bak.
    A bundled skill of the same name is shadowed by the saved one, not changed.

    Args:
        name: The skill's name (lowercase words joined by hyphens); also its folder name.
        content: The complete SKILL.md text, frontmatter included.
    """
    saved = save_markdown_skill(session.registry, name, content)
    return {key: saved[key] for key in ("name", "location", "backup", "warnings")}


def terms(text: str) -> list[str]:
    """Lower-case words, plus overlapping character pairs of Chinese runs."""
    lowered = text.lower()
    found = _WORD.findall(lowered)
    for run in _CJK.findall(lowered):
        found += [run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)]
    return found
