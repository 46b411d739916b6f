"""SkillRegistry: the unified list, enable/disable state, the snapshot, the prompt block, threads."""

from __future__ import annotations

import json
import os
import re
import threading
import time
from pathlib import Path

import pytest

import nini.skills.registry as registry_module
from nini.config import load_settings
from nini.errors import ErrorCode, NiniError
from nini.skills import FunctionSkill, SkillRegistry, skill
from tests.conftest import skill_md, write_skill
from tests.timeouts import timeout

RECORD_KEYS = {"name", "description", "type", "location", "enabled", "category", "metadata"}
# A timestamp far in the past: after os.utime sets it, any rewrite shows as a different mtime.
OLD_NS = 1_000_000_000 * 1_000_000_000


def project_root(project_dir: Path) -> Path:
    return project_dir / ".nini" / "skills"


def make_function_skill(name: str, description: str = "Add two numbers.") -> FunctionSkill:
    @skill(name=name, category="statistics", description=description)
    def add(a: int, b: int = 1) -> int:
        """Add numbers.

        Args:
            a: First number.
            b: Second number.
        """
        return a + b

    return add


def age(path: Path) -> int:
    """Give ``path`` an old mtime so that a rewrite would be visible; return that mtime."""
    os.utime(path, ns=(OLD_NS, OLD_NS))
    return os.stat(path).st_mtime_ns


def snapshot_sections(text: str) -> dict[str, str]:
    """``{heading: section text}`` for every ``## `` section of the snapshot."""
    sections: dict[str, str] = {}
    current = None
    for line in text.splitlines():
        if line.startswith("## "):
            current = line[3:].strip()
            assert current not in sections, f"skill {current!r} listed twice in the snapshot"
            sections[current] = ""
        elif current is not None:
            sections[current] += line + "\n"
    return sections


def assert_no_state_problem(registry: SkillRegistry) -> None:
    assert [p for p in registry.problems if p["kind"] == "state"] == []


# -- list / get --------------------------------------------------------------------------------


def test_list_records_have_exactly_the_contract_keys_and_are_sorted_by_name(settings, project_dir):
    root = project_root(project_dir)
    for folder in ("zeta-report", "alpha-clean", "mid-chart"):
        write_skill(root, folder, skill_md(folder, f"Does {folder} work.", category="report"))
    registry = SkillRegistry(settings, project_dir, function_skills=[make_function_skill("beta-add")])

    records = registry.list()

    names = [r["name"] for r in records]
    assert names == sorted(names)
    assert {"zeta-report", "alpha-clean", "mid-chart", "beta-add"} <= set(names)
    for record in records:
        assert set(record) == RECORD_KEYS
        assert record["type"] in ("function", "markdown")
        assert isinstance(record["enabled"], bool)
        assert isinstance(record["metadata"], dict)
        assert not Path(record["location"]).is_absolute()
    by_name = {r["name"]: r for r in records}
    assert by_name["alpha-clean"]["location"] == "alpha-clean/SKILL.md"
    assert by_name["alpha-clean"]["description"] == "Does alpha-clean work."
    assert by_name["alpha-clean"]["category"] == "report"
    assert by_name["beta-add"]["type"] == "function"
    json.dumps(records)  # records cross process boundaries as JSON


def test_list_filters_by_type(settings, project_dir):
    write_skill(project_root(project_dir), "md-one", skill_md("md-one", "A markdown skill."))
    registry = SkillRegistry(settings, project_dir, function_skills=[make_function_skill("fn-one")])

    functions = registry.list(type="function")
    markdown = registry.list(type="markdown")

    assert [r["name"] for r in functions] == ["fn-one"]
    assert all(r["type"] == "markdown" for r in markdown)
    assert "md-one" in {r["name"] for r in markdown}
    assert "fn-one" not in {r["name"] for r in markdown}
    assert len(functions) + len(markdown) == len(registry.list())


def test_list_with_an_unknown_type_is_invalid_argument(settings, project_dir):
    registry = SkillRegistry(settings, project_dir)
    with pytest.raises(NiniError) as caught:
        registry.list(type="bogus")
    assert caught.value.code == ErrorCode.INVALID_ARGUMENT


@pytest.mark.parametrize("lookup", ["get", "get_record"])
def test_unknown_name_is_not_found(settings, project_dir, lookup):
    write_skill(project_root(project_dir), "known", skill_md("known", "A known skill."))
    registry = SkillRegistry(settings, project_dir)
    assert registry.get("known")["name"] == "known"
    with pytest.raises(NiniError) as caught:
        getattr(registry, lookup)("no-such-skill")
    assert caught.value.code == ErrorCode.NOT_FOUND


# -- enable / disable --------------------------------------------------------------------------


def test_set_enabled_persists_and_a_new_registry_sees_it(settings, project_dir):
    write_skill(project_root(project_dir), "toggle-me", skill_md("toggle-me", "Toggled in this test."))
    registry = SkillRegistry(settings, project_dir)
    assert registry.get("toggle-me")["enabled"] is True

    returned = registry.set_enabled("toggle-me", False)

    assert returned["name"] == "toggle-me" and returned["enabled"] is False
    assert registry.get("toggle-me")["enabled"] is False
    stored = json.loads(settings.skills_state_path.read_text(encoding="utf-8"))
    assert stored["skills"] == {"toggle-me": False}
    fresh = SkillRegistry(load_settings(), project_dir)
    assert fresh.get("toggle-me")["enabled"] is False

    fresh.set_enabled("toggle-me", True)
    assert SkillRegistry(load_settings(), project_dir).get("toggle-me")["enabled"] is True


def test_set_enabled_keeps_other_overrides(settings, project_dir):
    root = project_root(project_dir)
    write_skill(root, "first", skill_md("first", "First skill."))
    write_skill(root, "second", skill_md("second", "Second skill."))
    registry = SkillRegistry(settings, project_dir)

    registry.set_enabled("first", False)
    registry.set_enabled("second", False)

    fresh = SkillRegistry(load_settings(), project_dir)
    assert fresh.get("first")["enabled"] is False
    assert fresh.get("second")["enabled"] is False


def test_set_enabled_on_an_unknown_name_is_not_found_and_writes_nothing(settings, project_dir):
    registry = SkillRegistry(settings, project_dir)
    with pytest.raises(NiniError) as caught:
        registry.set_enabled("no-such-skill", False)
    assert caught.value.code == ErrorCode.NOT_FOUND
    assert not settings.skills_state_path.exists()


def test_malformed_state_file_is_reported_every_skill_enabled_and_kept_aside(settings, project_dir):
    root = project_root(project_dir)
    write_skill(root, "keep-on", skill_md("keep-on", "Should read as enabled."))
    write_skill(root, "turn-off", skill_md("turn-off", "Turned off after the repair."))
    state_path = settings.skills_state_path
    state_path.parent.mkdir(parents=True, exist_ok=True)
    original = b'{"version": 1, "skills": {"keep-on": false,}'  # trailing comma: not JSON
    state_path.write_bytes(original)

    registry = SkillRegistry(settings, project_dir)

    state_problems = [p for p in registry.problems if p["kind"] == "state"]
    assert len(state_problems) == 1
    assert all(r["enabled"] for r in registry.list())

    registry.set_enabled("turn-off", False)

    kept = list(state_path.parent.glob("skills_state.json.corrupt-*"))
    assert len(kept) == 1
    assert kept[0].read_bytes() == original
    assert json.loads(state_path.read_text(encoding="utf-8"))["skills"] == {"turn-off": False}
    assert registry.get("turn-off")["enabled"] is False
    assert registry.get("keep-on")["enabled"] is True
    assert_no_state_problem(registry)


def test_each_malformed_state_file_is_kept_aside_under_its_own_name(settings, project_dir):
    write_skill(project_root(project_dir), "a", skill_md("a", "Skill a."))
    registry = SkillRegistry(settings, project_dir)
    state_path = settings.skills_state_path
    state_path.parent.mkdir(parents=True, exist_ok=True)
    broken = [b'{"skills": first', b'{"skills": second']

    for content in broken:  # both within the same second, from the same process
        state_path.write_bytes(content)
        registry.set_enabled("a", False)

    kept = sorted(p.read_bytes() for p in state_path.parent.glob("skills_state.json.corrupt-*"))
    assert kept == sorted(broken)


@pytest.mark.parametrize("content", [b"[1, 2]", b'{"skills": {"a": "yes"}}', b"\xff\xfe not utf-8"])
def test_state_file_of_the_wrong_shape_is_a_state_problem(settings, project_dir, content):
    write_skill(project_root(project_dir), "a", skill_md("a", "Skill a."))
    settings.skills_state_path.parent.mkdir(parents=True, exist_ok=True)
    settings.skills_state_path.write_bytes(content)

    registry = SkillRegistry(settings, project_dir)

    assert [p["kind"] for p in registry.problems].count("state") == 1
    assert registry.get("a")["enabled"] is True
    assert settings.skills_state_path.read_bytes() == content  # loading never rewrites it


def test_markdown_skill_that_conflicts_with_a_function_skill_cannot_be_enabled(settings, project_dir):
    write_skill(project_root(project_dir), "twin", skill_md("twin", "Markdown twin."))
    registry = SkillRegistry(settings, project_dir, function_skills=[make_function_skill("twin")])

    markdown = registry.get_record("twin", type="markdown")
    assert markdown.enabled is False
    assert markdown.metadata["conflict_with"] == "function"
    assert registry.get("twin")["type"] == "function"  # the function skill is the one used

    with pytest.raises(NiniError) as caught:
        registry.set_enabled("twin", True, type="markdown")
    assert caught.value.code == ErrorCode.CONFLICT
    assert "twin" in caught.value.message
    assert not settings.skills_state_path.exists()
    assert registry.get_record("twin", type="markdown").enabled is False


def test_disabling_the_conflicting_markdown_twin_leaves_the_function_skill_enabled(settings, project_dir):
    write_skill(project_root(project_dir), "twin", skill_md("twin", "Markdown twin."))
    registry = SkillRegistry(settings, project_dir, function_skills=[make_function_skill("twin")])

    record = registry.set_enabled("twin", False, type="markdown")

    assert (record["type"], record["enabled"]) == ("markdown", False)
    assert registry.get_record("twin", type="function").enabled is True


def test_set_enabled_without_a_type_acts_on_the_function_skill_of_a_shared_name(settings, project_dir):
    write_skill(project_root(project_dir), "twin", skill_md("twin", "Markdown twin."))
    registry = SkillRegistry(settings, project_dir, function_skills=[make_function_skill("twin")])

    assert registry.set_enabled("twin", False)["type"] == "function"

    assert registry.get_record("twin", type="function").enabled is False
    assert registry.get_record("twin", type="markdown").enabled is False
    registry.set_enabled("twin", True)
    assert registry.get_record("twin", type="function").enabled is True
    assert registry.get_record("twin", type="markdown").enabled is False  # still a conflict


# -- snapshot ----------------------------------------------------------------------------------


def test_snapshot_is_written_on_first_build_and_lists_every_skill(settings, project_dir):
    root = project_root(project_dir)
    write_skill(root, "clean-table", skill_md("clean-table", "Clean one table before analysis.", category="data"))
    write_skill(root, "group/plot-trend", skill_md("plot-trend", "Plot a monthly trend line.", category="viz"))
    assert not settings.snapshot_path.exists()
    registry = SkillRegistry(settings, project_dir, function_skills=[make_function_skill("sum-up", "Sum two numbers.")])
    registry.set_enabled("plot-trend", False)

    sections = snapshot_sections(settings.snapshot_path.read_text(encoding="utf-8"))

    records = registry.list()
    assert set(sections) == {r["name"] for r in records}
    for record in records:
        section = sections[record["name"]]
        assert record["description"] in section
        assert record["location"] in section
        assert record["type"] in section
        assert record["category"] in section
        enabled = re.search(r"enabled\W+(true|false)", section)
        assert enabled and enabled.group(1) == ("true" if record["enabled"] else "false")
    assert "group/plot-trend/SKILL.md" in sections["plot-trend"]
    assert "visualization" in sections["plot-trend"]
    assert str(project_dir) not in settings.snapshot_path.read_text(encoding="utf-8")


def test_snapshot_order_does_not_depend_on_creation_order(tmp_path, monkeypatch):
    names = ["delta", "alpha", "charlie", "bravo", "echo"]
    snapshots = []
    for index, order in enumerate((names, list(reversed(names)))):
        home = tmp_path / f"home-{index}"
        monkeypatch.setenv("NINI_HOME", str(home))
        project = tmp_path / f"project-{index}"
        for name in order:
            write_skill(project_root(project), name, skill_md(name, f"The {name} skill."))
        settings = load_settings()
        SkillRegistry(settings, project)
        snapshots.append(settings.snapshot_path.read_bytes())

    assert snapshots[0] == snapshots[1]
    text = snapshots[0].decode("utf-8")
    positions = [text.index(f"## {name}\n") for name in sorted(names)]
    assert positions == sorted(positions)


def test_snapshot_untouched_when_nothing_changed(settings, project_dir):
    write_skill(project_root(project_dir), "steady", skill_md("steady", "Nothing changes here."))
    registry = SkillRegistry(settings, project_dir)
    old = age(settings.snapshot_path)
    content = settings.snapshot_path.read_bytes()

    assert registry.refresh() is False
    assert registry.refresh() is False
    SkillRegistry(load_settings(), project_dir)  # a second build over the same skill set

    assert os.stat(settings.snapshot_path).st_mtime_ns == old
    assert settings.snapshot_path.read_bytes() == content


def test_snapshot_is_rewritten_when_a_skill_is_added_removed_or_edited(settings, project_dir):
    root = project_root(project_dir)
    write_skill(root, "first", skill_md("first", "The first skill."))
    registry = SkillRegistry(settings, project_dir)

    old = age(settings.snapshot_path)
    write_skill(root, "second", skill_md("second", "The second skill, just added."))
    assert registry.refresh() is True
    assert os.stat(settings.snapshot_path).st_mtime_ns != old
    assert "The second skill, just added." in settings.snapshot_path.read_text(encoding="utf-8")
    assert registry.refresh() is False

    old = age(settings.snapshot_path)
    write_skill(root, "first", skill_md("first", "The first skill, with a new description."))
    assert registry.refresh() is True
    assert os.stat(settings.snapshot_path).st_mtime_ns != old
    text = settings.snapshot_path.read_text(encoding="utf-8")
    assert "The first skill, with a new description." in text
    assert "The first skill." not in text
    assert registry.get("first")["description"] == "The first skill, with a new description."

    old = age(settings.snapshot_path)
    (root / "second" / "SKILL.md").unlink()
    (root / "second").rmdir()
    assert registry.refresh() is True
    assert os.stat(settings.snapshot_path).st_mtime_ns != old
    assert "## second" not in settings.snapshot_path.read_text(encoding="utf-8")
    assert "second" not in {r["name"] for r in registry.list()}
    assert registry.refresh() is False


def test_snapshot_is_rewritten_when_a_skill_is_enabled_or_disabled(settings, project_dir):
    write_skill(project_root(project_dir), "switch", skill_md("switch", "Switched on and off."))
    registry = SkillRegistry(settings, project_dir)

    old = age(settings.snapshot_path)
    registry.set_enabled("switch", False)
    assert os.stat(settings.snapshot_path).st_mtime_ns != old
    assert re.search(r"enabled\W+false", snapshot_sections(settings.snapshot_path.read_text("utf-8"))["switch"])

    old = age(settings.snapshot_path)
    registry.set_enabled("switch", True)
    assert os.stat(settings.snapshot_path).st_mtime_ns != old
    assert re.search(r"enabled\W+true", snapshot_sections(settings.snapshot_path.read_text("utf-8"))["switch"])

    old = age(settings.snapshot_path)
    assert registry.refresh() is False
    assert os.stat(settings.snapshot_path).st_mtime_ns == old


def test_refresh_sees_enable_and_disable_made_by_another_registry(settings, project_dir):
    """The CLI (`nini skills disable`) and a running server each hold their own registry."""
    write_skill(project_root(project_dir), "shared", skill_md("shared", "Used by server and CLI."))
    server = SkillRegistry(settings, project_dir)
    cli = SkillRegistry(load_settings(), project_dir)

    cli.set_enabled("shared", False)
    assert server.refresh() is True
    assert server.get("shared")["enabled"] is False
    assert server.refresh() is False

    cli.set_enabled("shared", True)
    assert server.refresh() is True
    assert server.get("shared")["enabled"] is True


def test_refresh_after_one_edit_reparses_only_that_file(settings, project_dir, monkeypatch):
    root = project_root(project_dir)
    for index in range(6):
        write_skill(root, f"skill-{index}", skill_md(f"skill-{index}", f"Skill number {index}."))
    for path in [root, *root.rglob("*")]:  # saved long ago: a just-saved file is always re-read
        age(path)
    registry = SkillRegistry(settings, project_dir)
    real_parse = registry_module.parse_skill_text
    parsed_folders: list[str] = []

    def counting_parse(text: str, folder_name: str):
        parsed_folders.append(folder_name)
        return real_parse(text, folder_name)

    monkeypatch.setattr(registry_module, "parse_skill_text", counting_parse)

    assert registry.refresh() is False
    assert parsed_folders == []

    write_skill(root, "skill-3", skill_md("skill-3", "Skill number 3, edited."))
    assert registry.refresh() is True
    assert parsed_folders == ["skill-3"]
    assert registry.get("skill-3")["description"] == "Skill number 3, edited."
    assert registry.get("skill-2")["description"] == "Skill number 2."


# -- prompt block ------------------------------------------------------------------------------


def test_prompt_block_lists_enabled_skills_from_records_never_bodies(settings, project_dir):
    root = project_root(project_dir)
    sentinel = "BODY-ONLY-SENTINEL-7f3a9c"
    write_skill(root, "shown-skill", skill_md("shown-skill", "Shown to the agent.", body=f"# Shown\n\n{sentinel}\n"))
    write_skill(root, "hidden-skill", skill_md("hidden-skill", "Disabled so not shown.", body="# Hidden\n\nSteps.\n"))
    registry = SkillRegistry(
        settings, project_dir, function_skills=[make_function_skill("fn-tool", "Adds numbers fast.")]
    )
    registry.set_enabled("hidden-skill", False)

    block = registry.prompt_block()

    for record in registry.list():
        if record["enabled"]:
            assert any(
                record["name"] in line and record["type"] in line and record["description"] in line
                for line in block.splitlines()
            ), record["name"]
    assert "hidden-skill" not in block
    assert "Disabled so not shown." not in block
    assert sentinel not in block
    assert "# Shown" not in block

    registry.set_enabled("hidden-skill", True)
    assert "Disabled so not shown." in registry.prompt_block()


# -- threads -----------------------------------------------------------------------------------


def test_concurrent_list_prompt_block_and_refresh_while_files_change(settings, project_dir):
    root = project_root(project_dir)
    for index in range(5):
        write_skill(root, f"base-{index}", skill_md(f"base-{index}", f"Base skill {index}."))
    registry = SkillRegistry(settings, project_dir)
    stop = threading.Event()
    failures: list[BaseException] = []
    seen_counts: list[int] = []

    def reader() -> None:
        try:
            for _ in range(100_000):  # bounded even if stop is never set
                if stop.is_set():
                    return
                records = registry.list()
                keys = [(r["name"], r["type"]) for r in records]
                assert len(keys) == len(set(keys)), f"duplicate records: {keys}"
                assert [r["name"] for r in records] == sorted(r["name"] for r in records)
                seen_counts.append(len(records))
                assert isinstance(registry.prompt_block(), str)
                registry.refresh()
        except BaseException as exc:  # reported by the main thread
            failures.append(exc)

    threads = [threading.Thread(target=reader, daemon=True) for _ in range(8)]
    for thread in threads:
        thread.start()
    added = []
    final_descriptions = {f"base-{i}": f"Base skill {i}." for i in range(5)}
    deadline = time.monotonic() + 1.0
    try:
        for step in range(60):
            if time.monotonic() > deadline:
                break
            name = f"added-{step:02d}"
            write_skill(root, name, skill_md(name, f"Added at step {step}."))
            added.append(name)
            edited = f"base-{step % 5}"
            final_descriptions[edited] = f"Base skill {step % 5}, edited at step {step}."
            write_skill(root, edited, skill_md(edited, final_descriptions[edited]))
            time.sleep(0.01)
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=timeout(30))

    assert not any(thread.is_alive() for thread in threads)
    assert failures == []
    assert seen_counts  # the readers really ran
    registry.refresh()
    by_name = {r["name"]: r for r in registry.list(type="markdown")}
    for name in added:
        assert by_name[name]["description"] == f"Added at step {int(name.split('-')[1])}."
    for name, description in final_descriptions.items():
        assert by_name[name]["description"] == description
    assert [p for p in registry.problems if p["severity"] == "error"] == []
