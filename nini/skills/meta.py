"""nini's own meta-skills: the bundled skills the agent follows by name to change its own skills.

``skill-creator`` and ``skill-enhance`` tell the enhancement sub-agent how to write and improve
skills (``nini.agent.skill_enhancer`` reads both before every enhancement). A folder a cloned
project brings (``.nini/skills``, ``.agents/skills``, ``.claude/skills``), an extra dir or the user's
own skills could otherwise hold a skill of the same name and rewrite those instructions, and with
them what the sub-agent writes into the user's skills. So only nini's bundled folder may define
them: the registry lists any other as refused (``nini skills doctor``, ``GET
/nini/api/skill-problems``, ``nini skills list``), and no skill is saved under their names.
nini's experience and preference tools are function skills registered in code, which no
discovered skill can replace (a Markdown skill of such a name is a conflict, a ``skill.py`` one is
shadowed).
"""

from __future__ import annotations

from nini.errors import ErrorCode, NiniError

META_SKILLS = ("skill-creator", "skill-enhance")
META_SOURCE = "bundled"  # the only skills root that may define them


def refusal(name: str, source: str) -> str | None:
    """Why skill ``name`` from root ``source`` is refused, or None when it may be used."""
    if name not in META_SKILLS or source == META_SOURCE:
        return None
    return (
        f"{name!r} is one of nini's own meta-skills (how skills are written and improved); only nini's bundled "
        f"copy is used, this one from the {source} skills is refused"
    )


def check_not_meta(name: str) -> None:
    """POLICY_VIOLATION for saving a skill named like a meta-skill: it could only be refused."""
    if name in META_SKILLS:
        raise NiniError(
            ErrorCode.POLICY_VIOLATION,
            f"{name!r} is one of nini's own meta-skills: it cannot be saved, replaced or shadowed",
            {"name": name},
        )
