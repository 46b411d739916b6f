"""Authoring rules for skills: Agent Skills naming and description limits, and nini's categories.

The loader only warns when a rule is broken (real published skills break them); ``nini skills
validate`` and the scaffold enforce them.
"""

from __future__ import annotations

import re

MAX_NAME_LENGTH = 64
MAX_DESCRIPTION_LENGTH = 1024
NAME_PATTERN = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")

# Frontmatter keys of the Agent Skills format, plus nini's own top-level `category`.
ALLOWED_FRONTMATTER_KEYS = frozenset(
    {"name", "description", "license", "allowed-tools", "metadata", "compatibility", "category"}
)

CATEGORIES = (
    "data",
    "statistics",
    "visualization",
    "export",
    "report",
    "workflow",
    "utility",
    "experiment_design",
    "other",
)

CATEGORY_ALIASES = {
    "analysis": "statistics",
    "stat": "statistics",
    "stats": "statistics",
    "viz": "visualization",
    "chart": "visualization",
    "charts": "visualization",
    "plot": "visualization",
    "plots": "visualization",
    "data-analysis": "data",
    "automation": "workflow",
    "helper": "utility",
    "tools": "utility",
}


def normalise_category(raw: object) -> tuple[str, str | None]:
    """Map a declared category to one of ``CATEGORIES``.

    Returns ``(category, unknown_raw)``: ``unknown_raw`` is the value as written when it matched
    nothing (the category is then ``other``), so callers can keep it in metadata.
    """
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return "other", None
    text = str(raw).strip()
    key = text.lower().replace(" ", "_")
    if key in CATEGORIES:
        return key, None
    if key.replace("-", "_") in CATEGORIES:
        return key.replace("-", "_"), None
    alias = CATEGORY_ALIASES.get(key) or CATEGORY_ALIASES.get(key.replace("_", "-"))
    if alias:
        return alias, None
    return "other", text


def name_problems(name: str) -> list[str]:
    """What is wrong with a skill name under the Agent Skills rules (empty when nothing)."""
    problems = []
    if not NAME_PATTERN.match(name):
        problems.append(
            f"name {name!r} must be kebab-case: lowercase letters, digits and single hyphens, "
            "not starting or ending with a hyphen"
        )
    if len(name) > MAX_NAME_LENGTH:
        problems.append(f"name is {len(name)} characters; the limit is {MAX_NAME_LENGTH}")
    return problems


def description_problems(description: str) -> list[str]:
    """What is wrong with a skill description under the Agent Skills rules."""
    problems = []
    if not description.strip():
        problems.append("description is empty; say what the skill does and when to use it")
    if len(description) > MAX_DESCRIPTION_LENGTH:
        problems.append(f"description is {len(description)} characters; the limit is {MAX_DESCRIPTION_LENGTH}")
    if "<" in description or ">" in description:
        problems.append("description must not contain angle brackets (< or >)")
    return problems
