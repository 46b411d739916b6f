"""Read before execute: ``load_definition`` reads SKILL.md at call time; ``read_resource`` stays in the folder."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from nini.errors import ErrorCode, NiniError
from nini.skills import SkillRegistry, skill
from tests.conftest import skill_md, write_skill

BODY = "# Monthly sales\n\n1. Load the sales table.\n2. Group by month and sum `amount`.\n"


def project_root(project_dir: Path) -> Path:
    return project_dir / ".nini" / "skills"


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def skill_file(project_dir: Path) -> Path:
    return write_skill(
        project_root(project_dir), "monthly-sales", skill_md("monthly-sales", "Sum sales by month.", body=BODY)
    )


@pytest.fixture
def registry(settings, project_dir, skill_file) -> SkillRegistry:
    @skill(name="fn-only", description="A function skill with no SKILL.md.")
    def fn_only(x: int) -> int:
        """Return x.

        Args:
            x: A number.
        """
        return x

    return SkillRegistry(settings, project_dir, function_skills=[fn_only])


# -- load_definition ---------------------------------------------------------------------------


def test_load_definition_returns_the_body_without_frontmatter_and_the_file_hash(registry, skill_file):
    definition = registry.load_definition("monthly-sales")

    assert definition.name == "monthly-sales"
    assert definition.body == BODY
    assert "description:" not in definition.body and "---" not in definition.body
    assert definition.content_hash == sha256(skill_file)
    assert definition.location == "monthly-sales/SKILL.md"


def test_load_definition_reads_the_file_at_call_time_without_refresh(registry, skill_file):
    before = registry.load_definition("monthly-sales")
    new_body = "# Monthly sales\n\n1. Load the table.\n2. Drop refunds first.\n3. Then sum by month.\n"
    skill_file.write_text(skill_md("monthly-sales", "Sum sales by month.", body=new_body), encoding="utf-8")

    after = registry.load_definition("monthly-sales")

    assert after.body == new_body
    assert after.content_hash == sha256(skill_file)
    assert after.content_hash != before.content_hash


def test_hash_covers_the_frontmatter_too(registry, skill_file):
    before = registry.load_definition("monthly-sales")
    skill_file.write_text(skill_md("monthly-sales", "Sum sales by calendar month.", body=BODY), encoding="utf-8")

    after = registry.load_definition("monthly-sales")

    assert after.body == before.body
    assert after.content_hash != before.content_hash


def test_body_and_hash_come_from_the_same_read_of_the_file(registry, skill_file, monkeypatch):
    """The hash recorded with an invocation must identify the very text that was followed.

    An editor replaces the file right after nini's first read of it: whatever nini returns, its
    body and its hash must both describe one version of the file, not one each.
    """
    first_bytes = skill_file.read_bytes()
    new_body = "# Monthly sales\n\n1. A different procedure, saved by an editor.\n"
    replacement = skill_md("monthly-sales", "Sum sales by month.", body=new_body).encode("utf-8")
    real_read_bytes = Path.read_bytes
    reads = []

    def read_then_editor_saves(path: Path) -> bytes:
        data = real_read_bytes(path)
        if path == skill_file and not reads:
            reads.append(path)
            staged = skill_file.with_name("SKILL.md.new")
            staged.write_bytes(replacement)
            os.replace(staged, skill_file)
        return data

    monkeypatch.setattr(Path, "read_bytes", read_then_editor_saves)
    definition = registry.load_definition("monthly-sales")
    monkeypatch.undo()

    assert reads, "the definition was not read from disk"
    versions = {hashlib.sha256(first_bytes).hexdigest(): BODY, hashlib.sha256(replacement).hexdigest(): new_body}
    assert definition.content_hash in versions
    assert definition.body == versions[definition.content_hash]


def test_deleted_definition_is_unavailable_and_names_the_skill(registry, skill_file):
    skill_file.unlink()

    with pytest.raises(NiniError) as caught:
        registry.load_definition("monthly-sales")

    assert caught.value.code == ErrorCode.SKILL_DEFINITION_UNAVAILABLE
    assert "monthly-sales" in caught.value.message


@pytest.mark.parametrize(
    "content",
    [
        b"---\nname: monthly-sales\ndescription: [unclosed\n---\n# Body\n",
        b"---\nname: monthly-sales\ndescription: never closed\n# Body\n",
        b"---\nname: monthly-sales\ndescription: ok\n---\n\xff\xfe not UTF-8\n",
        b"\x00\x01\x02binary",
    ],
    ids=["invalid-yaml", "unclosed-frontmatter", "invalid-utf8", "binary"],
)
def test_unreadable_definition_is_unavailable(registry, skill_file, content):
    skill_file.write_bytes(content)

    with pytest.raises(NiniError) as caught:
        registry.load_definition("monthly-sales")

    assert caught.value.code == ErrorCode.SKILL_DEFINITION_UNAVAILABLE
    assert "monthly-sales" in caught.value.message


@pytest.mark.parametrize("name", ["fn-only", "no-such-skill"])
def test_load_definition_of_a_name_without_a_markdown_skill_is_not_found(registry, name):
    with pytest.raises(NiniError) as caught:
        registry.load_definition(name)
    assert caught.value.code == ErrorCode.NOT_FOUND


# -- read_resource -----------------------------------------------------------------------------


@pytest.fixture
def resources(skill_file: Path) -> Path:
    """The skill folder with a resource, a resource in a subfolder, and a secret just outside it."""
    folder = skill_file.parent
    (folder / "reference.md").write_text("columns: date, region, amount\n", encoding="utf-8")
    (folder / "scripts").mkdir()
    (folder / "scripts" / "helper.py").write_text("print('helper')\n", encoding="utf-8")
    (folder.parent / "x").write_text("SECRET outside the skill folder\n", encoding="utf-8")
    return folder


def test_read_resource_reads_files_inside_the_skill_folder(registry, resources):
    assert registry.read_resource("monthly-sales", "reference.md") == "columns: date, region, amount\n"
    assert registry.read_resource("monthly-sales", "scripts/helper.py") == "print('helper')\n"
    assert registry.read_resource("monthly-sales", "./scripts/helper.py") == "print('helper')\n"


def test_read_resource_reads_the_file_as_it_is_now(registry, resources):
    (resources / "reference.md").write_text("columns: changed\n", encoding="utf-8")
    assert registry.read_resource("monthly-sales", "reference.md") == "columns: changed\n"


@pytest.mark.parametrize(
    "relative_path",
    ["../x", "a/../../x", "..\\x", "scripts/../../x", "C:\\x", "", ".", "./"],
)
def test_read_resource_refuses_paths_that_leave_the_folder_or_name_no_file(registry, resources, relative_path):
    with pytest.raises(NiniError) as caught:
        registry.read_resource("monthly-sales", relative_path)
    assert caught.value.code == ErrorCode.INVALID_ARGUMENT
    assert "SECRET" not in caught.value.message


def test_read_resource_refuses_an_absolute_path(registry, resources):
    outside = resources.parent / "x"
    inside = resources / "reference.md"
    for path in (outside, inside):  # absolute is refused even when it points inside
        with pytest.raises(NiniError) as caught:
            registry.read_resource("monthly-sales", str(path))
        assert caught.value.code == ErrorCode.INVALID_ARGUMENT


def test_read_resource_refuses_a_symlink_that_points_outside(registry, resources):
    os.symlink(resources.parent / "x", resources / "link.md")
    os.symlink(resources.parent, resources / "up")

    for relative_path in ("link.md", "up/x"):
        with pytest.raises(NiniError) as caught:
            registry.read_resource("monthly-sales", relative_path)
        assert caught.value.code == ErrorCode.INVALID_ARGUMENT


def test_read_resource_follows_a_symlink_that_stays_inside(registry, resources):
    os.symlink(resources / "reference.md", resources / "scripts" / "ref.md")
    assert registry.read_resource("monthly-sales", "scripts/ref.md") == "columns: date, region, amount\n"


def test_read_resource_of_a_missing_file_is_not_found(registry, resources):
    with pytest.raises(NiniError) as caught:
        registry.read_resource("monthly-sales", "scripts/missing.py")
    assert caught.value.code == ErrorCode.NOT_FOUND


def test_read_resource_of_a_skill_whose_definition_is_gone_is_unavailable(registry, resources, skill_file):
    skill_file.unlink()
    with pytest.raises(NiniError) as caught:
        registry.read_resource("monthly-sales", "reference.md")
    assert caught.value.code == ErrorCode.SKILL_DEFINITION_UNAVAILABLE


def test_oversized_definition_is_refused_without_reading_it_whole(registry, skill_file):
    import tracemalloc

    size = 64 << 20
    with open(skill_file, "r+b") as handle:  # sparse: large to stat, costs no disk
        handle.truncate(size)

    tracemalloc.start()
    try:
        with pytest.raises(NiniError) as caught:
            registry.load_definition("monthly-sales")
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert caught.value.code == ErrorCode.SKILL_DEFINITION_UNAVAILABLE
    assert "monthly-sales" in caught.value.message and "MiB" in caught.value.message
    assert peak < size // 8, f"{peak} bytes held while refusing a {size}-byte file"
