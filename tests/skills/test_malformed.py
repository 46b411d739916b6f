"""Malformed SKILL.md files are skipped and reported; they never stop the other skills loading."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
from pathlib import Path

import pytest

from nini.skills import SkillRegistry
from nini.skills.markdown import NO_FRONTMATTER, validate_skill_file
from tests.conftest import REPO_ROOT, skill_md, write_skill
from tests.timeouts import timeout

GOOD = {"good-one": "Summarise a table by group.", "good-two": "Plot a time series."}

FIVE_MB = 5 * 1024 * 1024
_padded = skill_md("broken", "Huge file.", body="# Huge\n\n")
HUGE = (_padded + "x" * (FIVE_MB - len(_padded) - 1) + "\n").encode()

# an alias chain that doubles at each level: 2**22 values if expanded (over the limit, yet a
# regression that expands it still finishes in seconds)
ALIAS_BOMB = (
    "---\nname: broken\ndescription: Alias bomb.\na0: &a0 [x, x]\n"
    + "".join(f"a{i}: &a{i} [*a{i - 1}, *a{i - 1}]\n" for i in range(1, 22))
    + "---\n"
)

MALFORMED = [
    pytest.param(b"---\nname: broken\ndescription: [unclosed\n---\nBody\n", ["not valid YAML"], id="bad-yaml"),
    pytest.param(b"---\nname: broken\ndescription: x: y: z\n---\n", ["not valid YAML"], id="bad-yaml-colons"),
    pytest.param(
        b"---\nname: broken\ndescription: Never closed.\n\n# Title\nBody\n",
        ["never closed"],
        id="frontmatter-never-closed",
    ),
    pytest.param(
        b"---\n- name\n- description\n---\nBody\n", ["must be a YAML mapping", "list"], id="frontmatter-is-a-list"
    ),
    pytest.param(b"---\njust a sentence\n---\nBody\n", ["must be a YAML mapping", "str"], id="frontmatter-is-a-scalar"),
    pytest.param(
        b"---\nname:\n  first: a\n  second: b\ndescription: Ok.\n---\n",
        ["name must be text", "dict"],
        id="name-is-a-mapping",
    ),
    pytest.param(
        b"---\nname: broken\ndescription:\n  - one\n  - two\n---\n",
        ["description must be text", "list"],
        id="description-is-a-list",
    ),
    pytest.param(
        b"---\nname: broken\n---\n# Title\n\n## Steps\n\n### More\n",
        ["no description"],
        id="no-description-only-headings",
    ),
    pytest.param(b"# Title\n\n## Section\n", ["no description"], id="no-frontmatter-only-headings"),
    pytest.param(b"", ["no description"], id="empty-file"),
    pytest.param(
        b"---\nname: broken\ndescription: caf\xe9 \xff\xfe\n---\n", ["not valid UTF-8", "byte"], id="invalid-utf8"
    ),
    pytest.param(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00", ["binary", "NUL"], id="binary-nul-bytes"),
    pytest.param(HUGE, ["5.0 MiB", "under 1 MiB"], id="five-mb-file"),
    pytest.param(
        b"---\nname: broken\ndescription: Self.\nloop: &a [1, *a]\n---\n",
        ["contains itself"],
        id="yaml-alias-to-itself",
    ),
    pytest.param(ALIAS_BOMB.encode(), ["more than", "values"], id="yaml-alias-bomb"),
    pytest.param(
        b"---\nname: broken\ndescription: Deep.\nx: " + b"[" * 200 + b"]" * 200 + b"\n---\n",
        ["nests deeper than"],
        id="deeply-nested-frontmatter",
    ),
    pytest.param(
        b"---\nname: broken\ndescription: Tag.\nx: !!python/object/apply:os.system [echo hi]\n---\n",
        ["not valid YAML"],
        id="python-yaml-tag",
    ),
]


def write_good_skills(root: Path) -> None:
    for name, description in GOOD.items():
        write_skill(root, name, skill_md(name, description))


def assert_only_broken_skipped(registry: SkillRegistry, message_parts: list[str]) -> dict:
    records = registry.list()
    by_name = {r["name"]: r for r in records}
    for name, description in GOOD.items():
        assert by_name[name]["description"] == description
        assert by_name[name]["enabled"] is True
    assert "broken" not in by_name
    assert not [r for r in records if r["metadata"].get("source") == "project" and r["location"] == "broken/SKILL.md"]
    # bundled skills load too: one broken file costs nothing else
    assert {"data-quality-check", "skill-creator", "skill-enhance"} <= by_name.keys()

    errors = [p for p in registry.problems if p["severity"] == "error"]
    assert len(errors) == 1, registry.problems
    error = errors[0]
    assert error["kind"] == "invalid"
    assert error["source"] == "project"
    assert error["location"] == "broken/SKILL.md"
    for part in message_parts:
        assert part in error["message"], error["message"]
    json.dumps(registry.problems)  # what `nini skills doctor --json` would print
    return error


@pytest.mark.timeout(timeout(60))
@pytest.mark.parametrize(("content", "message_parts"), MALFORMED)
def test_malformed_file_is_skipped_and_reported(settings, project_dir, content, message_parts):
    root = project_dir / ".nini" / "skills"
    write_good_skills(root)
    write_skill(root, "broken", content)

    registry = SkillRegistry(settings, project_dir)

    assert_only_broken_skipped(registry, message_parts)


def test_unreadable_file_is_skipped_and_reported(settings, project_dir, monkeypatch):
    root = project_dir / ".nini" / "skills"
    write_good_skills(root)
    broken = write_skill(root, "broken", skill_md("broken", "Cannot be read."))
    real_read_bytes = pathlib.Path.read_bytes

    def read_bytes(self: pathlib.Path) -> bytes:
        if os.path.realpath(self) == os.path.realpath(broken):
            raise PermissionError(13, "Permission denied", str(self))
        return real_read_bytes(self)

    monkeypatch.setattr(pathlib.Path, "read_bytes", read_bytes)

    registry = SkillRegistry(settings, project_dir)

    error = assert_only_broken_skipped(registry, ["cannot be read", "Permission denied"])
    assert str(project_dir) not in error["message"]  # no absolute path leaks into the doctor list


def test_fixed_file_loads_on_refresh_and_its_error_goes(settings, project_dir):
    root = project_dir / ".nini" / "skills"
    write_good_skills(root)
    broken = write_skill(root, "broken", b"---\nname: broken\ndescription: [unclosed\n---\n")
    registry = SkillRegistry(settings, project_dir)
    assert_only_broken_skipped(registry, ["not valid YAML"])

    broken.write_text(skill_md("broken", "Now it is fine."), encoding="utf-8")  # a different size
    assert registry.refresh() is True

    assert registry.get("broken")["description"] == "Now it is fine."
    assert not [p for p in registry.problems if p["severity"] == "error"]


def test_deep_nesting_does_not_crash_the_process(settings, project_dir):
    """libyaml's C composer overflows the stack on deep nesting; run the load in a child so a
    regression shows as a failed test, not as a dead pytest."""
    root = project_dir / ".nini" / "skills"
    write_good_skills(root)
    write_skill(
        root, "broken", b"---\nname: broken\ndescription: Deep.\nx: " + b"[" * 60_000 + b"]" * 60_000 + b"\n---\n"
    )
    code = (
        "import json, sys\n"
        "from pathlib import Path\n"
        "from nini.config import load_settings\n"
        "from nini.skills import SkillRegistry\n"
        "r = SkillRegistry(load_settings(), Path(sys.argv[1]))\n"
        "print(json.dumps({'names': [x['name'] for x in r.list()], 'problems': r.problems}))\n"
    )
    env = {**os.environ, "NINI_HOME": str(settings.home)}
    done = subprocess.run(
        [sys.executable, "-c", code, str(project_dir)],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO_ROOT,
        timeout=timeout(60),
    )

    assert done.returncode == 0, f"exit {done.returncode}: {done.stderr[-2000:]}"
    result = json.loads(done.stdout)
    assert {"good-one", "good-two"} <= set(result["names"])
    assert "broken" not in result["names"]
    errors = [p for p in result["problems"] if p["severity"] == "error"]
    assert [(p["location"], "nests deeper than" in p["message"]) for p in errors] == [("broken/SKILL.md", True)]


@pytest.mark.parametrize(
    "content",
    [
        pytest.param(
            b"\xef\xbb\xbf---\r\nname: crlf-skill\r\ndescription: Loads with BOM and CRLF.\r\n"
            b"category: Stats\r\nlicense: MIT\r\n---\r\n\r\n# Title\r\n\r\nBody.\r\n",
            id="frontmatter",
        ),
        pytest.param(
            b"\xef\xbb\xbf# Title\r\n\r\n## Part\r\n\r\nLoads with BOM and CRLF.\r\nNext line.\r\n", id="body-fallback"
        ),
    ],
)
def test_bom_and_crlf_load_correctly(settings, project_dir, content):
    root = project_dir / ".nini" / "skills"
    write_skill(root, "crlf-skill", content)

    registry = SkillRegistry(settings, project_dir)

    record = registry.get("crlf-skill")
    assert record["name"] == "crlf-skill"
    assert record["description"] == "Loads with BOM and CRLF."
    assert record["location"] == "crlf-skill/SKILL.md"
    problems = [p["message"] for p in registry.problems if p["source"] == "project"]
    if b"category" in content:
        assert record["category"] == "statistics"
        assert record["metadata"]["license"] == "MIT"
        assert problems == []
    else:  # loads as validate says it does, with the same warning (issue 22: they agree)
        assert len(problems) == 1 and problems[0].endswith(NO_FRONTMATTER)
        assert validate_skill_file(root / "crlf-skill") == ([], [NO_FRONTMATTER])
