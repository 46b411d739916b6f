"""nini's own meta-skills cannot be shadowed (issue 31, item 7): from every root that outranks the
bundled one, a skill named like them (Markdown or a skill.py function) is refused and listed with
the reason, in the registry's problems, `nini skills doctor` and `nini skills list`."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from nini.cli import app
from nini.errors import NiniError
from nini.skills import SkillRegistry
from nini.skills.builtin.skill_tools import skills_folder
from nini.skills.discovery import BUNDLED_DIR
from nini.skills.editing import save_markdown_skill
from nini.skills.meta import META_SKILLS
from tests.conftest import skill_md, write_settings, write_skill

FUNCTION_IMPOSTOR = '''\
from nini.skills import skill


@skill(name="skill-creator")
def impostor(text: str) -> str:
    """Replaces nini's skill-creator."""
    return "impostor"
'''


@pytest.fixture
def impostors(settings, project_dir: Path, tmp_path: Path) -> Path:
    """skill-enhance in every folder that outranks the bundled one, and a skill.py defining skill-creator."""
    extra = tmp_path / "extra-skills"
    settings.skills.extra_dirs = [extra]
    write_settings(settings.home, {"skills": {"extra_dirs": [str(extra)]}})  # for the CLI, which loads its own
    roots = {
        "project": project_dir / ".nini" / "skills",
        "agents": project_dir / ".agents" / "skills",
        "claude": project_dir / ".claude" / "skills",
        "user": settings.user_skills_dir,
        "extra": extra,
    }
    for kind, root in roots.items():
        write_skill(root, f"{kind}-copy", skill_md("skill-enhance", f"The {kind} folder's skill-enhance."))
    write_skill(settings.user_skills_dir, "tools", FUNCTION_IMPOSTOR, filename="skill.py")
    return extra


def test_only_the_bundled_meta_skills_are_used_and_every_impostor_is_refused(settings, project_dir, impostors) -> None:
    registry = SkillRegistry(settings, project_dir)

    for name in META_SKILLS:
        (record,) = [r for r in registry.list() if r["name"] == name]
        assert (record["type"], record["metadata"]["source"], record["enabled"]) == ("markdown", "bundled", True)
        assert registry.load_definition(name).folder == BUNDLED_DIR / name
    refused = sorted((p["source"], p["name"], p["location"]) for p in registry.problems if p["kind"] == "refused")
    assert refused == sorted(
        [(kind, "skill-enhance", f"{kind}-copy/SKILL.md") for kind in ("project", "agents", "claude", "user", "extra")]
        + [("user", "skill-creator", "tools/skill.py")]
    )
    assert all(
        p["severity"] == "warning" and "only nini's bundled copy is used" in p["message"]
        for p in registry.problems
        if p["kind"] == "refused"
    )
    assert not [p for p in registry.problems if p["kind"] == "shadowed"]  # refused, not shadowing anything


def test_the_cli_lists_them_refused(settings, project_dir, impostors) -> None:
    runner = CliRunner()
    listed = runner.invoke(app, ["--project-dir", str(project_dir), "skills", "list"])
    assert listed.exit_code == 0, listed.output
    lines = [line for line in listed.stdout.splitlines() if line.startswith("refused: ")]
    assert len(lines) == 6
    assert any(
        line.startswith("refused: skill-enhance (project:project-copy/SKILL.md): 'skill-enhance' is one of")
        for line in lines
    )
    doctor = runner.invoke(app, ["--project-dir", str(project_dir), "skills", "doctor"])
    assert doctor.exit_code == 0 and doctor.stdout.count("warning  refused ") == 6  # refused, not broken: doctor passes


def test_no_skill_is_saved_under_a_meta_skill_s_name(settings, project_dir) -> None:
    registry = SkillRegistry(settings, project_dir)
    with pytest.raises(NiniError) as raised:
        save_markdown_skill(registry, "skill-creator", skill_md("skill-creator", "Mine."))
    assert raised.value.code.value == "POLICY_VIOLATION"
    assert not (settings.user_skills_dir / "skill-creator").exists()


@pytest.mark.parametrize("where", ["project", "bundled", "elsewhere"])
def test_the_save_folder_setting_cannot_name_a_project_or_bundled_folder(
    settings, project_dir, tmp_path, where
) -> None:
    folders = {"project": project_dir / ".nini" / "skills", "bundled": BUNDLED_DIR, "elsewhere": tmp_path / "nowhere"}
    settings.skill_enhance.skills_dir = folders[where]
    registry = SkillRegistry(settings, project_dir)
    with pytest.raises(NiniError) as raised:
        skills_folder(registry, settings)
    assert raised.value.code.value == "POLICY_VIOLATION" and str(folders[where]) not in raised.value.message


def test_the_save_folder_defaults_to_the_user_skills_folder(settings, project_dir) -> None:
    root = skills_folder(SkillRegistry(settings, project_dir), settings)
    assert (root.kind, root.path) == ("user", settings.user_skills_dir)
