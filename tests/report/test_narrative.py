"""The summary and conclusions a model writes from the findings, kept only when its numbers are the findings'.

The model is the scripted OpenAI-compatible server (tests/llm_server.py) over real HTTP, reached
through the real router with purpose ``report``.
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from nini.report.narrative import allowed_numbers, check_reply, unknown_number
from tests.conftest import runtime_harness, scripted_model_settings, write_settings
from tests.llm_server import error, text
from tests.test_cli import _restore_nini_logger, fail, ok  # noqa: F401 - autouse fixture shared with test_cli
from tests.test_cli_sessions import nini  # noqa: F401 - the in-process `nini` fixture

pytestmark = pytest.mark.usefixtures("chinese_locale")  # written for the spec's Chinese report: auto under a zh locale

MARK_ZH = "本节由模型 m 根据关键发现撰写"
DETERMINISTIC_SUMMARY = "本次分析得到"


@pytest.mark.parametrize(
    ("written", "known"),
    [
        ("0.5624", True),
        ("0.56", True),
        ("0.6", True),
        ("56.2%", True),
        ("56%", True),
        ("2,857,565", True),
        ("12%", True),  # a fact that is itself a percentage figure
        ("0.57", False),
        ("12.5", False),
        ("2024", False),
        ("57%", False),
        ("0.5", False),
    ],
)
def test_a_number_is_known_when_a_fact_states_it_or_rounds_to_it(written: str, known: bool) -> None:
    facts = allowed_numbers("- r2: 0.5624\n- total: 2857565\n- share: 12")
    assert (unknown_number(f"结果为 {written}。", facts) is None) is known


def test_names_and_list_numbers_are_not_numbers() -> None:
    facts = allowed_numbers("- slope: 2.5")
    assert unknown_number("1. R2 与 PM2.5 的斜率为 2.5\n2. x1 列没有用到", facts) is None
    assert unknown_number("共 7 个地区，斜率 2.5", facts) == "7"


def test_a_reply_that_is_not_the_json_asked_for_is_refused_whole() -> None:
    narrative = check_reply("The slope is 2.5.", "m", {Decimal("2.5")})
    assert narrative.sections == {} and {why.kind for why in narrative.refused.values()} == {"not_json"}
    fenced = check_reply('```json\n{"summary": "斜率为 2.5。", "conclusions": ""}\n```', "m", {Decimal("2.5")})
    assert fenced.sections == {"summary": "斜率为 2.5。"} and fenced.refused["conclusions"].kind == "empty"


@pytest.fixture
def notebook(tmp_path: Path) -> Path:
    """A notebook with two labelled findings (a printed slope, a last expression), its outputs saved;
    its code holds a note the model must never see (it is shown findings, not code)."""
    nb = new_notebook(
        cells=[
            new_markdown_cell("# 销售回归\n\n用线性回归看价格与销量的关系。"),
            new_code_cell(
                "# fit the model\nnote = 'internal-note-XYZ'\nprint('Model slope:', slope)",
                outputs=[new_output("stream", name="stdout", text="Model slope: 2.487123\n")],
            ),
            new_code_cell(
                "r2 = model.score(X, y)\nr2",
                outputs=[new_output("execute_result", data={"text/plain": "0.8123456"}, execution_count=2)],
            ),
        ]
    )
    nb.metadata["kernelspec"] = {"name": "python3", "language": "python", "display_name": "Python 3"}
    path = tmp_path / "fit.ipynb"
    nbformat.write(nb, path)
    return path


def _report(nini, notebook: Path, *args: str) -> tuple[str, object]:  # noqa: F811 - the fixture
    result = nini("report", str(notebook), "--format", "md", "--with-observability", *args)
    (path,) = ok(result).split()
    return Path(path).read_text(encoding="utf-8"), result


def _section(markdown: str, heading: str) -> str:
    return markdown.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]


def test_a_reply_whose_numbers_match_the_findings_is_used_and_marked(nini, notebook, llm_server, nini_home) -> None:  # noqa: F811
    write_settings(nini_home, scripted_model_settings(llm_server))
    llm_server.reply(
        text(
            json.dumps(
                {
                    "summary": "价格每增加一个单位，销量约增加 2.49；模型解释了 81.2% 的变化。",
                    "conclusions": "- 斜率 2.487 为正，可据此调整定价。\n- r2 为 0.8123，仍需在新数据上验证。",
                }
            )
        )
    )
    markdown, _ = _report(nini, notebook)

    summary, conclusions = _section(markdown, "分析摘要"), _section(markdown, "结论与建议")
    assert "约增加 2.49" in summary and MARK_ZH in summary and DETERMINISTIC_SUMMARY not in summary
    assert "可据此调整定价" in conclusions and MARK_ZH in conclusions
    appendix = _section(markdown, "分析统计（系统观测）") + markdown.split("### 模型撰写的部分", 1)[1]
    assert "分析摘要：由模型 m 撰写" in appendix and "结论与建议：由模型 m 撰写" in appendix
    # the model was asked for purpose report's route with the findings, rounded, and nothing else
    (request,) = llm_server.requests
    prompt = "\n".join(message["content"] for message in request["messages"])
    assert "Model slope: 2.487" in prompt and "r2: 0.8123" in prompt
    assert "internal-note-XYZ" not in prompt and "model.score" not in prompt and "2.487123" not in prompt


def test_a_reply_that_adds_a_number_is_refused_and_the_appendix_says_why(nini, notebook, llm_server, nini_home) -> None:  # noqa: F811
    write_settings(nini_home, scripted_model_settings(llm_server))
    llm_server.reply(
        text(json.dumps({"summary": "斜率为 2.49，预计明年销量增长 12.5%。", "conclusions": "- 斜率 2.487 为正。"}))
    )
    markdown, result = _report(nini, notebook)

    summary = _section(markdown, "分析摘要")
    assert "12.5" not in summary and DETERMINISTIC_SUMMARY in summary and "模型" not in summary
    assert "斜率 2.487 为正" in _section(markdown, "结论与建议")  # the other section stands on its own
    assert "分析摘要：未采用模型 m 的文本（数字 12\\.5% 不在关键发现中），使用自动生成的文本" in markdown
    assert "the model's summary was not used (unknown_number: 12.5%)" in result.stderr


def test_the_authors_conclusions_stay_theirs(nini, notebook, llm_server, nini_home) -> None:  # noqa: F811
    nb = nbformat.read(notebook, as_version=4)
    nb.cells.append(new_markdown_cell("## 结论\n\n价格弹性为正，作者认为应谨慎提价。"))
    nbformat.write(nb, notebook)
    write_settings(nini_home, scripted_model_settings(llm_server))
    llm_server.reply(text(json.dumps({"summary": "斜率约为 2.49。", "conclusions": "- 斜率 2.487 为正，应大幅提价。"})))
    markdown, _ = _report(nini, notebook)

    assert "约为 2.49" in _section(markdown, "分析摘要")
    conclusions = _section(markdown, "结论与建议")
    assert "作者认为应谨慎提价" in conclusions and "应大幅提价" not in conclusions and "模型" not in conclusions


def test_a_failing_model_leaves_the_generated_text_and_says_so(nini, notebook, llm_server, nini_home) -> None:  # noqa: F811
    write_settings(nini_home, scripted_model_settings(llm_server))
    llm_server.reply(error(500))
    markdown, result = _report(nini, notebook, "--lang", "en")

    assert "The analysis produced 2 main results" in _section(markdown, "Summary")
    assert "Summary: the text of the model was not used (the model call failed: UPSTREAM_ERROR)" in markdown
    assert "(model_failed: UPSTREAM_ERROR)" in result.stderr


def test_no_model_configured_or_switched_off_asks_nothing(nini, notebook, llm_server, nini_home) -> None:  # noqa: F811
    markdown, _ = _report(nini, notebook)  # no provider at all
    assert DETERMINISTIC_SUMMARY in _section(markdown, "分析摘要") and "模型撰写的部分" not in markdown
    write_settings(nini_home, scripted_model_settings(llm_server))
    markdown, _ = _report(nini, notebook, "--no-model-text")
    assert DETERMINISTIC_SUMMARY in _section(markdown, "分析摘要") and llm_server.requests == []


def record_growth(session, growth: float):  # noqa: ANN001, ANN201
    """A succeeded run_code step whose result is ``{'growth': growth}`` labelled South; the session's store."""
    store, code = session.store, f"result = {{'growth': {growth}}}"
    call = store.start_tool_call(session.id, "run_code", {"code": code})
    store.finish_tool_call(
        call["id"],
        status="succeeded",
        execution={
            "language": "python",
            "code": code,
            "status": "succeeded",
            "label": "South",
            "result": {"growth": growth},
        },
    )
    return store


def test_generate_report_skill_uses_the_report_model(llm_server, tmp_path_factory) -> None:
    """The agent's skill (and the sidebar's POST .../report) asks the model too, for the sections
    it was given no text for, and says in its result which the model wrote."""
    harness_iter = runtime_harness(tmp_path_factory, scripted_model_settings(llm_server))
    harness = next(harness_iter)
    try:
        session = harness.session("narrated")
        record_growth(session, 0.583)
        llm_server.reply(text(json.dumps({"summary": "南区增长 58.3%。", "conclusions": "- 南区增长最快。"})))

        result = harness.call(session, "generate_report", conclusions="由用户撰写的结论。", formats=["md"])
        assert result.success, result.error
        assert result.result["model_sections"] == {"written": ["summary"], "refused": {}}
        markdown = session.workspace.fs.read_bytes(result.result["paths"]["md"]).decode()
        assert "南区增长 58.3%" in markdown and "由用户撰写的结论。" in markdown and "南区增长最快" not in markdown
    finally:
        next(harness_iter, None)


def test_a_report_follows_the_users_preferences(llm_server, tmp_path_factory) -> None:
    """The preferences selected for reports reach the model's prompt, report.decimals sets the digits
    of the findings, and the report's run records what it was given."""
    harness_iter = runtime_harness(tmp_path_factory, scripted_model_settings(llm_server))
    harness = next(harness_iter)
    try:
        session = harness.session("preferred")
        store = record_growth(session, 0.58349)
        table = harness.runtime.preferences.table
        table.put_explicit(None, "report.decimals", 2)
        table.put_explicit(None, "punctuation.no_exclamation", True)
        llm_server.reply(text(json.dumps({"summary": "南区增长 0.58。", "conclusions": "- 南区增长最快。"})))

        result = harness.call(session, "generate_report", formats=["md"])
        assert result.success, result.error
        system = llm_server.requests[-1]["messages"][0]["content"]
        assert "- 规则: 不使用感叹号（confidence=1.00, source=explicit）" in system and "数字保留两位小数" in system
        markdown = session.workspace.fs.read_bytes(result.result["paths"]["md"]).decode()
        assert "0.58" in markdown and "0.5835" not in markdown  # two digits, not the setting's four
        [given] = store.list_events(session.id, 0, ["preferences_injected"])
        assert given["data"]["skill"] == "generate_report" and set(given["data"]["keys"]) == {
            "report.decimals",
            "punctuation.no_exclamation",
        }
    finally:
        next(harness_iter, None)


def test_a_model_summary_follows_the_failed_cells_it_cannot_write_away(nini, notebook, llm_server, nini_home) -> None:  # noqa: F811
    """The model writes the summary's prose; the sentence on failed cells is the report's, first."""
    nb = nbformat.read(notebook, as_version=4)
    nb.cells.append(
        new_code_cell(
            "model.predict(X_test)",
            execution_count=3,
            outputs=[
                new_output(
                    "error", ename="ValueError", evalue="X has 3 features", traceback=["ValueError: X has 3 features"]
                )
            ],
        )
    )
    nbformat.write(nb, notebook)
    write_settings(nini_home, scripted_model_settings(llm_server))
    llm_server.reply(
        text(json.dumps({"summary": "斜率约为 2.49，所有结果完整。", "conclusions": "- 斜率 2.487 为正。"}))
    )
    markdown, _ = _report(nini, notebook)

    summary = _section(markdown, "分析摘要")
    assert summary.startswith("\n3 个单元格中有 1 个失败，结果不完整。失败的单元格：单元格 4（ValueError）。")
    assert summary.index("单元格 4") < summary.index("斜率约为 2.49") and MARK_ZH in summary
