"""Specificity in both languages (issue 35, item 7): a column, number, quoted term or name in Chinese
text counts as it does in English, generic advice in either language does not; stage 1 keeps a
model's Chinese candidate that names its data and drops one that names none (COMMON_KNOWLEDGE),
and never judges what the user stated on purpose."""

from __future__ import annotations

import pytest

from nini.errors import NiniError
from nini.memory.experience import ExperienceMemory
from nini.memory.experience.capture import explicit_candidate
from nini.memory.experience.evaluate import stage1
from nini.memory.experience.specific import mentions_specifics
from tests.memory.conftest import candidate

SPECIFIC = [
    ("a column, English", "the revenue column has outliers"),
    ("a column after its name, English", "column revenue is skewed"),
    ("an identifier", "join on region_v2"),
    ("a number, English", "orders above 3 times the median"),
    ("a file", "read sales.csv first"),
    ("a quoted term, English", 'the "net" revenue'),
    ("a proper name, English", "weigh the Adelie penguins separately"),
    ("a Latin column name before 列", "revenue 列有极端值"),
    ("a Chinese name before 字段", "地区字段改了编码"),
    ("a quoted name before 列", "“销售额”列有缺失"),
    ("a name before 这一列", "销售额这一列有极端值"),
    ("a name before 表", "订单表要按日期去重"),
    ("digits with a Chinese unit", "超过 3 倍的订单"),
    ("a percent in Chinese text", "占 5% 的订单是退货"),
    ("full-width digits", "占５％的订单"),
    ("a Chinese numeral with 成", "约三成订单是退货"),
    ("a Chinese numeral with 倍", "增长了两倍"),
    ("百分之", "百分之五的客户"),
    ("「」", "用「新编码表」关联"),
    ("《》", "以《销售口径说明》为准"),
    ("a Latin name in Chinese text", "汇总 revenue 时用中位数"),
    ("a Latin proper name in Chinese text", "Adelie 企鹅的体重单独看"),
]
GENERIC = [
    ("English advice", "normalize features"),
    ("English: the dataset, not a name", "clean the dataset before analysis"),
    ("English: each column", "normalize each column before modelling"),
    ("English: a kind of column", "the numeric column must be scaled"),
    ("English: apostrophes are no quotes", "don't use the mean, it isn't robust"),
    ("Chinese advice", "数据分析前要先清洗数据"),
    ("Chinese: a textbook choice", "异常值较多时用中位数而不是均值"),
    ("Chinese: every column", "对每一列做标准化"),
    ("Chinese: this field", "这个字段要先去重"),
    ("Chinese: a kind of column", "数值列要先标准化"),
    ("Chinese: one column", "选一列作为目标"),
    ("Chinese: 图表 is no table", "图表要有标题"),
    ("Chinese: 代表 is no table", "代表性样本要随机抽取"),
    ("Chinese: 一成 in 统一成本", "统一成本口径后再比较"),
    ("Chinese: an abbreviation is a technique", "用 PCA 前要先标准化"),
]


@pytest.mark.parametrize(("case", "text"), SPECIFIC, ids=[case for case, _ in SPECIFIC])
def test_a_text_about_particular_data_is_specific(case: str, text: str) -> None:
    assert mentions_specifics(text), case


@pytest.mark.parametrize(("case", "text"), GENERIC, ids=[case for case, _ in GENERIC])
def test_generic_advice_is_not(case: str, text: str) -> None:
    assert not mentions_specifics(text), case


@pytest.mark.parametrize(
    ("decision", "alternative", "signal", "kept"),
    [
        ("use the median for revenue", "the mean", "the revenue column has outliers", True),
        ("normalize features", "raw features", "scales differ", False),
        ("汇总 revenue 时用中位数", "均值", "revenue 列有极端值", True),
        ("汇总时用中位数", "均值", "“销售额”列有极端值", True),
        ("按地区字段分组", "按城市分组", "地区字段 2024 年改过编码", True),
        ("剔除退货订单", "保留全部订单", "约三成订单是退货", True),
        ("数据分析前要先清洗数据", "直接分析", "脏数据会影响结论", False),
        ("异常值多时用中位数", "均值", "均值受极端值影响", False),
    ],
)
def test_stage1_judges_a_models_candidate_in_either_language(
    decision: str, alternative: str, signal: str, kept: bool
) -> None:
    verdict = stage1(candidate(decision, (alternative,), signal, source="model"))
    assert (verdict.candidate is not None) is kept
    assert verdict.reason == (None if kept else "COMMON_KNOWLEDGE")


@pytest.mark.parametrize(
    "statement",
    [
        "汇总 revenue 时用中位数而不是均值：revenue 列有极端值",
        "数据分析前要先清洗数据",
        "normalize features instead of raw features, scales differ",
        "the data looks odd",
    ],
)
def test_what_the_user_states_is_kept_not_judged(memory: ExperienceMemory, statement: str) -> None:
    result = memory.capture_statement(statement)
    assert [c.quote for c in result.kept] == [statement] and result.dropped == []


def test_a_statement_not_judged_still_says_what_it_lacks_and_how_general_it_is() -> None:
    generic = stage1(explicit_candidate("数据分析前要先清洗数据")).candidate
    assert generic is not None and (generic.scope, generic.strength) == ("narrow", "hypothesis")
    assert generic.notes == [
        "kept as you stated it, though: no alternative rejected: say what not to do ('... instead of ...')",
        "lowered: general knowledge, kept as a narrow hypothesis",
    ]
    issue = explicit_candidate("汇总 revenue 时用中位数而不是均值：revenue 列有极端值")
    assert (issue.decision, issue.alternatives, issue.signal) == (
        "汇总 revenue 时用中位数",
        ["均值"],
        "revenue 列有极端值",
    )
    assert stage1(issue).candidate is not None and issue.notes == []
    assert stage1(explicit_candidate("   ")).reason == "NO_DECISION"  # a statement of nothing stays refused


def test_an_edit_does_not_turn_a_models_candidate_into_the_users(memory: ExperienceMemory) -> None:
    memory.pending.add(
        [
            candidate(
                "use the median for revenue",
                ("the mean",),
                "the revenue column has outliers",
                source="model",
                level="project",
            )
        ]
    )
    [pending] = memory.pending.load().candidates
    with pytest.raises(NiniError, match="common knowledge"):
        memory.edit(
            pending.id,
            {
                "decision": "normalize features",
                "signal": "scales differ",
                "trigger": "features",
                "title": "normalize",
                "quote": "",
                "source": "explicit",
            },
        )
