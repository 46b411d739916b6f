"""Discovery: roots and their priority, which files count as skills, trust of skill.py, conflicts,
and the cheap change check (fingerprint) behind ``refresh``."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from nini.skills import SkillRegistry, skill
from nini.skills.discovery import SkillRoot, is_unchanged, scan_roots
from tests.conftest import skill_md, write_skill

NON_BUNDLED = ["project", "agents", "claude", "user", "extra"]


def root_paths(project_dir: Path, settings, extra: Path) -> dict[str, Path]:
    return {
        "project": project_dir / ".nini" / "skills",
        "agents": project_dir / ".agents" / "skills",
        "claude": project_dir / ".claude" / "skills",
        "user": settings.user_skills_dir,
        "extra": extra,
    }


def backdate(tree: Path, seconds: float = 1000) -> None:
    """Set every mtime under ``tree`` (and its own) into the past.

    Linux stamps files from a coarse clock (a few ms), so a change made right after a scan can keep
    the same mtime; real skill files were written long before a scan, which this reproduces.
    """
    past = time.time() - seconds
    for dirpath, dirnames, filenames in os.walk(tree):
        for name in dirnames + filenames:
            os.utime(os.path.join(dirpath, name), (past, past))
    os.utime(tree, (past, past))


# -- priority --------------------------------------------------------------------------------------


@pytest.mark.parametrize("top", NON_BUNDLED)
def test_higher_root_wins_and_every_lower_one_is_shadowed(settings, project_dir, tmp_path, top):
    extra = tmp_path / "extra-skills"
    settings.skills.extra_dirs = [extra]
    roots = root_paths(project_dir, settings, extra)
    present = NON_BUNDLED[NON_BUNDLED.index(top) :]
    for kind in present:
        # data-quality-check is also a bundled skill, the lowest root of all
        write_skill(roots[kind], "data-quality-check", skill_md("data-quality-check", f"From the {kind} root."))

    registry = SkillRegistry(settings, project_dir)

    winners = [r for r in registry.list() if r["name"] == "data-quality-check"]
    assert len(winners) == 1
    assert winners[0]["description"] == f"From the {top} root."
    assert winners[0]["metadata"]["source"] == top
    assert winners[0]["location"] == "data-quality-check/SKILL.md"
    shadowed = [p for p in registry.problems if p["kind"] == "shadowed"]
    assert sorted(p["source"] for p in shadowed) == sorted([*present[1:], "bundled"])
    for problem in shadowed:
        assert problem["name"] == "data-quality-check"
        assert problem["severity"] == "warning"
        assert problem["location"] == "data-quality-check/SKILL.md"
        assert f"shadowed by {top}:data-quality-check/SKILL.md" in problem["message"]


def test_priority_is_by_name_not_by_folder(settings, project_dir):
    """A skill whose folder differs from its name still shadows a lower root's skill of that name."""
    write_skill(project_dir / ".claude" / "skills", "some-folder", skill_md("data-quality-check", "Claude's version."))

    registry = SkillRegistry(settings, project_dir)

    assert registry.get("data-quality-check")["description"] == "Claude's version."
    assert [(p["source"], p["location"]) for p in registry.problems if p["kind"] == "shadowed"] == [
        ("bundled", "data-quality-check/SKILL.md")
    ]


# -- which files are skills ------------------------------------------------------------------------


def test_lowercase_skill_md_is_found(settings, project_dir):
    write_skill(project_dir / ".nini" / "skills", "lower", skill_md("lower", "Lowercase file."), filename="skill.md")

    registry = SkillRegistry(settings, project_dir)

    record = registry.get("lower")
    assert record["description"] == "Lowercase file."
    assert record["location"] == "lower/skill.md"


def test_skill_md_upper_case_is_preferred_over_lower_case(settings, project_dir):
    root = project_dir / ".nini" / "skills"
    write_skill(root, "both", skill_md("both", "From SKILL.md."))
    write_skill(root, "both", skill_md("both", "From skill.md."), filename="skill.md")

    registry = SkillRegistry(settings, project_dir)

    records = [r for r in registry.list() if r["name"] == "both"]
    assert [(r["description"], r["location"]) for r in records] == [("From SKILL.md.", "both/SKILL.md")]
    assert not [p for p in registry.problems if p["name"] == "both"]


def test_skills_in_category_subfolders_are_found(settings, project_dir):
    root = project_dir / ".agents" / "skills"
    write_skill(root, "statistics/tests/t-test", skill_md("t-test", "Two-sample t test."))
    write_skill(root, "charts/line-chart", skill_md("line-chart", "Line chart."))

    registry = SkillRegistry(settings, project_dir)

    assert registry.get("t-test")["location"] == "statistics/tests/t-test/SKILL.md"
    assert registry.get("line-chart")["location"] == "charts/line-chart/SKILL.md"


def test_a_skills_own_subfolders_are_not_skills(settings, project_dir):
    root = project_dir / ".nini" / "skills"
    write_skill(root, "outer", skill_md("outer", "The real skill."))
    write_skill(root, "outer/references/other", skill_md("inner-reference", "Not a skill."))
    write_skill(root, "outer/examples", skill_md("inner-example", "Not a skill either."), filename="skill.md")

    registry = SkillRegistry(settings, project_dir)

    names = {r["name"] for r in registry.list()}
    assert "outer" in names
    assert not {"inner-reference", "inner-example", "other", "examples"} & names
    assert not [p for p in registry.problems if "outer/" in p["location"] and p["location"] != "outer/SKILL.md"]


def test_hidden_folders_and_node_modules_are_skipped(settings, project_dir):
    root = project_dir / ".nini" / "skills"
    write_skill(root, "visible", skill_md("visible", "Seen."))
    write_skill(root, ".git/hooks", skill_md("git-hook", "Hidden."))
    write_skill(root, ".hidden-skill", skill_md("hidden-skill", "Hidden."))
    write_skill(root, "node_modules/pkg", skill_md("npm-skill", "In node_modules."))
    write_skill(root, "group/node_modules/pkg", skill_md("nested-npm-skill", "In nested node_modules."))
    write_skill(root, "group/.cache/thing", skill_md("cached-skill", "In a nested hidden folder."))

    registry = SkillRegistry(settings, project_dir)

    names = {r["name"] for r in registry.list() if r["metadata"].get("source") == "project"}
    assert names == {"visible"}
    assert not [p for p in registry.problems if p["source"] == "project"]


def test_locations_are_relative_with_forward_slashes(settings, project_dir, tmp_path):
    extra = tmp_path / "extra-skills"
    settings.skills.extra_dirs = [extra]
    roots = root_paths(project_dir, settings, extra)
    expected = {}
    for kind, path in roots.items():
        name = f"{kind}-deep"
        write_skill(path, f"group-{kind}/sub/{name}", skill_md(name, f"In {kind}."))
        expected[name] = f"group-{kind}/sub/{name}/SKILL.md"
    write_skill(roots["agents"], "bad-one", b"---\nname: [\n---\n")

    registry = SkillRegistry(settings, project_dir)

    records = registry.list()
    for name, location in expected.items():
        assert registry.get(name)["location"] == location
    for item in records + registry.problems:
        location = item["location"]
        assert location and not os.path.isabs(location) and "\\" not in location
        assert str(tmp_path) not in location
        assert not location.startswith(("/", "./", "../"))
    assert {r["location"] for r in records if r["metadata"].get("source") == "bundled"} >= {
        "skill-creator/SKILL.md",
        "skill-enhance/SKILL.md",
        "data-quality-check/SKILL.md",
    }
    assert [p["location"] for p in registry.problems if p["severity"] == "error"] == ["bad-one/SKILL.md"]


# -- skill.py and trust ----------------------------------------------------------------------------

PY_SKILL = '''\
from __future__ import annotations

from pathlib import Path

from nini.skills import skill

Path({marker!r}).write_text("imported")


@skill(category="stats")
def {func}(values: list[float], trim: float = 0.0) -> float:
    """Mean of numbers, optionally trimmed.

    Args:
        values: The numbers.
        trim: Share cut from each end.
    """
    return sum(values) / len(values)
'''


@pytest.mark.parametrize("kind", ["project", "agents", "claude"])
def test_skill_py_in_a_project_root_is_not_imported(settings, project_dir, tmp_path, kind):
    marker = tmp_path / "imported.marker"
    root = root_paths(project_dir, settings, tmp_path / "x")[kind]
    write_skill(root, "py-tool", PY_SKILL.format(marker=str(marker), func="project_mean"), filename="skill.py")
    write_skill(root, "md-tool", skill_md("md-tool", "Still loads."))

    registry = SkillRegistry(settings, project_dir)

    assert not marker.exists()
    assert "project_mean" not in {r["name"] for r in registry.list()}
    assert registry.get("md-tool")["description"] == "Still loads."
    untrusted = [p for p in registry.problems if p["kind"] == "untrusted"]
    assert [(p["source"], p["location"], p["severity"]) for p in untrusted] == [(kind, "py-tool/skill.py", "warning")]
    assert "not loaded" in untrusted[0]["message"]


@pytest.mark.parametrize("kind", ["user", "extra"])
def test_skill_py_in_user_or_extra_dir_is_loaded(settings, project_dir, tmp_path, kind):
    marker = tmp_path / "imported.marker"
    extra = tmp_path / "extra-skills"
    settings.skills.extra_dirs = [extra]
    root = root_paths(project_dir, settings, extra)[kind]
    write_skill(root, "tools/mean", PY_SKILL.format(marker=str(marker), func=f"{kind}_mean"), filename="skill.py")

    registry = SkillRegistry(settings, project_dir)

    assert marker.read_text() == "imported"
    record = registry.get(f"{kind}_mean")
    assert record["type"] == "function"
    assert record["location"] == "tools/mean/skill.py"
    assert record["enabled"] is True
    assert record["category"] == "statistics"
    assert record["description"] == "Mean of numbers, optionally trimmed."
    assert record["metadata"]["source"] == kind
    schema = record["metadata"]["input_schema"]
    assert schema["required"] == ["values"]
    assert schema["properties"]["trim"]["description"] == "Share cut from each end."
    assert registry.function(f"{kind}_mean").func([1.0, 2.0, 6.0]) == 3.0
    assert not [p for p in registry.problems if p["severity"] == "error"]


def test_skill_py_that_raises_on_import_is_reported_and_the_rest_loads(settings, project_dir, tmp_path):
    user = settings.user_skills_dir
    write_skill(
        user,
        "broken-py",
        "from nini.skills import skill\nraise RuntimeError('setup failed here')\n",
        filename="skill.py",
    )
    write_skill(user, "good-py", PY_SKILL.format(marker=str(tmp_path / "m"), func="good_mean"), filename="skill.py")
    write_skill(user, "good-md", skill_md("good-md", "Markdown next to it."))

    registry = SkillRegistry(settings, project_dir)

    assert registry.get("good_mean")["type"] == "function"
    assert registry.get("good-md")["type"] == "markdown"
    errors = [p for p in registry.problems if p["severity"] == "error"]
    assert [(p["kind"], p["source"], p["location"]) for p in errors] == [("invalid", "user", "broken-py/skill.py")]
    assert "RuntimeError" in errors[0]["message"] and "setup failed here" in errors[0]["message"]


@skill(name="group-summary", category="data")
def _group_summary(column: str) -> dict:
    """Summarise a table by a column."""
    return {}


def test_markdown_skill_named_like_a_function_skill_is_disabled(settings, project_dir):
    write_skill(project_dir / ".nini" / "skills", "group-summary", skill_md("group-summary", "Markdown version."))

    registry = SkillRegistry(settings, project_dir, function_skills=[_group_summary])

    records = {r["type"]: r for r in registry.list() if r["name"] == "group-summary"}
    assert records.keys() == {"function", "markdown"}
    assert records["function"]["enabled"] is True
    assert "conflict_with" not in records["function"]["metadata"]
    assert records["markdown"]["enabled"] is False
    assert records["markdown"]["metadata"]["conflict_with"] == "function"
    assert registry.get("group-summary")["type"] == "function"
    conflicts = [p for p in registry.problems if p["kind"] == "conflict"]
    assert [(p["name"], p["source"], p["location"]) for p in conflicts] == [
        ("group-summary", "project", "group-summary/SKILL.md")
    ]


def test_conflict_follows_register_and_unregister(settings, project_dir):
    write_skill(project_dir / ".nini" / "skills", "group-summary", skill_md("group-summary", "Markdown version."))
    registry = SkillRegistry(settings, project_dir, function_skills=[])
    assert registry.get("group-summary")["enabled"] is True

    registry.register(_group_summary)
    markdown = registry.get_record("group-summary", type="markdown")
    assert markdown.enabled is False and markdown.metadata["conflict_with"] == "function"

    registry.unregister("group-summary")
    markdown = registry.get_record("group-summary", type="markdown")
    assert markdown.enabled is True and "conflict_with" not in markdown.metadata
    assert not [p for p in registry.problems if p["kind"] == "conflict"]


# -- change detection ------------------------------------------------------------------------------


@pytest.fixture
def scanned(tmp_path):
    """A root with two skills (one nested), written "long ago", and its scan."""
    root = tmp_path / "root"
    write_skill(root, "alpha", skill_md("alpha", "Alpha."))
    write_skill(root, "group/beta", skill_md("beta", "Beta."))
    backdate(root)
    roots = [SkillRoot("user", root), SkillRoot("extra", tmp_path / "not-yet")]
    return root, roots, scan_roots(roots)


def test_scan_finds_files_in_priority_and_name_order(scanned):
    root, _roots, scan = scanned
    assert [(f.location, f.kind, f.root.kind) for f in scan.files] == [
        ("alpha/SKILL.md", "markdown", "user"),
        ("group/beta/SKILL.md", "markdown", "user"),
    ]


def test_unchanged_when_nothing_was_touched(scanned):
    root, roots, scan = scanned
    (root / "alpha" / "SKILL.md").read_text()  # reading is not a change
    assert is_unchanged(scan) is True
    assert is_unchanged(scan_roots(roots)) is True


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(
            lambda root, tmp: (root / "alpha" / "SKILL.md").write_text(skill_md("alpha", "Alpha 2.")),
            id="edit-file-new-size",
        ),
        pytest.param(
            lambda root, tmp: (root / "alpha" / "SKILL.md").write_text(skill_md("alpha", "Alpha.")),
            id="rewrite-file-same-size",
        ),
        pytest.param(lambda root, tmp: write_skill(root, "gamma", skill_md("gamma", "Gamma.")), id="add-skill-folder"),
        pytest.param(lambda root, tmp: (root / "empty-new").mkdir(), id="add-empty-folder"),
        pytest.param(
            lambda root, tmp: write_skill(root, "group/delta", skill_md("delta", "Delta.")),
            id="add-nested-skill-folder",
        ),
        pytest.param(lambda root, tmp: shutil.rmtree(root / "group" / "beta"), id="remove-skill-folder"),
        pytest.param(lambda root, tmp: (root / "alpha" / "SKILL.md").unlink(), id="remove-skill-file"),
        pytest.param(lambda root, tmp: (tmp / "not-yet").mkdir(), id="create-missing-root"),
    ],
)
def test_changed_after_each_kind_of_change(scanned, tmp_path, change):
    root, roots, scan = scanned
    change(root, tmp_path)
    assert is_unchanged(scan) is False
    backdate(tmp_path)  # a just-changed mtime is never trusted (see the racy tests below)
    rescan = scan_roots(roots)
    assert is_unchanged(rescan) is True


def test_registry_refresh_reports_changes_only_when_there_are_some(settings, project_dir):
    root = project_dir / ".nini" / "skills"
    write_skill(root, "alpha", skill_md("alpha", "Alpha."))
    backdate(project_dir)
    registry = SkillRegistry(settings, project_dir)

    assert registry.refresh() is False
    write_skill(root, "beta", skill_md("beta", "Beta."))
    assert registry.refresh() is True
    assert registry.get("beta")["description"] == "Beta."
    backdate(project_dir)  # mtimes move but no skill changes: the set is the same
    assert registry.refresh() is False
    assert registry.refresh() is False

    shutil.rmtree(root / "alpha")
    assert registry.refresh() is True
    assert "alpha" not in {r["name"] for r in registry.list()}


# -- racy mtimes: two saves within the file system's timestamp granularity -----------------------


@pytest.mark.parametrize("force", [False, True], ids=["refresh", "forced-refresh"])
def test_same_size_rewrite_with_the_same_recent_mtime_is_seen(settings, project_dir, force):
    """A coarse clock (FAT: 2 s) can stamp two quick saves of one size alike; the second is still read.

    ``force`` skips the fingerprint, so that case checks the parse cache on its own.
    """
    path = write_skill(project_dir / ".nini" / "skills", "alpha", skill_md("alpha", "Version A."))
    registry = SkillRegistry(settings, project_dir)
    assert registry.get("alpha")["description"] == "Version A."
    stamp = os.stat(path).st_mtime_ns

    path.write_text(skill_md("alpha", "Version B."), encoding="utf-8")  # same size
    os.utime(path, ns=(stamp, stamp))  # as the coarse clock would have stamped it

    assert registry.refresh(force=force) is True
    assert registry.get("alpha")["description"] == "Version B."


def test_folder_added_with_the_same_recent_parent_mtime_is_seen(settings, project_dir):
    root = project_dir / ".nini" / "skills"
    write_skill(root, "alpha", skill_md("alpha", "Alpha."))
    registry = SkillRegistry(settings, project_dir)
    stamp = os.stat(root).st_mtime_ns

    write_skill(root, "beta", skill_md("beta", "Beta."))
    os.utime(root, ns=(stamp, stamp))

    assert registry.refresh() is True
    assert registry.get("beta")["description"] == "Beta."


def test_recent_entries_are_rechecked_and_settled_ones_are_not(tmp_path):
    root = tmp_path / "root"
    write_skill(root, "alpha", skill_md("alpha", "Alpha."))
    roots = [SkillRoot("user", root)]

    fresh = scan_roots(roots)
    assert is_unchanged(fresh) is False
    assert [f.settled for f in fresh.files] == [False]

    backdate(root)
    settled = scan_roots(roots)
    assert is_unchanged(settled) is True
    assert [f.settled for f in settled.files] == [True]
