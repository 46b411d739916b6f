"""The curator: keep, merge and supersede, with deprecation links, backups, the broader scope and the
higher strength; all or nothing when a step fails; rollback of the last change."""

from __future__ import annotations

import pytest

from nini.agent.experience import model_judge
from nini.config import LLMSettings
from nini.errors import NiniError
from nini.memory.experience import ExperienceMemory
from nini.memory.experience.curate import rollback
from nini.memory.experience.pending import PendingFile
from tests.llm_server import ScriptedLLM, text

pytestmark = pytest.mark.usefixtures("chinese_locale")  # the spec's Chinese words

MEDIAN = "use the median for revenue, the revenue column has outliers"
AGAIN = "use the median for revenue, the revenue column is skewed by extreme values"


def deposit(memory: ExperienceMemory, *statements: str, level: str = "team", strength: str | None = None) -> str:
    ids = []
    for statement in statements:
        kept = memory.capture_statement(statement, level=level, trigger="typical revenue by region").kept
        ids += [c.id for c in kept]
    if strength:
        for candidate_id in ids:
            memory.edit(candidate_id, {"strength": strength, "scope": "broad"})
    return memory.deposit(memory.plan(ids), confirm=True)


def rows(memory: ExperienceMemory, level: str = "team") -> list[tuple[str, str, str, str, str]]:
    return [(r.id, r.status, r.replaces, r.replaced_by, r.strength) for r in memory.libraries[level].read().rows]


def test_a_new_experience_is_kept_with_its_document_and_a_backup(memory: ExperienceMemory) -> None:
    line = deposit(memory, MEDIAN)
    assert line == "已沉淀 1 条经验：EXP-0001（team）。回滚：nini experience rollback team"
    team = memory.libraries["team"]
    assert rows(memory) == [("EXP-0001", "active", "", "", "hypothesis")]
    assert (team.root / "knowledge" / "EXP-0001.md").read_text().startswith("# Use the median for revenue")
    [backup] = (team.root / ".backups").iterdir()
    assert not (backup / "INDEX.md").exists()  # there was no INDEX before
    assert memory.pending.load().candidates == [] and team.read().problems == []


def test_the_same_judgement_again_merges_into_one_and_deprecates_the_old(memory: ExperienceMemory) -> None:
    deposit(memory, MEDIAN, strength="validated")
    line = deposit(memory, AGAIN)
    assert "EXP-0001 已标记为 deprecated（由 EXP-0002 取代）" in line
    assert rows(memory) == [
        ("EXP-0001", "deprecated", "", "EXP-0002", "validated"),
        ("EXP-0002", "active", "EXP-0001", "", "validated"),
    ]
    new = memory.libraries["team"].read().by_id("EXP-0002")
    assert new is not None and new.scope == "broad"  # the broader scope and the higher strength of the two
    assert (memory.libraries["team"].root / "knowledge" / "EXP-0001.md").is_file()  # never deleted
    assert len(list((memory.libraries["team"].root / ".backups").iterdir())) == 2


def test_a_different_decision_for_the_same_situation_supersedes(memory: ExperienceMemory) -> None:
    deposit(memory, MEDIAN)
    ids = [
        c.id
        for c in memory.capture_statement(
            "winsorize revenue at the 99th percentile instead of the median, the revenue column has outliers",
            level="team",
            trigger="typical revenue by region",
        ).kept
    ]
    plan = memory.plan(ids)
    assert [a.kind for a in plan.actions] == ["supersede"] and plan.describe()[0].startswith("[取代]")
    memory.deposit(plan, confirm=True)
    assert rows(memory)[0][:4] == ("EXP-0001", "deprecated", "", "EXP-0002")


def test_unrelated_experience_is_kept_independent(memory: ExperienceMemory) -> None:
    deposit(memory, MEDIAN)
    ids = [
        c.id
        for c in memory.capture_statement(
            "join on region_v2 instead of region_old, region codes changed in 2024", level="team"
        ).kept
    ]
    plan = memory.plan(ids)
    assert [a.kind for a in plan.actions] == ["keep"]
    memory.deposit(plan, confirm=True)
    assert [r[:2] for r in rows(memory)] == [("EXP-0001", "active"), ("EXP-0002", "active")]


def test_two_pending_candidates_saying_the_same_merge_into_one_document(memory: ExperienceMemory) -> None:
    ids = []
    for statement in (MEDIAN, AGAIN):
        ids += [
            c.id for c in memory.capture_statement(statement, level="project", trigger="typical revenue by region").kept
        ]
    plan = memory.plan(ids)
    assert [(a.kind, len(a.candidates)) for a in plan.actions] == [("merge", 2)]
    memory.deposit(plan, confirm=True)
    assert [r[0] for r in rows(memory, "project")] == ["EXP-0001"] and memory.pending.load().candidates == []


def test_nothing_is_written_without_confirmation(memory: ExperienceMemory) -> None:
    ids = [c.id for c in memory.capture_statement(MEDIAN, level="team").kept]
    with pytest.raises(NiniError) as refused:
        memory.deposit(memory.plan(ids), confirm=False)
    assert refused.value.code == "INVALID_ARGUMENT"
    assert not memory.libraries["team"].root.exists() and len(memory.pending.load().candidates) == 1


def test_a_failure_mid_deposit_restores_the_index_and_removes_new_documents(
    memory: ExperienceMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    deposit(memory, MEDIAN)
    team = memory.libraries["team"]
    before = team.index_path.read_text()
    ids = [c.id for c in memory.capture_statement(AGAIN, level="team", trigger="typical revenue by region").kept]
    plan = memory.plan(ids)

    def disk_full(self: PendingFile, ids: list[str]) -> None:  # after the documents and the INDEX were written
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(PendingFile, "remove", disk_full)
    with pytest.raises(NiniError) as failed:
        memory.deposit(plan, confirm=True)
    assert failed.value.code == "NO_SPACE" and "nothing was changed" in failed.value.message  # a full disk (issue 36)
    assert team.index_path.read_text() == before and not (team.root / "knowledge" / "EXP-0002.md").exists()
    monkeypatch.undo()
    assert [c.id for c in memory.pending.load().candidates] == ids  # still pending, to try again


def test_rollback_undoes_the_last_change_and_keeps_its_files_aside(memory: ExperienceMemory) -> None:
    deposit(memory, MEDIAN)
    first = memory.libraries["team"].index_path.read_text()
    deposit(memory, AGAIN)
    assert "rolled back" in rollback(memory.libraries["team"])
    team = memory.libraries["team"]
    assert team.index_path.read_text() == first and not (team.root / "knowledge" / "EXP-0002.md").exists()
    assert list(team.root.glob(".backups/*.rolled-back/created/EXP-0002.md"))


def test_where_the_similarities_are_unsure_a_model_decides(memory: ExperienceMemory, llm_server: ScriptedLLM) -> None:
    deposit(memory, MEDIAN)
    ids = [
        c.id
        for c in memory.capture_statement(
            "report revenue with the trimmed mean instead of the median, the revenue column has outliers",
            level="team",
            trigger="revenue summary by region",
        ).kept
    ]
    assert [a.kind for a in memory.plan(ids).actions] == ["keep"]  # the rules alone: unsure, so kept apart
    settings = memory.settings.model_copy(
        update={
            "llm": LLMSettings(
                providers=[{"name": "local", "kind": "openai", "base_url": llm_server.base_url, "model": "m"}],
                max_retries=0,
            )
        }
    )
    memory.judge = model_judge(settings)
    llm_server.reply(text('{"action": "supersede", "reason": "a newer choice for the same summary"}'))
    [action] = memory.plan(ids).actions
    assert (action.kind, [r.id for r in action.replaces], action.reason) == (
        "supersede",
        ["EXP-0001"],
        "EXP-0001: a newer choice for the same summary",
    )
    sent = llm_server.requests[0]["messages"][-1]["content"]
    assert sent.startswith("OLD: Use the median for revenue") and "NEW: Report revenue with the trimmed mean" in sent
    llm_server.reply(text("I think they are similar."))  # not the JSON asked for: the rules stand
    assert [a.kind for a in memory.plan(ids).actions] == ["keep"]
