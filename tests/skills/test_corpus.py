"""Real SKILL.md files published by another vendor (Anthropic's anthropics/skills) load as written.

The expectations come from ``yaml.safe_load`` in this file, not from nini's parser, so a parser
bug cannot make its own expectation.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import yaml

from nini.skills import SkillRegistry
from nini.skills.discovery import BUNDLED_DIR
from nini.skills.meta import META_SKILLS
from tests.conftest import SHARED_CORPORA

CORPUS = SHARED_CORPORA / "agent-skills"

pytestmark = pytest.mark.skipif(
    not CORPUS.is_dir(), reason=f"the shared corpus (../shared/corpora) is absent: {CORPUS} does not exist"
)


def corpus_skills() -> list[Path]:
    return sorted(p.parent for p in CORPUS.glob("*/SKILL.md")) if CORPUS.is_dir() else []


def frontmatter_of(path: Path) -> dict:
    """The frontmatter as plain YAML sees it: the text between the first two '---' lines."""
    text = path.read_text(encoding="utf-8")
    match = re.match(r"---\r?\n(.*?)\r?\n---\r?\n", text, re.S)
    assert match, f"{path} has no frontmatter"
    return yaml.safe_load(match.group(1))


@pytest.fixture
def corpus_registry(settings, project_dir) -> SkillRegistry:
    target = project_dir / ".agents" / "skills"
    for folder in corpus_skills():
        shutil.copytree(folder, target / folder.name)
    return SkillRegistry(settings, project_dir)


def test_corpus_is_not_empty():
    assert len(corpus_skills()) >= 10


@pytest.mark.parametrize("folder", corpus_skills(), ids=lambda p: p.name)
def test_every_corpus_skill_loads_as_written(corpus_registry, folder):
    expected = frontmatter_of(folder / "SKILL.md")
    if expected["name"] in META_SKILLS:  # e.g. Anthropic's skill-creator: nini's own is used, this one refused
        assert corpus_registry.get(expected["name"])["metadata"]["source"] == "bundled"
        assert [(p["kind"], p["source"]) for p in corpus_registry.problems if p["name"] == expected["name"]] == [
            ("refused", "agents")
        ]
        return

    record = corpus_registry.get_record(expected["name"], type="markdown").to_dict()

    assert record["name"] == expected["name"]
    assert record["description"] == expected["description"]
    assert record["type"] == "markdown"
    assert record["enabled"] is True
    assert record["location"] == f"{folder.name}/SKILL.md"
    assert record["metadata"]["source"] == "agents"
    for key, value in expected.items():
        if key not in ("name", "description", "category", "metadata"):
            assert record["metadata"][key] == value
    assert not [p for p in corpus_registry.problems if p["severity"] == "error"]


def test_claude_api_long_description_loads_with_a_rule_warning(corpus_registry):
    expected = frontmatter_of(CORPUS / "claude-api" / "SKILL.md")
    assert len(expected["description"]) == 1068  # the published file, as the spec describes it

    record = corpus_registry.get("claude-api")

    assert record["description"] == expected["description"]
    rule = [p for p in corpus_registry.problems if p["name"] == "claude-api" and p["kind"] == "rule"]
    assert rule, corpus_registry.problems
    assert all(p["severity"] == "warning" for p in rule)
    assert any("1068 characters" in p["message"] and "1024" in p["message"] for p in rule)


def test_corpus_skill_creator_is_refused_and_the_bundled_one_stays(corpus_registry):
    """A project that vendors Anthropic's skill-creator does not replace nini's own meta-skill."""
    records = [r for r in corpus_registry.list() if r["name"] == "skill-creator"]

    assert len(records) == 1 and records[0]["metadata"]["source"] == "bundled"
    assert corpus_registry.load_definition("skill-creator").folder == BUNDLED_DIR / "skill-creator"
    (refused,) = [p for p in corpus_registry.problems if p["name"] == "skill-creator"]
    assert (refused["kind"], refused["source"], refused["location"]) == ("refused", "agents", "skill-creator/SKILL.md")
    assert "nini's own meta-skills" in refused["message"]
    assert corpus_registry.get("skill-enhance")["metadata"]["source"] == "bundled"
