"""INDEX.md: written and read back, checked value by value, files checked without following links,
and a hand-edited broken INDEX reported and never rewritten."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from nini.errors import NiniError
from nini.memory.experience import ExperienceMemory
from nini.memory.experience.index import Library, ParsedIndex, parse_index, render_index
from nini.memory.experience.model import COLUMNS, IndexRow


def row(file: str = "knowledge/EXP-0001.md", **values: str) -> IndexRow:
    cells = dict(
        tag="#analysis",
        type="knowledge",
        title="Use the median | p50",
        trigger="revenue by region",
        surface_signal="outliers",
        hidden_risk="-",
        status="active",
        scope="narrow",
        strength="hypothesis",
        replaces="",
        replaced_by="",
        file=file,
    )
    return IndexRow(**{**cells, **values})


def test_rows_round_trip_with_pipes_and_the_preamble_kept() -> None:
    parsed = ParsedIndex(
        rows=[row(), row("knowledge/EXP-0002.md", replaces="EXP-0001")], preamble="# Ours\n\nHand-written notes.\n"
    )
    text = render_index(parsed, "team")
    assert text.splitlines()[4] == "| " + " | ".join(COLUMNS) + " |"
    again = parse_index(text)
    assert (
        again.problems == []
        and again.rows == parsed.rows
        and again.preamble.startswith("# Ours\n\nHand-written notes.")
    )
    assert again.rows[0].title == "Use the median | p50" and again.rows[1].id == "EXP-0002"


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        (lambda t: t.replace("| Tag | Type |", "| Type | Tag |"), "header is Type | Tag"),
        (lambda t: t.replace("| active |", "| maybe |"), "Status is 'maybe', not one of active|deprecated"),
        (lambda t: t.replace("| narrow |", "| huge |"), "Scope is 'huge'"),
        (lambda t: t.replace("| hypothesis |", "| certain |"), "Strength is 'certain'"),
        (lambda t: t.replace("| knowledge | Use", "| rumour | Use"), "Type is 'rumour'"),
        (lambda t: t.replace(" | knowledge/EXP-0001.md |", " | notes.md |"), "is not named EXP-<number>.md"),
        (
            lambda t: t.replace("|  |  | knowledge", "| EXP-0009 |  | knowledge"),
            "Replaces names EXP-0009, which the INDEX does not have",
        ),
        (lambda t: t.replace("| hypothesis |  |  |", "| hypothesis | |"), "11 cells, 12 expected"),
    ],
)
def test_a_broken_index_is_reported_value_by_value(edit: object, problem: str) -> None:
    text = edit(render_index(ParsedIndex(rows=[row()]), "team"))  # type: ignore[operator]
    parsed = parse_index(text)
    assert any(problem in found for found in parsed.problems), parsed.problems


def test_files_are_checked_without_following_links(tmp_path: Path) -> None:
    library = Library("team", tmp_path / "team")
    (library.root / "knowledge").mkdir(parents=True)
    (library.root / "knowledge" / "EXP-0001.md").write_text("# one\n")
    secret = tmp_path / "secret.md"
    secret.write_text("secret")
    os.symlink(secret, library.root / "knowledge" / "EXP-0002.md")
    rows = [
        row(),
        row("knowledge/EXP-0002.md"),
        row("knowledge/EXP-0003.md"),
        row("../EXP-0004.md"),
        row("EXP-0005.md"),
    ]
    library.index_path.write_text(render_index(ParsedIndex(rows=rows), "team"))
    problems = library.read().problems
    assert len(problems) == 4 and "goes through a link" in problems[0] and "EXP-0003.md is missing" in problems[1]
    assert "not a path inside the library" in problems[2] and "not in standards/ or knowledge/" in problems[3]
    assert library.read_document("knowledge/EXP-0001.md") == "# one\n"
    with pytest.raises(NiniError) as link:
        library.read_document("knowledge/EXP-0002.md")
    assert link.value.code == "INVALID_ARGUMENT" and "secret" not in link.value.message


def test_a_hand_edited_broken_index_is_never_rewritten(memory: ExperienceMemory) -> None:
    team = memory.libraries["team"]
    team.root.mkdir(parents=True)
    broken = render_index(ParsedIndex(rows=[row()]), "team").replace("| active |", "| actve |")
    team.index_path.write_text(broken)
    assert memory.validate()["team"] and memory.validate()["project"] == []
    result = memory.capture_statement("use the median, the revenue column has outliers", level="team")
    plan = memory.plan([result.kept[0].id])
    with pytest.raises(NiniError) as refused:
        memory.deposit(plan, confirm=True)
    assert refused.value.code == "CONFLICT" and "nini experience validate" in refused.value.message
    assert team.index_path.read_text() == broken and memory.pending.load().candidates  # untouched, still pending
