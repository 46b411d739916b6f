"""The ``nini remember`` dialogue: all, a subset, bad numbers shown again, a changed target, an edit,
cancel and end of input leave everything pending; only a yes writes."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from nini.memory.experience import ExperienceMemory
from nini.memory.experience.menu import remember_dialogue

pytestmark = pytest.mark.usefixtures("chinese_locale")  # the spec's Chinese words

STATEMENTS = (
    "use the median, the revenue column has outliers",
    "join on region_v2 instead of region_old, region codes changed in 2024",
    "always exclude accounts whose id starts with T_ instead of keeping them, they are test accounts",
)


def scripted(answers: list[str]) -> tuple[Callable[[str], str], list[str]]:
    said: list[str] = []

    def ask(prompt: str) -> str:
        said.append(prompt)
        if not answers:
            raise EOFError
        return answers.pop(0)

    return ask, said


@pytest.fixture
def pending(memory: ExperienceMemory) -> ExperienceMemory:
    for statement in STATEMENTS:
        assert memory.capture_statement(statement).kept
    return memory


def run(memory: ExperienceMemory, answers: list[str]) -> tuple[str | None, list[str]]:
    ask, said = scripted(answers)
    line = remember_dialogue(memory, ask, said.append)
    return line, said


def titles(memory: ExperienceMemory) -> list[str]:
    return [row["title"] for row in memory.entries()]


def test_all_deposits_every_candidate_after_the_plan_is_confirmed(pending: ExperienceMemory) -> None:
    line, said = run(pending, ["a", "y"])
    assert line is not None and line.startswith("已沉淀 3 条经验")
    assert "待沉淀的经验候选（3 条）：" in said and any(s.startswith("     评估：结构 ") for s in said)
    assert "沉淀计划：" in said and len(titles(pending)) == 3 and pending.pending.load().candidates == []


@pytest.mark.parametrize("answer", ["1 3", "1,3", "3，1"])
def test_a_subset_deposits_those_and_leaves_the_rest_pending(pending: ExperienceMemory, answer: str) -> None:
    line, _said = run(pending, [answer, "y"])
    assert line is not None and len(titles(pending)) == 2
    [left] = pending.pending.load().candidates
    assert left.decision == "join on region_v2"


def test_out_of_range_numbers_show_the_list_again(pending: ExperienceMemory) -> None:
    line, said = run(pending, ["4", "0 1", "x", "2", "y"])
    assert said.count("待沉淀的经验候选（3 条）：") == 4
    assert "没有第 4 条（共 3 条）。" in said and "没有第 0 条（共 3 条）。" in said and "没看懂：x" in said
    assert line is not None and len(titles(pending)) == 1


def test_the_target_can_be_changed_and_a_candidate_edited(pending: ExperienceMemory) -> None:
    edits = ["Median, not mean, for revenue", "", "", "", "", ""]  # a new title, every other field kept
    line, said = run(pending, ["t 1", "team", "e 1", *edits, "1", "y"])
    assert line is not None and "（team）" in line
    assert titles(pending) == ["Median, not mean, for revenue"]
    assert any(s.startswith("  1. [team · knowledge] Median, not mean, for revenue") for s in said)


@pytest.mark.parametrize("answers", [["c"], ["a", "n"], ["1"], []])
def test_cancel_a_no_or_the_end_of_input_writes_nothing(pending: ExperienceMemory, answers: list[str]) -> None:
    line, said = run(pending, answers)
    assert line is None and said[-1] == "已取消，候选仍在待沉淀列表中。"
    assert titles(pending) == [] and len(pending.pending.load().candidates) == 3
    assert not pending.libraries["team"].root.exists() and not pending.libraries["project"].root.exists()


def test_with_nothing_pending_it_says_so(memory: ExperienceMemory) -> None:
    assert run(memory, []) == (None, ["没有待沉淀的经验候选。"])
