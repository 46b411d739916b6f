"""Text views of the skill set: ``SKILLS_SNAPSHOT.md`` for people, the prompt block for the agent.

Both are rendered from skill records only, never from SKILL.md bodies: the body of a Markdown
skill reaches the model only when the skill is used (read-before-execute).
"""

from __future__ import annotations

from collections.abc import Iterable

from nini.skills.records import SkillRecord

PROMPT_DESCRIPTION_LIMIT = 1024


def render_snapshot(records: Iterable[SkillRecord]) -> str:
    """Markdown listing of every skill, in a stable order, with no timestamps (so equal sets give equal files)."""
    records = sorted(records, key=lambda r: (r.name, r.type))
    functions = sum(1 for r in records if r.type == "function")
    lines = [
        "# nini skills snapshot",
        "",
        f"{len(records)} skills: {functions} function, {len(records) - functions} markdown. "
        "Written by nini when the skill set changes; edits here are overwritten.",
    ]
    for record in records:
        lines += [
            "",
            f"## {record.name}",
            "",
            f"- type: {record.type}",
            f"- category: {record.category}",
            f"- enabled: {'true' if record.enabled else 'false'}",
            f"- location: {record.location} ({record.source})",
            f"- description: {_one_line(record.description)}",
        ]
        if conflict := record.metadata.get("conflict_with"):
            lines.append(f"- conflict: same name as a {conflict} skill, which is used instead")
    return "\n".join(lines) + "\n"


def render_prompt_block(records: Iterable[SkillRecord]) -> str:
    """What the agent is told about its skills each turn: enabled skills, names and descriptions."""
    enabled = sorted((r for r in records if r.enabled), key=lambda r: (r.type, r.name))
    if not enabled:
        return "## Skills\n\nNo skills are enabled."
    lines = [
        "## Skills",
        "",
        "Function skills are tools: call them directly. Markdown skills are written procedures: "
        "before following one, load its definition and follow the steps it gives, exactly as written.",
        "",
    ]
    for record in enabled:
        description = _one_line(record.description)
        if len(description) > PROMPT_DESCRIPTION_LIMIT:
            description = description[: PROMPT_DESCRIPTION_LIMIT - 1] + "…"
        lines.append(f"- {record.name} ({record.type}, {record.category}): {description}")
    return "\n".join(lines)


def _one_line(text: str) -> str:
    return " ".join(text.split())
