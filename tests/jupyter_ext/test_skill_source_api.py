"""GET/PUT /nini/api/skills/NAME/source: a Markdown skill's SKILL.md to read and edit, saved as
the user's own skill with the rules of `save_skill` (validated, atomic, previous file kept)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from nini.skills.discovery import BUNDLED_DIR
from tests.conftest import skill_md, write_skill

EDITED = skill_md(
    "data-quality-check", "Check missing values, types and duplicates first.", body="# Check\n\n1. Count.\n"
)


async def test_read_a_bundled_skill(api: Any) -> None:
    reply = await api("GET", "skills", "data-quality-check", "source")
    assert reply.status == 200
    assert reply.data == {
        "name": "data-quality-check",
        "type": "markdown",
        "source": "bundled",
        "location": "data-quality-check/SKILL.md",
        "content": (BUNDLED_DIR / "data-quality-check" / "SKILL.md").read_text(encoding="utf-8"),
        "editable": True,
        "reason": None,
    }


async def test_edit_a_bundled_skill_makes_a_user_skill_that_shadows_it(api: Any, nini_home: Path) -> None:
    bundled_before = (BUNDLED_DIR / "data-quality-check" / "SKILL.md").read_bytes()
    reply = await api("PUT", "skills", "data-quality-check", "source", body={"content": EDITED})
    assert reply.status == 200
    data = reply.data
    assert (
        data["metadata"]["source"] == "user"
        and data["description"] == "Check missing values, types and duplicates first."
    )
    assert data["shadows"] == "bundled" and "bundled" in data["note"] and data["backup"] is None
    assert data["warnings"] == [] and data["location"] == "data-quality-check/SKILL.md"
    assert (nini_home / "skills" / "data-quality-check" / "SKILL.md").read_text(encoding="utf-8") == EDITED
    assert (BUNDLED_DIR / "data-quality-check" / "SKILL.md").read_bytes() == bundled_before
    shown = (await api("GET", "skills", "data-quality-check", "source")).data
    assert (shown["source"], shown["content"]) == ("user", EDITED)
    problems = (await api("GET", "skill-problems")).data["problems"]
    assert any(p["kind"] == "shadowed" and p["source"] == "bundled" for p in problems)


async def test_a_second_edit_keeps_the_previous_file_and_reports_warnings(api: Any, nini_home: Path) -> None:
    assert (await api("PUT", "skills", "data-quality-check", "source", body={"content": EDITED})).status == 200
    second = skill_md("data-quality-check", "Second version.", category="astrology")
    reply = await api("PUT", "skills", "data-quality-check", "source", body={"content": second})
    assert reply.status == 200 and reply.data["backup"] == "SKILL.md.bak" and reply.data["shadows"] is None
    assert reply.data["warnings"] == ["unknown category 'astrology'; it will be listed as 'other'"]
    folder = nini_home / "skills" / "data-quality-check"
    assert (folder / "SKILL.md.bak").read_text(encoding="utf-8") == EDITED
    assert (folder / "SKILL.md").read_text(encoding="utf-8") == second
    assert (await api("GET", "skills", "data-quality-check")).data["description"] == "Second version."


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ("# no frontmatter\n", "no description"),  # without frontmatter it loads (issue 22) unless nothing describes it
        (skill_md("data-quality-check", "Has <angle> brackets."), "angle"),
        (skill_md("data-quality-check", "Fine.", tools=["x"]), "unexpected frontmatter"),
        ("---\nname: [unclosed\n---\nbody\n", "YAML"),
    ],
)
async def test_invalid_content_writes_nothing(api: Any, nini_home: Path, content: str, needle: str) -> None:
    reply = await api("PUT", "skills", "data-quality-check", "source", body={"content": content})
    assert reply.status == 400 and reply.error["code"] == "INVALID_ARGUMENT" and needle in reply.error["message"]
    assert reply.error["details"]["errors"] and any(needle in e for e in reply.error["details"]["errors"])
    assert not (nini_home / "skills" / "data-quality-check").exists()
    assert (await api("GET", "skills", "data-quality-check")).data["metadata"]["source"] == "bundled"


async def test_a_user_skill_is_edited_where_it_is(api: Any, nini_home: Path) -> None:
    write_skill(nini_home / "skills" / "team", "tidy-columns", skill_md("tidy-columns", "Tidy."), filename="skill.md")
    assert (await api("POST", "skills", "refresh")).status == 200
    shown = (await api("GET", "skills", "tidy-columns", "source")).data
    assert (shown["source"], shown["location"], shown["editable"]) == ("user", "team/tidy-columns/skill.md", True)
    content = skill_md("tidy-columns", "Tidy column names.")
    reply = await api("PUT", "skills", "tidy-columns", "source", body={"content": content})
    assert (
        reply.status == 200
        and reply.data["backup"] == "skill.md.bak"
        and reply.data["location"] == "team/tidy-columns/skill.md"
    )
    assert (nini_home / "skills" / "team" / "tidy-columns" / "skill.md").read_text(encoding="utf-8") == content
    assert not (nini_home / "skills" / "tidy-columns").exists()


async def test_a_broken_user_skill_can_be_read_and_fixed(api: Any, nini_home: Path) -> None:
    write_skill(nini_home / "skills", "half-done", "---\nname: half-done\ndescription: [oops\n---\nbody\n")
    problems = (await api("GET", "skill-problems")).data["problems"]
    assert [p["location"] for p in problems if p["severity"] == "error"] == ["half-done/SKILL.md"]
    shown = (await api("GET", "skills", "half-done", "source")).data
    assert shown["source"] == "user" and "[oops" in shown["content"] and shown["editable"] is True
    fixed = skill_md("half-done", "Now it loads.")
    reply = await api("PUT", "skills", "half-done", "source", body={"content": fixed})
    assert reply.status == 200 and reply.data["backup"] == "SKILL.md.bak" and reply.data["enabled"] is True
    assert (await api("GET", "skill-problems")).data["problems"] == []


async def test_a_project_skill_is_shown_but_not_edited_here(api: Any, nini_home: Path, jp_root_dir: Path) -> None:
    write_skill(jp_root_dir / ".nini" / "skills", "project-only", skill_md("project-only", "From the repository."))
    await api("POST", "skills", "refresh")
    shown = (await api("GET", "skills", "project-only", "source")).data
    assert (shown["source"], shown["editable"]) == ("project", False) and "project" in shown["reason"]
    reply = await api("PUT", "skills", "project-only", "source", body={"content": skill_md("project-only", "Mine.")})
    assert reply.status == 409 and reply.error["code"] == "CONFLICT" and "project" in reply.error["message"]
    assert not (nini_home / "skills" / "project-only").exists()


async def test_a_function_skill_has_no_source_here(api: Any) -> None:
    for method, body in (("GET", None), ("PUT", {"content": skill_md("run_code", "x")})):
        reply = await api(method, "skills", "run_code", "source", body=body)
        assert (
            reply.status == 400
            and reply.error["code"] == "INVALID_ARGUMENT"
            and "function skill" in reply.error["message"]
        )


@pytest.mark.parametrize("method", ["GET", "PUT"])
async def test_unknown_skill_is_not_found(api: Any, nini_home: Path, method: str) -> None:
    body = {"content": skill_md("nobody-here", "x")} if method == "PUT" else None
    reply = await api(method, "skills", "nobody-here", "source", body=body)
    assert reply.status == 404 and reply.error["code"] == "NOT_FOUND"
    assert not (nini_home / "skills" / "nobody-here").exists()


@pytest.mark.parametrize("body", [{}, {"content": 3}, "[1]"])
async def test_bad_bodies(api: Any, body: Any) -> None:
    reply = await api("PUT", "skills", "data-quality-check", "source", body=body)
    assert reply.status == 400 and reply.error["code"] == "INVALID_ARGUMENT"


async def test_a_linked_skill_folder_is_neither_read_nor_written_through(
    api: Any, nini_home: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside" / "linked-skill"
    write_skill(outside.parent, "linked-skill", skill_md("linked-skill", "Lives outside the skills folder."))
    (nini_home / "skills").mkdir(parents=True, exist_ok=True)
    os.symlink(outside, nini_home / "skills" / "linked-skill")
    await api("POST", "skills", "refresh")
    assert (await api("GET", "skills", "linked-skill")).status == 200  # discovered, as any skill
    read = await api("GET", "skills", "linked-skill", "source")
    assert read.status == 403 and read.error["code"] == "POLICY_VIOLATION" and "link" in read.error["message"]
    before = (outside / "SKILL.md").read_bytes()
    write = await api("PUT", "skills", "linked-skill", "source", body={"content": skill_md("linked-skill", "Changed.")})
    assert write.status == 403 and write.error["code"] == "POLICY_VIOLATION"
    assert (outside / "SKILL.md").read_bytes() == before and not (outside / "SKILL.md.bak").exists()
    for reply in (read, write):
        assert str(tmp_path).encode() not in reply.raw and str(nini_home).encode() not in reply.raw
