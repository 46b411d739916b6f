"""``create_skill``: new Markdown and function skills that follow every rule and read back exactly."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from nini.errors import ErrorCode, NiniError
from nini.skills import SkillRegistry
from nini.skills.function import load_skill_module
from nini.skills.markdown import validate_skill_file
from nini.skills.scaffold import create_skill
from tests.timeouts import timeout

SECTIONS = ("## 适用场景", "## 步骤", "## 注意事项")
LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+\S")
FRONTMATTER = re.compile(r"\A---\n(.*?)\n---\n", re.S)

TRICKY_DESCRIPTIONS = {
    "chinese": "按月汇总销售额并比较各地区的增长。当用户上传销售数据并询问趋势时使用。",
    "colon-and-quotes": "Use when: the user asks \"which region grew?\" or says 'compare' twice",
    "leading-dash": "- starts like a YAML list item",
    "hashes": "# not a comment # and #hashtag inside",
    "yaml-bool": "yes",
    "yaml-bool-no": "no",
    "yaml-number": "1.0",
    "yaml-null": "null",
    "yaml-date": "2024-01-31",
    "yaml-indicators": "*alias &anchor !tag %directive @at `tick |pipe {a: b} [x, y]",
    "surrounding-spaces": "  padded on both sides  ",
    "max-length": ("分析数据 analyse data, " * 80)[:1024],
    "newline": "first line\nsecond line",
}


def split(text: str) -> tuple[dict, str]:
    match = FRONTMATTER.match(text)
    assert match, f"no frontmatter block at the top of:\n{text[:200]}"
    return yaml.safe_load(match.group(1)), text[match.end() :]


def section_texts(body: str) -> dict[str, list[str]]:
    """Lines under each ``## `` heading, in file order."""
    sections: dict[str, list[str]] = {}
    current = None
    for line in body.splitlines():
        if line.startswith("## "):
            current = line.strip()
            sections[current] = []
        elif current is not None:
            sections[current].append(line)
    return sections


@pytest.fixture
def out(tmp_path: Path) -> Path:
    path = tmp_path / "out"
    path.mkdir()
    return path


# -- markdown ----------------------------------------------------------------------------------


@pytest.mark.parametrize("description", TRICKY_DESCRIPTIONS.values(), ids=TRICKY_DESCRIPTIONS.keys())
def test_markdown_frontmatter_equals_the_inputs_exactly(out, description):
    assert len(TRICKY_DESCRIPTIONS["max-length"]) == 1024

    written = create_skill(
        "sales-trend", type="markdown", description=description, category="statistics", directory=out
    )

    path = out / "sales-trend" / "SKILL.md"
    assert written == [path]
    frontmatter, _body = split(path.read_text(encoding="utf-8"))
    assert frontmatter["name"] == "sales-trend"
    assert frontmatter["description"] == description
    assert frontmatter["category"] == "statistics"
    assert validate_skill_file(path) == ([], [])


@pytest.mark.parametrize("category", ["data", "visualization", "experiment_design", "other", "stats"])
def test_markdown_category_is_written_as_given(out, category):
    create_skill("chart-it", type="markdown", description="Draw a chart.", category=category, directory=out)
    frontmatter, _body = split((out / "chart-it" / "SKILL.md").read_text(encoding="utf-8"))
    assert frontmatter["category"] == category


@pytest.mark.parametrize("description", TRICKY_DESCRIPTIONS.values(), ids=TRICKY_DESCRIPTIONS.keys())
def test_scaffolded_markdown_skill_loads_with_the_same_name_and_description(settings, project_dir, description):
    create_skill(
        "sales-trend",
        type="markdown",
        description=description,
        category="data",
        directory=project_dir / ".nini" / "skills",
    )

    registry = SkillRegistry(settings, project_dir)

    record = registry.get_record("sales-trend", type="markdown")
    assert (record.name, record.description, record.category) == ("sales-trend", description, "data")
    assert record.enabled is True
    assert [p for p in registry.problems if p["name"] == "sales-trend"] == []


def test_markdown_body_has_title_and_the_three_sections_with_guidance(out):
    create_skill(
        "region-compare", type="markdown", description="Compare regions.", category="statistics", directory=out
    )
    text = (out / "region-compare" / "SKILL.md").read_text(encoding="utf-8")
    _frontmatter, body = split(text)

    lines = [line for line in body.splitlines() if line.strip()]
    assert re.match(r"^# \S", lines[0]), f"first body line is not an H1 title: {lines[0]!r}"
    headings = [line.strip() for line in lines if line.startswith("## ")]
    assert headings == list(SECTIONS)
    sections = section_texts(body)
    for heading in SECTIONS:
        items = [line for line in sections[heading] if LIST_ITEM.match(line)]
        assert len(items) >= 2, f"{heading} has {len(items)} list items"
        assert all(len(LIST_ITEM.sub("", item).strip()) >= 8 for item in items), items
    assert "todo" not in text.lower()


def test_refuses_to_overwrite_an_existing_skill(out):
    create_skill("keep-mine", type="markdown", description="Original.", category="data", directory=out)
    path = out / "keep-mine" / "SKILL.md"
    path.write_bytes(path.read_bytes() + "\n用户补充的步骤。\n".encode())
    original = path.read_bytes()

    with pytest.raises(NiniError) as caught:
        create_skill("keep-mine", type="markdown", description="Replacement.", category="data", directory=out)

    assert caught.value.code == ErrorCode.CONFLICT
    assert str(path) in caught.value.message
    assert path.read_bytes() == original
    assert sorted(p.name for p in (out / "keep-mine").iterdir()) == ["SKILL.md"]


@pytest.mark.parametrize(
    "present,skill_type",
    [("SKILL.md", "function"), ("skill.md", "markdown"), ("skill.md", "function"), ("skill.py", "markdown")],
)
def test_refuses_a_folder_that_already_holds_another_kind_of_skill_file(out, present, skill_type):
    folder = out / "taken"
    folder.mkdir()
    (folder / present).write_text("user content\n", encoding="utf-8")

    with pytest.raises(NiniError) as caught:
        create_skill("taken", type=skill_type, description="New.", category="data", directory=out)

    assert caught.value.code == ErrorCode.CONFLICT
    assert str(folder / present) in caught.value.message
    assert [p.name for p in folder.iterdir()] == [present]


def test_refuses_to_overwrite_an_existing_function_skill(out):
    create_skill("keep-code", type="function", description="Original.", category="data", directory=out)
    module = out / "keep-code" / "skill.py"
    module.write_text(module.read_text(encoding="utf-8") + "\n# edited by the user\n", encoding="utf-8")
    original = module.read_bytes()

    with pytest.raises(NiniError) as caught:
        create_skill("keep-code", type="function", description="Replacement.", category="data", directory=out)

    assert caught.value.code == ErrorCode.CONFLICT
    assert str(out / "keep-code") in caught.value.message
    assert module.read_bytes() == original


@pytest.mark.parametrize(
    "name",
    ["Upper", "under_score", "-leading", "trailing-", "double--hyphen", "a" * 65, "", "has space", "中文"],
    ids=[
        "upper",
        "underscore",
        "leading-hyphen",
        "trailing-hyphen",
        "double-hyphen",
        "65-chars",
        "empty",
        "space",
        "non-ascii",
    ],
)
@pytest.mark.parametrize("skill_type", ["markdown", "function"])
def test_rejects_an_invalid_name_and_writes_nothing(out, name, skill_type):
    with pytest.raises(NiniError) as caught:
        create_skill(name, type=skill_type, description="Fine description.", category="data", directory=out)
    assert caught.value.code == ErrorCode.INVALID_ARGUMENT
    assert list(out.iterdir()) == []


def test_a_64_character_name_is_accepted(out):
    name = "a" * 64
    create_skill(name, type="markdown", description="Longest allowed name.", category="data", directory=out)
    frontmatter, _body = split((out / name / "SKILL.md").read_text(encoding="utf-8"))
    assert frontmatter["name"] == name


@pytest.mark.parametrize(
    "description",
    ["uses <html> tags", "a > b", "x" * 1025, "", "   "],
    ids=["angle-brackets", "greater-than", "1025-chars", "empty", "blank"],
)
def test_rejects_an_invalid_description_and_writes_nothing(out, description):
    with pytest.raises(NiniError) as caught:
        create_skill("good-name", type="markdown", description=description, category="data", directory=out)
    assert caught.value.code == ErrorCode.INVALID_ARGUMENT
    assert list(out.iterdir()) == []


@pytest.mark.parametrize("description", ["next\x85line", "bell\x07char", "a\u2029b"])
def test_a_description_with_unusual_line_breaks_is_written_exactly_not_mangled(out, description):
    # PyYAML's default output folds U+0085 (NEXT LINE) into a space: the file would not say what was asked.
    create_skill("odd-breaks", type="markdown", description=description, category="data", directory=out)

    frontmatter, _body = split((out / "odd-breaks" / "SKILL.md").read_bytes().decode("utf-8"))
    assert frontmatter == {"name": "odd-breaks", "description": description, "category": "data"}
    assert validate_skill_file(out / "odd-breaks" / "SKILL.md") == ([], [])


def test_rejects_an_unknown_category_and_writes_nothing(out):
    with pytest.raises(NiniError) as caught:
        create_skill("good-name", type="markdown", description="Fine.", category="astrology", directory=out)
    assert caught.value.code == ErrorCode.INVALID_ARGUMENT
    assert "astrology" in caught.value.message
    assert list(out.iterdir()) == []


# -- function ----------------------------------------------------------------------------------


def test_function_skill_is_written_and_loads_from_the_user_skills_dir(settings, project_dir):
    description = 'Summarise a numeric column: count, mean, min and max ("quick stats").'
    written = create_skill(
        "column-summary",
        type="function",
        description=description,
        category="statistics",
        directory=settings.user_skills_dir,
    )

    folder = settings.user_skills_dir / "column-summary"
    assert sorted(written) == sorted([folder / "skill.py", folder / "test_skill.py"])
    registry = SkillRegistry(settings, project_dir)

    record = registry.get("column-summary")
    assert record["type"] == "function"
    assert record["description"] == description
    assert record["category"] == "statistics"
    assert record["enabled"] is True
    assert not Path(record["location"]).is_absolute()
    assert [p for p in registry.problems if p["severity"] == "error"] == []
    function_skill = registry.function("column-summary")
    arguments = function_skill.validate_arguments({"values": [2, 4]})
    assert function_skill.func(**arguments)["mean"] == 3.0
    assert "values" in record["metadata"]["input_schema"]["properties"]


def test_generated_function_test_passes_under_pytest(out):
    create_skill("column-summary", type="function", description="Summarise numbers.", category="data", directory=out)
    test_file = out / "column-summary" / "test_skill.py"

    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(test_file)],
        cwd=test_file.parent,
        capture_output=True,
        text=True,
        timeout=timeout(120),
    )

    assert result.returncode == 0, result.stdout + result.stderr
    assert re.search(r"\b2 passed\b", result.stdout), result.stdout


@pytest.mark.parametrize("name", ["3d-summary", "class", "2024-report"])
def test_function_names_that_are_not_python_identifiers_give_a_valid_function(out, name):
    create_skill(name, type="function", description="Odd name.", category="data", directory=out)
    module = out / name / "skill.py"

    tree = ast.parse(module.read_text(encoding="utf-8"))  # valid Python
    functions = [node.name for node in tree.body if isinstance(node, ast.FunctionDef)]
    assert len(functions) == 1 and functions[0].isidentifier()

    [loaded] = load_skill_module(module, f"scaffold_test_{functions[0]}")
    assert loaded.name == name
    assert loaded.func(**loaded.validate_arguments({"values": [1.0, 3.0]}))["mean"] == 2.0


def test_generated_test_of_a_digit_leading_name_passes_under_pytest(out):
    create_skill("3d-summary", type="function", description="Digit first.", category="data", directory=out)
    test_file = out / "3d-summary" / "test_skill.py"

    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(test_file)],
        cwd=test_file.parent,
        capture_output=True,
        text=True,
        timeout=timeout(120),
    )

    assert result.returncode == 0, result.stdout + result.stderr
