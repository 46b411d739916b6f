"""``%nini remember`` in a real kernel: a statement becomes a pending candidate, and the dialogue
asks through the notebook's stdin, writing only on the user's yes."""

from __future__ import annotations

import pytest

from tests.jupyter_ext.test_magic_ask import AskKernel, kernel  # noqa: F401 - the fixture
from tests.llm_server import ScriptedLLM, text

pytestmark = pytest.mark.usefixtures("chinese_locale")  # the spec's Chinese words: auto under a zh locale


@pytest.mark.slow
def test_a_statement_is_pending_and_the_dialogue_deposits_it_on_yes(kernel: AskKernel) -> None:  # noqa: F811
    out = kernel.ask('%nini remember "use the median, the revenue column has outliers"')
    assert out["errors"] == [] and out["stdout"] == "已暂存 1 条经验候选（用于 nini remember 阶段沉淀选择）\n"
    again = kernel.ask('%nini remember "use the median, the revenue column has outliers"')
    assert again["stdout"] == "nini: it is already pending\n"  # the user's statement is not judged, nor kept twice

    refused = kernel.ask("%nini remember", answers=["1", "n"])
    assert "已取消，候选仍在待沉淀列表中。" in refused["stdout"]
    assert not (kernel.cwd / ".nini" / "experience" / "project" / "INDEX.md").exists()

    kept = kernel.ask("%nini remember", answers=["1", "y"])
    assert "待沉淀的经验候选（1 条）：" in kept["stdout"] and "已沉淀 1 条经验：EXP-0001（project）" in kept["stdout"]
    assert (
        "| Use the median, the revenue column has outliers |"
        in (kernel.cwd / ".nini" / "experience" / "project" / "INDEX.md").read_text()
    )


@pytest.mark.slow
def test_feedback_on_the_last_answer_is_learned_from(kernel: AskKernel, llm_server: ScriptedLLM) -> None:  # noqa: F811
    assert "no answer to judge yet" in kernel.ask("%nini feedback reject")["stderr"]
    llm_server.reply(text("Revenue doubled!"))
    assert kernel.ask("%%nini\nHow is revenue?")["errors"] == []
    judged = kernel.ask("%nini feedback reject --signal no_exclamation")
    assert judged["stdout"].startswith("nini: feedback 1 recorded (reject on t")
    assert "  punctuation.no_exclamation: 0.00 -> 0.30 (new from signal no_exclamation)" in judged["stdout"]
    assert "nini: INVALID_ARGUMENT" not in judged["stderr"]
    assert "NOT_FOUND" in kernel.ask("%nini feedback accept --run tnothing")["stderr"]
