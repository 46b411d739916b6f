"""Matching: relevant active rows only, a stage bonus that never makes a match alone, at most five,
ties broken by Strength, Scope, then team standards; nothing at all when nothing is close."""

from __future__ import annotations

from pathlib import Path

from nini.memory.experience.index import Library, ParsedIndex, render_index
from nini.memory.experience.match import Matcher, prompt_section
from nini.memory.experience.model import IndexRow
from nini.memory.experience.similarity import Similarity

REVENUE = "Use the median for revenue: the revenue column has outliers"


def row(number: int, title: str = REVENUE, *, stage: str = "analysis", **values: str) -> IndexRow:
    cells = dict(
        tag=f"#{stage}",
        type="knowledge",
        title=title,
        trigger="typical revenue by region",
        surface_signal="revenue column",
        hidden_risk="a few large orders inflate the mean",
        status="active",
        scope="narrow",
        strength="hypothesis",
        replaces="",
        replaced_by="",
        file=f"knowledge/EXP-{number:04d}.md",
    )
    return IndexRow(**{**cells, **values})


def libraries(tmp_path: Path, team: list[IndexRow], project: list[IndexRow] | None = None) -> dict[str, Library]:
    found = {"team": Library("team", tmp_path / "team"), "project": Library("project", tmp_path / "project")}
    for level, rows in (("team", team), ("project", project or [])):
        found[level].root.mkdir(parents=True, exist_ok=True)
        if level == "project":
            rows = [IndexRow(**{**r.__dict__, "file": r.file.split("/")[-1]}) for r in rows]
        found[level].index_path.write_text(render_index(ParsedIndex(rows=rows), level))
    return found


def test_a_related_request_is_warned_and_an_unrelated_one_gets_nothing(tmp_path: Path) -> None:
    libs = libraries(tmp_path, [row(1)])
    matcher = Matcher()
    [match] = matcher.match(
        libs, "What is the typical revenue by region?", "analysis", datasets="sales: region, revenue"
    )
    assert match.line() == f"⚠️ 高风险：{REVENUE}（参考 team/knowledge/EXP-0001.md）"
    assert match.line("en") == f"⚠️ High risk: {REVENUE} (see team/knowledge/EXP-0001.md)"
    assert matcher.match(libs, "Plot the temperature trend", "analysis", datasets="weather: date, temp") == []
    assert matcher.match(libs, "画出气温的变化趋势", "analysis") == [] and prompt_section([]) is None


def test_the_stage_bonus_counts_only_for_relevant_rows(tmp_path: Path) -> None:
    libs = libraries(tmp_path, [row(1, stage="analysis"), row(2, stage="report"), row(3, stage="review")])
    scores = {m.row.id: m.score for m in Matcher().match(libs, "typical revenue", "analysis", threshold=0)}
    assert (
        round(scores["EXP-0001"] - scores["EXP-0003"], 6) == 0.2
        and round(scores["EXP-0002"] - scores["EXP-0003"], 6) == 0.1
    )
    # a bonus never lifts an unrelated row over the threshold on its own
    assert Matcher().match(libs, "train a classifier on iris", "analysis") == []


def test_at_most_five_and_ties_by_strength_scope_then_team_standards(tmp_path: Path) -> None:
    team = [
        row(1),
        row(2, strength="enforced"),
        row(3, strength="validated", scope="broad"),
        row(4, strength="validated"),
        row(5, type="standard"),
        row(6, scope="medium"),
        row(7, status="deprecated", strength="enforced"),
    ]
    project = [row(8, type="standard")]
    matches = Matcher().match(libraries(tmp_path, team, project), "typical revenue by region", "analysis")
    assert [(m.level, m.row.id) for m in matches] == [
        ("team", "EXP-0002"),
        ("team", "EXP-0003"),
        ("team", "EXP-0004"),
        ("team", "EXP-0006"),
        ("team", "EXP-0005"),
    ]
    assert len({round(m.score, 3) for m in matches}) == 1  # all ties: the order is the tie-break


def test_deprecated_rows_are_never_returned_and_init_reads_the_team_only(tmp_path: Path) -> None:
    libs = libraries(
        tmp_path,
        [row(1, status="deprecated", replaced_by="EXP-0002"), row(2, "Revenue medians: see region", stage="init")],
        [row(3)],
    )
    matcher = Matcher()
    assert {(m.level, m.row.id) for m in matcher.match(libs, "typical revenue by region", "analysis")} == {
        ("project", "EXP-0003"),
        ("team", "EXP-0002"),
    }
    assert [m.row.id for m in matcher.match(libs, "typical revenue by region", "init")] == ["EXP-0002"]


def test_a_warm_library_is_parsed_once_and_a_change_is_seen(tmp_path: Path) -> None:
    libs = libraries(tmp_path, [row(1)])
    matcher = Matcher(Similarity(use_embeddings=False))
    first = matcher.index(libs["team"])
    assert matcher.index(libs["team"]) is first
    libs["team"].index_path.write_text(render_index(ParsedIndex(rows=[row(1, status="deprecated")]), "team"))
    assert (
        matcher.index(libs["team"]).active() == []
        and matcher.match(libs, "typical revenue by region", "analysis") == []
    )


def test_without_embeddings_the_lexical_floor_still_matches(tmp_path: Path) -> None:
    libs = libraries(tmp_path, [row(1)])
    lexical = Matcher(Similarity(use_embeddings=False))
    assert [m.row.id for m in lexical.match(libs, "typical revenue by region in sales", "analysis")] == ["EXP-0001"]
    assert lexical.match(libs, "Plot the temperature trend", "analysis") == []
