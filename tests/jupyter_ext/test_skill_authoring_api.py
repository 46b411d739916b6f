"""Skills a client makes and checks: the list filtered by enabled, POST /nini/api/skills (the
scaffold of `nini skills create`) and GET /nini/api/skill-problems (what `nini skills doctor` says)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nini.config import load_settings
from nini.skills.registry import SkillRegistry
from tests.conftest import skill_md, write_skill

pytestmark = pytest.mark.usefixtures("chinese_locale")  # the spec's Chinese words: auto under a zh locale


@pytest.mark.parametrize("enabled", ["true", "false"])
async def test_the_list_filters_by_enabled_with_type(api: Any, enabled: str) -> None:
    await api("PUT", "skills", "skill-creator", "enabled", body={"enabled": False})
    await api("PUT", "skills", "run_code", "enabled", body={"enabled": False})
    records = (await api("GET", "skills", params={"enabled": enabled})).data
    assert records and {r["enabled"] for r in records} == {enabled == "true"}
    names = {r["name"] for r in records}
    assert ({"skill-creator", "run_code"} <= names) is (enabled == "false")
    markdown = (await api("GET", "skills", params={"enabled": enabled, "type": "markdown"})).data
    assert {r["type"] for r in markdown} == {"markdown"} and {r["enabled"] for r in markdown} == {enabled == "true"}


async def test_a_bad_enabled_filter_is_invalid(api: Any) -> None:
    reply = await api("GET", "skills", params={"enabled": "yes"})
    assert reply.status == 400 and reply.error["code"] == "INVALID_ARGUMENT" and "enabled" in reply.error["message"]


async def test_create_a_markdown_skill(api: Any, nini_home: Path) -> None:
    body = {"name": "monthly-sales", "description": "Sum sales by month and compare regions.", "category": "stats"}
    reply = await api("POST", "skills", body=body)
    assert reply.status == 201
    record = reply.data
    assert (record["name"], record["type"], record["category"], record["enabled"]) == (
        "monthly-sales",
        "markdown",
        "statistics",
        True,
    )
    assert record["location"] == "monthly-sales/SKILL.md" and record["metadata"]["source"] == "user"
    text = (nini_home / "skills" / "monthly-sales" / "SKILL.md").read_text(encoding="utf-8")
    assert "description: Sum sales by month and compare regions." in text and "## 步骤" in text
    assert (await api("GET", "skills", "monthly-sales")).data == record  # registered at once
    assert "monthly-sales" in (nini_home / "SKILLS_SNAPSHOT.md").read_text(encoding="utf-8")


async def test_create_a_function_skill(api: Any, nini_home: Path) -> None:
    body = {"name": "value-summary", "description": "Summarise a list of numbers.", "type": "function"}
    reply = await api("POST", "skills", body=body)
    assert reply.status == 201 and reply.data["type"] == "function" and reply.data["category"] == "other"
    assert {"values", "label"} <= set(reply.data["metadata"]["input_schema"]["properties"])
    folder = nini_home / "skills" / "value-summary"
    assert sorted(p.name for p in folder.iterdir() if p.is_file()) == ["skill.py", "test_skill.py"]


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ({"name": "Bad_Name", "description": "Fine."}, "Bad_Name"),
        ({"name": "ok-name", "description": "Has <angle> brackets."}, "angle"),
        ({"name": "ok-name", "description": ""}, "description"),
        ({"name": "ok-name", "description": "Fine.", "category": "astrology"}, "astrology"),
        ({"name": "ok-name", "description": "Fine.", "type": "python"}, "type"),
        ({"name": "ok-name"}, "description"),
        ({"name": 7, "description": "Fine."}, "name"),
    ],
)
async def test_bad_new_skills_are_refused_with_the_reason(api: Any, nini_home: Path, body: dict, needle: str) -> None:
    reply = await api("POST", "skills", body=body)
    assert reply.status == 400 and reply.error["code"] == "INVALID_ARGUMENT" and needle in reply.error["message"]
    assert not (nini_home / "skills" / "ok-name").exists()


async def test_an_existing_name_is_a_conflict(api: Any, nini_home: Path) -> None:
    bundled = await api("POST", "skills", body={"name": "skill-creator", "description": "Mine."})
    assert bundled.status == 409 and bundled.error["code"] == "CONFLICT" and "bundled" in bundled.error["message"]
    function = await api("POST", "skills", body={"name": "run-code", "description": "Mine."})
    assert function.status == 201  # run_code is spelled with an underscore: no clash
    again = await api("POST", "skills", body={"name": "run-code", "description": "Again."})
    assert again.status == 409
    # a folder of that name that holds no usable skill is not written into either
    (nini_home / "skills" / "half-made").mkdir(parents=True)
    (nini_home / "skills" / "half-made" / "notes.txt").write_text("mine")
    folder = await api("POST", "skills", body={"name": "half-made", "description": "New."})
    assert folder.status == 409 and str(nini_home) not in folder.error["message"]
    assert sorted(p.name for p in (nini_home / "skills" / "half-made").iterdir()) == ["notes.txt"]


async def test_skill_problems_are_the_doctors(api: Any, nini_home: Path, jp_root_dir: Path) -> None:
    user = nini_home / "skills"
    write_skill(user, "broken", b"\x00\x01 not text")
    write_skill(user, "Rule_Breaker", skill_md("Rule_Breaker", "Breaks the naming rule."))
    write_skill(user, "data-quality-check", skill_md("data-quality-check", "My own version."))
    write_skill(jp_root_dir / ".nini" / "skills", "run_code", skill_md("run_code", "Same name as a function skill."))
    reply = await api("GET", "skill-problems")
    assert reply.status == 200
    data = reply.data
    expected = load_settings(home=nini_home)
    doctor = SkillRegistry(expected, jp_root_dir).problems  # what `nini skills doctor --json` prints
    assert [{k: p[k] for k in ("severity", "kind", "name", "location")} for p in data["problems"]] == [
        {k: p[k] for k in ("severity", "kind", "name", "location")} for p in doctor
    ]
    kinds = {(p["kind"], p["name"] or p["location"]) for p in data["problems"]}
    assert ("invalid", "broken/SKILL.md") in kinds and ("rule", "Rule_Breaker") in kinds
    assert ("shadowed", "data-quality-check") in kinds and ("conflict", "run_code") in kinds
    assert data["skipped"] == 1 and data["warnings"] == len(data["problems"]) - 1
    assert str(nini_home).encode() not in reply.raw and str(jp_root_dir).encode() not in reply.raw
    assert all(not p["location"].startswith("/") for p in data["problems"])


async def test_no_problems_is_an_empty_report(api: Any) -> None:
    assert (await api("GET", "skill-problems")).data == {"problems": [], "skipped": 0, "warnings": 0}
