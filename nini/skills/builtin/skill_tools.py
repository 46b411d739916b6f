"""Skills about skills, for task:skill:search and task:skill:enhance: find one, save a better one.

Search is lexical (words, and character pairs for Chinese) over names and descriptions, with
rarer terms counting more: no model, no download, good enough to shortlist.

What the agent saves goes into one folder, the one ``skill_enhance.skills_dir`` names (unset: the
user skills folder, the session owner's on a shared server), which must be the user skills folder
or an extra dir: never a project's or nini's bundled folder. A save that could only be hidden by a
skill outside that folder (a project's, which changes only through its own files) is refused, as is
one under the name of a meta-skill, with POLICY_VIOLATION: instructions a project or a model
brought cannot reach the user's skills through the enhancement sub-agent.
"""

from __future__ import annotations

import math
import os
import re
from collections import Counter
from typing import TYPE_CHECKING, Any

from nini.errors import ErrorCode, NiniError
from nini.skills.editing import markdown_record, save_markdown_skill
from nini.skills.function import skill

if TYPE_CHECKING:
    from pathlib import Path

    from nini.config import Settings
    from nini.session import Session
    from nini.skills.discovery import SkillRoot
    from nini.skills.registry import SkillRegistry

_WORD = re.compile(r"[a-z0-9]+")
_CJK = re.compile(r"[\u4e00-\u9fff]+")
WRITABLE_ROOTS = ("user", "extra")  # the kinds of skills root the agent may save into


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
        score = sum(
            math.log(1 + len(records) / frequency[t]) * (1 + math.log(counts[t])) for t in wanted if t in counts
        )
        if score > 0:
            scored.append((round(score, 3), record))
    scored.sort(key=lambda pair: (-pair[0], pair[1]["name"]))
    return [
        {"name": r["name"], "type": r["type"], "description": r["description"], "score": score}
        for score, r in scored[: max(1, min(limit, 20))]
    ]


@skill("save_skill", category="other", writes=True)
def save_skill(session: Session, name: str, content: str) -> dict[str, Any]:
    """Save a Markdown skill (a whole SKILL.md) to the skills folder set for saving skills, replacing its
    earlier version.

    That folder is the session owner's skills folder unless the setting skill_enhance.skills_dir names
    another; nothing is written anywhere else. The file must pass the Agent Skills rules; the earlier
    version is kept as SKILL.md.bak. A bundled skill of the same name is shadowed by the saved one, not
    changed. A project's skills and nini's meta-skills (skill-creator, skill-enhance) cannot be saved.

    Args:
        name: The skill's name (lowercase words joined by hyphens); also its folder name.
        content: The complete SKILL.md text, frontmatter included.
    """
    registry = session.registry
    folder = skills_folder(registry, session.settings)
    check_not_hidden(registry, name, folder)
    saved = save_markdown_skill(registry, name, content, folder=None if folder.kind == "user" else folder.path)
    return {key: saved[key] for key in ("name", "location", "backup", "warnings")}


def skills_folder(registry: SkillRegistry, settings: Settings) -> SkillRoot:
    """The skills root the agent saves into (see the module docstring); POLICY_VIOLATION when the
    setting names a project's or nini's bundled folder, or a folder nini does not read skills from."""
    wanted = settings.skill_enhance.skills_dir
    for root in registry.roots:  # in priority order: a folder that is a project's too counts as the project's
        if root.kind == "user" if wanted is None else _same_folder(root.path, wanted):
            if root.kind in WRITABLE_ROOTS:
                return root
            raise NiniError(
                ErrorCode.POLICY_VIOLATION,
                f"skill_enhance.skills_dir names the {root.kind} skills folder: skills are saved only into "
                "the user skills folder or one of skills.extra_dirs, never a project's or nini's bundled folder",
            )
    raise NiniError(
        ErrorCode.POLICY_VIOLATION,
        "skill_enhance.skills_dir is not a folder nini reads skills from: "
        "name the user skills folder or one of skills.extra_dirs; nothing was saved",
    )


def check_not_hidden(registry: SkillRegistry, name: str, folder: SkillRoot) -> None:
    """POLICY_VIOLATION when skill ``name`` is in use from a root that ranks above ``folder`` (a
    project's; the user's when ``folder`` is an extra dir): a copy saved there would stay hidden,
    and that skill changes only through its own files."""
    record = markdown_record(registry, name)
    root = registry.root_of(record) if record is not None else None
    order = [r.path for r in registry.roots]
    if record is not None and root is not None and root != folder.path and order.index(root) < order.index(folder.path):
        raise NiniError(
            ErrorCode.POLICY_VIOLATION,
            f"skill {name!r} comes from the {record.source} skills, which rank above the folder skills are "
            "saved to: a copy would stay hidden, and that skill changes only through its own files; "
            "nothing was saved",
            {"name": name, "source": record.source},
        )


def _same_folder(a: Path, b: Path) -> bool:
    return os.path.realpath(a) == os.path.realpath(b)


def terms(text: str) -> list[str]:
    """Lower-case words, plus overlapping character pairs of Chinese runs."""
    lowered = text.lower()
    found = _WORD.findall(lowered)
    for run in _CJK.findall(lowered):
        found += [run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)]
    return found
