"""Loading fallbacks and normalisation rules of Markdown skills, through a real registry on disk.

Each table row is one SKILL.md written under the project's ``.nini/skills/`` and the record (or
doctor entry) the registry must produce for it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nini.skills import SkillRegistry
from nini.skills.rules import (
    CATEGORIES,
    MAX_DESCRIPTION_LENGTH,
    MAX_NAME_LENGTH,
    description_problems,
    name_problems,
    normalise_category,
)
from tests.conftest import skill_md, write_skill


def project_root(project_dir: Path) -> Path:
    return project_dir / ".nini" / "skills"


def load_one(settings, project_dir: Path, folder: str, text: str | bytes) -> tuple[dict, SkillRegistry]:
    """Write one skill in the project root and return its record (found by location) and the registry."""
    write_skill(project_root(project_dir), folder, text)
    registry = SkillRegistry(settings, project_dir)
    location = f"{folder}/SKILL.md"
    matches = [r for r in registry.list() if r["metadata"].get("source") == "project" and r["location"] == location]
    assert len(matches) == 1, f"{location} did not load; problems: {registry.problems}"
    return matches[0], registry


# -- name and description fallbacks ----------------------------------------------------------------

FALLBACK_ROWS = [
    pytest.param(
        "csv-cleaner",
        skill_md(description="Clean a CSV."),
        "csv-cleaner",
        "Clean a CSV.",
        id="name-defaults-to-folder",
    ),
    pytest.param(
        "blank-name",
        skill_md(name="", description="Blank name."),
        "blank-name",
        "Blank name.",
        id="empty-name-defaults-to-folder",
    ),
    pytest.param(
        "null-name",
        "---\nname:\ndescription: Null name.\n---\nBody\n",
        "null-name",
        "Null name.",
        id="null-name-defaults-to-folder",
    ),
    pytest.param(
        "no-frontmatter",
        "# Title\n\nSummarise a table by group.\n\nMore text.\n",
        "no-frontmatter",
        "Summarise a table by group.",
        id="no-frontmatter-at-all",
    ),
    pytest.param(
        "from-body",
        skill_md(name="from-body", body="# Title\n\nFirst paragraph line.\nSecond line.\n"),
        "from-body",
        "First paragraph line.",
        id="description-from-first-body-line",
    ),
    pytest.param(
        "many-headings",
        skill_md(
            name="many-headings",
            body="\n\n# H1\n\n## H2\n\n   \n### H3\n#### H4\n\n###### H6\n\n  The real text.  \n\nLater.\n",
        ),
        "many-headings",
        "The real text.",
        id="description-skips-blank-lines-and-heading-levels",
    ),
    pytest.param(
        "setext",
        skill_md(name="setext", body="Monthly Sales\n=============\n\nUsage\n-----\nSum sales by month.\n"),
        "setext",
        "Sum sales by month.",
        id="description-skips-setext-headings-and-their-underlines",
    ),
    pytest.param(
        "setext-wrapped",
        skill_md(name="setext-wrapped", body="A title that\nwraps onto two lines\n===\n\nThe text.\n"),
        "setext-wrapped",
        "The text.",
        id="description-skips-a-setext-heading-of-two-lines",
    ),
    pytest.param(
        "empty-description",
        skill_md(name="empty-description", description="", body="## Use\nFrom the body.\n"),
        "empty-description",
        "From the body.",
        id="empty-description-falls-back-to-body",
    ),
    pytest.param(
        "blank-description",
        skill_md(name="blank-description", description="   ", body="# T\nBody line.\n"),
        "blank-description",
        "Body line.",
        id="whitespace-description-falls-back-to-body",
    ),
    pytest.param(
        "declared",
        skill_md(name="declared", description="Declared wins.", body="# T\n\nBody line.\n"),
        "declared",
        "Declared wins.",
        id="declared-description-beats-body",
    ),
]


@pytest.mark.parametrize(("folder", "text", "name", "description"), FALLBACK_ROWS)
def test_name_and_description_fallbacks(settings, project_dir, folder, text, name, description):
    record, registry = load_one(settings, project_dir, folder, text)

    assert record["name"] == name
    assert record["description"] == description
    assert record["type"] == "markdown"
    assert not [p for p in registry.problems if p["location"] == f"{folder}/SKILL.md" and p["severity"] == "error"]


# -- categories ------------------------------------------------------------------------------------

CATEGORY_ROWS = [
    *[pytest.param(c, c, id=f"canonical-{c}") for c in CATEGORIES],
    pytest.param("analysis", "statistics", id="alias-analysis"),
    pytest.param("stat", "statistics", id="alias-stat"),
    pytest.param("stats", "statistics", id="alias-stats"),
    pytest.param("viz", "visualization", id="alias-viz"),
    pytest.param("chart", "visualization", id="alias-chart"),
    pytest.param("charts", "visualization", id="alias-charts"),
    pytest.param("plot", "visualization", id="alias-plot"),
    pytest.param("plots", "visualization", id="alias-plots"),
    pytest.param("data-analysis", "data", id="alias-data-analysis"),
    pytest.param("automation", "workflow", id="alias-automation"),
    pytest.param("helper", "utility", id="alias-helper"),
    pytest.param("tools", "utility", id="alias-tools"),
    pytest.param("STATS", "statistics", id="case-STATS"),
    pytest.param("Viz", "visualization", id="case-Viz"),
    pytest.param("Data-Analysis", "data", id="case-Data-Analysis"),
    pytest.param("Visualization", "visualization", id="case-Visualization"),
    pytest.param("Experiment_Design", "experiment_design", id="case-Experiment_Design"),
    pytest.param("experiment-design", "experiment_design", id="hyphen-experiment-design"),
    pytest.param("  charts  ", "visualization", id="surrounding-spaces"),
]


@pytest.mark.parametrize("where", ["top-level", "metadata"])
@pytest.mark.parametrize(("raw", "expected"), CATEGORY_ROWS)
def test_category_is_normalised(settings, project_dir, where, raw, expected):
    extra = {"category": raw} if where == "top-level" else {"metadata": {"category": raw}}
    record, registry = load_one(settings, project_dir, "cat-skill", skill_md("cat-skill", "Categorised.", **extra))

    assert record["category"] == expected
    assert "raw_category" not in record["metadata"]
    assert not [p for p in registry.problems if p["name"] == "cat-skill"]


@pytest.mark.parametrize("where", ["top-level", "metadata"])
@pytest.mark.parametrize("raw", ["astrology", "Deep Learning", "42"])
def test_unknown_category_is_other_and_keeps_raw_value(settings, project_dir, where, raw):
    extra = {"category": raw} if where == "top-level" else {"metadata": {"category": raw}}
    record, registry = load_one(settings, project_dir, "odd-cat", skill_md("odd-cat", "Odd category.", **extra))

    assert record["category"] == "other"
    assert record["metadata"]["raw_category"] == raw
    warnings = [p for p in registry.problems if p["name"] == "odd-cat" and p["kind"] == "rule"]
    assert any(raw in p["message"] for p in warnings), warnings


def test_top_level_category_wins_over_metadata_category(settings, project_dir):
    text = skill_md("both-cats", "Two categories.", category="viz", metadata={"category": "stats", "author": "x"})
    record, _ = load_one(settings, project_dir, "both-cats", text)

    assert record["category"] == "visualization"
    assert record["metadata"]["author"] == "x"


@pytest.mark.parametrize("empty", ["category:\n", "category: ''\n", "category: '  '\n"], ids=["null", "empty", "blank"])
def test_empty_top_level_category_does_not_hide_metadata_category(settings, project_dir, empty):
    text = f"---\nname: empty-cat\ndescription: Empty top level.\n{empty}metadata:\n  category: viz\n---\nBody.\n"
    record, _ = load_one(settings, project_dir, "empty-cat", text)

    assert record["category"] == "visualization"


def test_missing_category_is_other_without_raw_value(settings, project_dir):
    record, registry = load_one(settings, project_dir, "no-cat", skill_md("no-cat", "No category."))

    assert record["category"] == "other"
    assert "raw_category" not in record["metadata"]
    assert not [p for p in registry.problems if p["name"] == "no-cat"]


# -- rule breaks load with a warning ---------------------------------------------------------------

LONG_DESCRIPTION = ("Checks a dataset for problems before analysis. " * 30)[:1100]
LONG_NAME = "-".join(["abcdefghi"] * 7) + "x"  # 70 characters of valid kebab-case
assert len(LONG_DESCRIPTION) == 1100 and len(LONG_NAME) == 70

RULE_ROWS = [
    pytest.param(
        "long-description",
        "long-description",
        LONG_DESCRIPTION,
        ["1100 characters", "1024"],
        id="description-1100-chars",
    ),
    pytest.param(
        "angle-brackets",
        "angle-brackets",
        "Use it for <table> files -> summaries.",
        ["angle brackets"],
        id="description-angle-brackets",
    ),
    pytest.param(
        "My_Skill", "My_Skill", "A name that is not kebab-case.", ["'My_Skill'", "kebab-case"], id="name-Camel_Case"
    ),
    pytest.param(LONG_NAME, LONG_NAME, "A name over the limit.", ["70 characters", "64"], id="name-70-chars"),
]


@pytest.mark.parametrize(("folder", "name", "description", "message_parts"), RULE_ROWS)
def test_rule_breaks_still_load_with_a_warning(settings, project_dir, folder, name, description, message_parts):
    record, registry = load_one(settings, project_dir, folder, skill_md(name, description))

    assert record["name"] == name
    assert record["description"] == description
    assert record["enabled"] is True
    rule_problems = [p for p in registry.problems if p["kind"] == "rule" and p["name"] == name]
    assert len(rule_problems) == 1, registry.problems
    problem = rule_problems[0]
    assert problem["severity"] == "warning"
    assert problem["source"] == "project"
    assert problem["location"] == f"{folder}/SKILL.md"
    for part in message_parts:
        assert part in problem["message"]
    assert record["metadata"]["warnings"] == [problem["message"]]


def test_limits_exactly_reached_give_no_warning(settings, project_dir):
    name = "a" * MAX_NAME_LENGTH
    description = "d" * MAX_DESCRIPTION_LENGTH
    record, registry = load_one(settings, project_dir, name, skill_md(name, description))

    assert record["name"] == name
    assert record["description"] == description
    assert "warnings" not in record["metadata"]
    assert not [p for p in registry.problems if p["name"] == name]


def test_name_differing_from_folder_is_a_warning(settings, project_dir):
    record, registry = load_one(settings, project_dir, "folder-name", skill_md("declared-name", "Renamed."))

    assert record["name"] == "declared-name"
    messages = [p["message"] for p in registry.problems if p["kind"] == "rule" and p["name"] == "declared-name"]
    assert messages == ["name 'declared-name' differs from its folder 'folder-name'"]


# -- metadata --------------------------------------------------------------------------------------


def test_extra_frontmatter_keys_are_kept_in_metadata(settings, project_dir):
    text = skill_md(
        "extras",
        "Has extra keys.",
        license="Apache-2.0",
        **{"allowed-tools": ["Bash", "Read"]},
        version="1.2.0",
        metadata={"author": "someone", "tags": ["a", "b"]},
    )
    record, _ = load_one(settings, project_dir, "extras", text)

    meta = record["metadata"]
    assert meta["license"] == "Apache-2.0"
    assert meta["allowed-tools"] == ["Bash", "Read"]
    assert meta["version"] == "1.2.0"
    assert meta["author"] == "someone"
    assert meta["tags"] == ["a", "b"]
    assert meta["source"] == "project"
    # the fields that have their own place in the record are not repeated in metadata
    assert not {"name", "description"} & meta.keys()


def test_yaml_dates_and_odd_scalars_do_not_break_json(settings, project_dir):
    text = (
        "---\n"
        "name: dated\n"
        "description: Has dates.\n"
        "version: 2024-01-15\n"
        "created: 2024-01-15T10:30:00Z\n"
        "ratio: .nan\n"
        "limit: .inf\n"
        "metadata:\n"
        "  released: 2023-12-31\n"
        "  changelog:\n"
        "    2024-01-15: first release\n"
        "    2024-02-01: second release\n"
        "---\n"
        "# Dated\n"
    )
    record, registry = load_one(settings, project_dir, "dated", text)

    json.dumps(registry.list(), allow_nan=False)  # strict JSON: what the CLI and REST send
    meta = record["metadata"]
    assert meta["version"] == "2024-01-15"
    assert meta["created"].startswith("2024-01-15")
    assert meta["released"] == "2023-12-31"
    assert meta["changelog"] == {"2024-01-15": "first release", "2024-02-01": "second release"}
    assert meta["ratio"] == "nan"
    assert meta["limit"] == "inf"


def test_metadata_that_is_not_a_mapping_is_kept_as_value(settings, project_dir):
    record, registry = load_one(settings, project_dir, "meta-str", skill_md("meta-str", "Meta text.", metadata="v1"))

    assert record["metadata"]["value"] == "v1"
    assert any("metadata must be a mapping" in p["message"] for p in registry.problems if p["name"] == "meta-str")


def test_numeric_name_is_read_as_text(settings, project_dir):
    record, registry = load_one(settings, project_dir, "2024", "---\nname: 2024\ndescription: Numbered.\n---\n")

    assert record["name"] == "2024"
    assert any("is a number" in p["message"] for p in registry.problems if p["name"] == "2024")


# -- rules module ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        *[(c, (c, None)) for c in CATEGORIES],
        ("analysis", ("statistics", None)),
        ("stat", ("statistics", None)),
        ("stats", ("statistics", None)),
        ("viz", ("visualization", None)),
        ("chart", ("visualization", None)),
        ("charts", ("visualization", None)),
        ("plot", ("visualization", None)),
        ("plots", ("visualization", None)),
        ("data-analysis", ("data", None)),
        ("data_analysis", ("data", None)),
        ("automation", ("workflow", None)),
        ("helper", ("utility", None)),
        ("tools", ("utility", None)),
        ("PLOTS", ("visualization", None)),
        ("Experiment Design", ("experiment_design", None)),
        (None, ("other", None)),
        ("", ("other", None)),
        ("   ", ("other", None)),
        ("astrology", ("other", "astrology")),
        ("  Machine Learning ", ("other", "Machine Learning")),
        (7, ("other", "7")),
    ],
)
def test_normalise_category(raw, expected):
    assert normalise_category(raw) == expected


@pytest.mark.parametrize(
    ("name", "expected_parts"),
    [
        ("data-clean", []),
        ("a", []),
        ("t-test-2", []),
        ("a" * 64, []),
        ("a" * 65, [["65 characters", "64"]]),
        ("Data", [["kebab-case"]]),
        ("data_clean", [["kebab-case"]]),
        ("-data", [["kebab-case"]]),
        ("data-", [["kebab-case"]]),
        ("data--clean", [["kebab-case"]]),
        ("data clean", [["kebab-case"]]),
        ("数据清洗", [["kebab-case"]]),
        ("A" * 65, [["kebab-case"], ["65 characters"]]),
    ],
)
def test_name_problems(name, expected_parts):
    problems = name_problems(name)
    assert len(problems) == len(expected_parts), problems
    for problem, parts in zip(problems, expected_parts, strict=True):
        for part in parts:
            assert part in problem


@pytest.mark.parametrize(
    ("description", "expected_parts"),
    [
        ("Clean a table.", []),
        ("x" * 1024, []),
        ("x" * 1025, [["1025 characters", "1024"]]),
        ("", [["empty"]]),
        ("   ", [["empty"]]),
        ("Use for a<b comparisons", [["angle brackets"]]),
        ("Outputs -> report", [["angle brackets"]]),
        ("<" + "x" * 1030, [["1031 characters"], ["angle brackets"]]),
    ],
)
def test_description_problems(description, expected_parts):
    problems = description_problems(description)
    assert len(problems) == len(expected_parts), problems
    for problem, parts in zip(problems, expected_parts, strict=True):
        for part in parts:
            assert part in problem


# -- validate_skill_file ---------------------------------------------------------------------------


def test_validate_reports_a_path_that_cannot_be_examined_instead_of_raising(tmp_path):
    from nini.skills.markdown import validate_skill_file

    too_long = tmp_path / ("x" * 300)  # stat raises ENAMETOOLONG, which is_dir does not swallow

    errors, warnings = validate_skill_file(too_long)

    assert len(errors) == 1 and "too long" in errors[0].lower()
    assert warnings == []
