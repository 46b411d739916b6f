"""Writing Markdown skills into the user's skills folder, and reading any skill's SKILL.md back.

The user's skills folder is the registry's user root (``SkillRegistry.user_skills_dir``): NINI_HOME/skills
for the server's own user, NINI_HOME/users/<key>/skills for a named user on a shared server
(``Runtime.registry_for``), so what one user saves shadows nothing for anyone else. The project's
and nini's bundled skills are never written here: they change only through the file system.

One path for every writer: the agent's ``save_skill`` (skill enhancement) and the REST API's skill
editor validate a SKILL.md with the same rules (``validate_skill_file``, as ``nini skills validate``),
write it atomically with the previous version kept as ``SKILL.md.bak``, and refresh the registry.
Files go through ``RootedDir``: a link inside the skills folder (a skill folder pointing elsewhere)
is refused, never followed, so an edit cannot write, nor a read show, a file outside the folder.

Roots rank project > user > extra dirs > bundled (``discovery.standard_roots``): a saved user skill
shadows an extra-dir or bundled skill of its name, and is itself shadowed by a project's.
"""

from __future__ import annotations

import tempfile
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, Literal

from nini.errors import ErrorCode, NiniError
from nini.rooted import RootedDir
from nini.skills.markdown import MAX_SKILL_FILE_BYTES, validate_skill_file
from nini.skills.meta import check_not_meta
from nini.skills.records import SkillRecord
from nini.skills.rules import name_problems
from nini.skills.scaffold import create_skill

if TYPE_CHECKING:
    from nini.skills.registry import SkillRegistry

USER_FOLDER_LABEL = "the user skills folder"
PROJECT_SOURCES = frozenset({"project", "agents", "claude"})  # roots that outrank the user's
SHADOWABLE_SOURCES = frozenset({"extra", "bundled"})  # roots the user's outranks


def user_skills_fs(registry: SkillRegistry) -> RootedDir:
    """The registry's user skills folder (made if missing), opened so that no link beneath it is followed."""
    registry.user_skills_dir.mkdir(parents=True, exist_ok=True)
    return RootedDir(registry.user_skills_dir, label=USER_FOLDER_LABEL)


def check_skill_content(name: str, content: str) -> list[str]:
    """The warnings of SKILL.md ``content`` for skill ``name``; INVALID_ARGUMENT (``details.errors``)
    when it breaks a rule. Checked as the file it would be, in a folder named ``name``."""
    check_skill_name(name)
    with tempfile.TemporaryDirectory() as scratch:
        draft = Path(scratch) / name / "SKILL.md"
        draft.parent.mkdir()
        draft.write_text(content, encoding="utf-8")
        errors, warnings = validate_skill_file(draft)
    if errors:
        raise NiniError(
            ErrorCode.INVALID_ARGUMENT, f"the SKILL.md breaks the rules: {'; '.join(errors)}", {"errors": errors}
        )
    return warnings


def check_skill_name(name: str) -> None:
    problems = name_problems(name)
    if problems:
        raise NiniError(
            ErrorCode.INVALID_ARGUMENT, f"invalid skill name {name!r}: {'; '.join(problems)}", {"problems": problems}
        )


def save_markdown_skill(
    registry: SkillRegistry, name: str, content: str, *, folder: Path | None = None
) -> dict[str, Any]:
    """Validate and save ``content`` as user skill ``name``, then refresh the registry.

    Written over the user's own skill of that name where it is (its previous file kept as
    ``<file>.bak``), else as ``NAME/SKILL.md``. Nothing is written when the content is invalid, nor
    under the name of one of nini's meta-skills (POLICY_VIOLATION, ``nini.skills.meta``).
    ``folder``: an extra dir to write into instead of the user skills folder (the agent's saves,
    when ``skill_enhance.skills_dir`` names one). ``{name, location, backup, warnings, shadows,
    shadowed_by}``: ``location`` relative to the folder written, ``backup`` the backup's file name
    or None, ``shadows`` the source of the skill this one now hides (extra, bundled) and
    ``shadowed_by`` the one that still hides it (a project's).
    """
    check_not_meta(name)
    warnings = check_skill_content(name, content)
    before = markdown_record(registry, name)
    root = folder or registry.user_skills_dir
    relative = before.location if before is not None and registry.root_of(before) == root else f"{name}/SKILL.md"
    if folder is not None:
        folder.mkdir(parents=True, exist_ok=True)
    fs = (
        user_skills_fs(registry)
        if folder is None
        else RootedDir(folder, label="the skills folder of skill_enhance.skills_dir")
    )
    backup = None
    if fs.is_file(relative):
        backup = f"{relative}.bak"
        fs.write_bytes(backup, fs.read_bytes(relative))
    fs.write_bytes(relative, content.encode("utf-8"))
    registry.refresh(force=True)
    after = markdown_record(registry, name)
    return {
        "name": name,
        "location": relative,
        "backup": PurePosixPath(backup).name if backup else None,
        "warnings": warnings,
        "shadows": before.source
        if before is not None and before.source in SHADOWABLE_SOURCES and registry.root_of(before) != root
        else None,
        "shadowed_by": after.source if after is not None and registry.root_of(after) != root else None,
    }


def create_user_skill(
    registry: SkillRegistry,
    name: str,
    description: str,
    *,
    category: str = "other",
    type: Literal["markdown", "function"] = "markdown",
    language: str = "zh",
) -> SkillRecord:
    """A new skill from the scaffold (as ``nini skills create``) in the user skills folder, registered;
    its sections worded in ``language``.

    CONFLICT when any skill, of any root or type, already has the name: a new one would hide it or
    be hidden by it. The error names paths relative to the skills folder only.
    """
    check_skill_name(name)
    taken = [r for r in registry.list() if r["name"] == name]
    if taken:
        where = ", ".join(
            f"{r['type']} skill from {r['metadata'].get('source', 'code')} ({r['location']})" for r in taken
        )
        raise NiniError(ErrorCode.CONFLICT, f"a skill named {name!r} already exists: {where}", {"name": name})
    fs = user_skills_fs(registry)
    if fs.lstat(name) is not None:  # a folder of that name (a broken skill, a link): never written into
        raise NiniError(
            ErrorCode.CONFLICT, f"'{name}' already exists in {USER_FOLDER_LABEL}; nothing was written", {"name": name}
        )
    try:
        create_skill(
            name,
            type=type,
            description=description,
            category=category,
            directory=registry.user_skills_dir,
            language=language,
        )
    except NiniError as exc:
        if exc.code is ErrorCode.CONFLICT:  # its message and details hold the host path
            raise NiniError(
                ErrorCode.CONFLICT,
                f"'{name}' already holds a skill file in {USER_FOLDER_LABEL}; nothing was written",
                {"name": name},
            ) from None
        raise
    registry.refresh(force=True)
    return registry.get_record(name, type)


def markdown_record(registry: SkillRegistry, name: str) -> SkillRecord | None:
    """The Markdown skill ``name`` that is in use, or None."""
    try:
        return registry.get_record(name, type="markdown")
    except NiniError as exc:
        if exc.code is not ErrorCode.NOT_FOUND:
            raise
        return None


def skill_source(registry: SkillRegistry, name: str) -> dict[str, Any]:
    """``{name, type, source, location, content, editable, reason}`` of Markdown skill ``name``.

    ``editable``: whether saving it here takes effect (not for a project's skill, which outranks
    any user skill; ``reason`` says so). A user skill the registry skipped (its SKILL.md is broken,
    see ``problems``) is shown too, so that it can be fixed. A function skill is INVALID_ARGUMENT.
    """
    record = markdown_record(registry, name)
    if record is None:
        location = skipped_user_skill(registry, name)
        data, source = user_skills_fs(registry).read_bytes(location, limit=MAX_SKILL_FILE_BYTES), "user"
    else:
        root = registry.root_of(record)
        if root is None:
            raise NiniError(ErrorCode.NOT_FOUND, f"Markdown skill {name!r} has no file to show", {"name": name})
        label = USER_FOLDER_LABEL if record.source == "user" else f"the {record.source} skills folder"
        data = RootedDir(root, label=label).read_bytes(record.location, limit=MAX_SKILL_FILE_BYTES)
        location, source = record.location, record.source
    reason = project_reason(name) if source in PROJECT_SOURCES else None
    return {
        "name": name,
        "type": "markdown",
        "source": source,
        "location": location,
        "content": data.decode("utf-8-sig", errors="replace"),
        "editable": reason is None,
        "reason": reason,
    }


def check_editable(registry: SkillRegistry, name: str) -> SkillRecord | None:
    """The Markdown skill an edit of ``name`` replaces (None: a skipped user skill, fixed by the edit);
    NOT_FOUND, INVALID_ARGUMENT (a function skill) or CONFLICT (a project's skill) when none can be."""
    record = markdown_record(registry, name)
    if record is None:
        skipped_user_skill(registry, name)
        return None
    if record.source in PROJECT_SOURCES:
        raise NiniError(ErrorCode.CONFLICT, project_reason(name), {"name": name, "source": record.source})
    return record


def skipped_user_skill(registry: SkillRegistry, name: str) -> str:
    """The location of user skill ``name`` that the registry skipped (its SKILL.md does not load);
    ``not_markdown``'s error when there is none."""
    location = f"{name}/SKILL.md"
    if name_problems(name) or not user_skills_fs(registry).is_file(location):
        raise not_markdown(registry, name)
    return location


def project_reason(name: str) -> str:
    return (
        f"skill {name!r} comes from the project's skills folder, which ranks above your own skills: a copy saved "
        "here would stay hidden behind it; edit the file in the project instead"
    )


def not_markdown(registry: SkillRegistry, name: str) -> NiniError:
    """Why ``name`` has no SKILL.md: a function skill (INVALID_ARGUMENT) or no skill at all (NOT_FOUND)."""
    if any(r["name"] == name and r["type"] == "function" for r in registry.list()):
        return NiniError(
            ErrorCode.INVALID_ARGUMENT,
            f"{name!r} is a function skill: it is Python code, with no SKILL.md to show or edit",
            {"name": name, "type": "function"},
        )
    return NiniError(
        ErrorCode.NOT_FOUND,
        f"no Markdown skill named {name!r}; create it first (nini skills create, POST /nini/api/skills)",
        {"name": name},
    )
