"""``nini skills create``: new skills that already follow every rule, ready to fill in."""

from __future__ import annotations

import keyword
import os
from pathlib import Path
from typing import Literal

import yaml

from nini.errors import ErrorCode, NiniError
from nini.fsutil import atomic_write_text
from nini.skills.discovery import PYTHON_SKILL_FILE
from nini.skills.markdown import SKILL_FILENAMES, parse_skill_text
from nini.skills.rules import CATEGORIES, CATEGORY_ALIASES, description_problems, name_problems, normalise_category

# The body of a new Markdown skill, by ``ui.language``: its sections to fill in, each with examples.
MARKDOWN_BODY_ZH = """\
# {title}

## 适用场景

- 说明用户在什么情况下会需要这个技能，例如：“按月汇总销售额并比较各地区的增长”。
- 写清输入数据的要求：需要哪些列（如 `date`、`region`、`amount`）、列的类型、大致的数据量。
- 写清不适用的情况，例如数据没有时间列、样本量太小（少于 30 行）或目标变量缺失过多。

## 步骤

1. 加载数据集并检查结构：列名、类型、行数、缺失值比例；把发现的问题记录下来。
2. 清洗数据：统一日期和数值格式，处理缺失值和重复行，并说明每一步删除或修改了多少行。
3. 执行核心分析：写出具体的方法和参数，例如分组字段、聚合函数、使用的统计检验及显著性水平。
4. 生成图表：说明图表类型、横纵轴和分组方式，并为每张图写一句要点说明。
5. 汇总结论：用三到五条要点回答用户的问题，每条都引用上面计算出的具体数字。

## 注意事项

- 先在数据的一个子集上验证代码，再在全量数据上运行。
- 不要修改原始数据文件；清洗后的结果另存为新的数据集。
- 结论只基于实际计算的结果；样本量不足或前提假设不满足时要明确说明。
- 记录关键参数（时间范围、过滤条件、分组方式），让分析可以复现。
"""

MARKDOWN_BODY_EN = """\
# {title}

## When to use

- Say when a user needs this skill, for example: "sum sales by month and compare the growth of each region".
- Say what the data must hold: which columns (such as `date`, `region`, `amount`), their types, roughly how many rows.
- Say when it does not apply, for example data without a date column, too small a sample (under 30 rows) or a target with too many missing values.

## Steps

1. Load the dataset and check its structure: column names, types, row count, share of missing values; note the problems you find.
2. Clean the data: make dates and numbers consistent, handle missing values and duplicate rows, and say how many rows each step removed or changed.
3. Run the core analysis: name the method and its parameters, for example the grouping columns, the aggregation, the statistical test and its significance level.
4. Draw the charts: say the chart type, the axes and the grouping, and give each chart a one-line takeaway.
5. Sum up: answer the user's question in three to five points, each quoting a number computed above.

## Notes

- Check the code on a subset of the data before running it on all of it.
- Never change the original data file; save the cleaned result as a new dataset.
- Base conclusions only on what was computed; say so plainly when the sample is too small or an assumption does not hold.
- Record the key parameters (time range, filters, grouping) so the analysis can be repeated.
"""
MARKDOWN_BODY = {"zh": MARKDOWN_BODY_ZH, "en": MARKDOWN_BODY_EN}

FUNCTION_MODULE = '''\
"""Function skill {name!r}, created by `nini skills create`."""

from __future__ import annotations

from nini.skills import skill


@skill(name={name!r}, category={category!r}, description={description!r})
def {func}(values: list[float], label: str = "value") -> dict:
    """Summarise a list of numbers.

    Replace the body with the skill's real work; keep the type hints, they are its input schema.

    Args:
        values: The numbers to summarise, for example one column of a dataset.
        label: The name used for the values in the result.
    """
    if not values:
        raise ValueError("values must not be empty")
    return {{
        "label": label,
        "count": len(values),
        "mean": sum(values) / len(values),
        "min": min(values),
        "max": max(values),
    }}
'''

FUNCTION_TEST = '''\
"""Tests for function skill {name!r}; run them with pytest."""

from pathlib import Path

import pytest

from nini.errors import NiniError
from nini.skills.function import load_skill_module

SKILL = load_skill_module(Path(__file__).with_name("skill.py"), "skill_under_test_{func}")[0]


def test_summarises_values():
    arguments = SKILL.validate_arguments({{"values": [1, 2, 3, 6]}})
    result = SKILL.func(**arguments)
    assert result == {{"label": "value", "count": 4, "mean": 3.0, "min": 1, "max": 6}}


def test_rejects_arguments_that_do_not_match_the_schema():
    with pytest.raises(NiniError) as caught:
        SKILL.validate_arguments({{"values": "not a list"}})
    assert caught.value.code == "INVALID_ARGUMENT"
'''


def create_skill(
    name: str,
    *,
    type: Literal["markdown", "function"],
    description: str,
    category: str = "other",
    directory: Path,
    language: str = "zh",
) -> list[Path]:
    """Write a new skill folder ``directory/name``; returns the files written. A Markdown skill's
    sections are worded in ``language`` (``ui.language``: zh or en).

    Refuses an invalid name, description or category (INVALID_ARGUMENT) and an existing skill
    (CONFLICT, naming the path): nothing is ever overwritten.
    """
    problems = name_problems(name) + description_problems(description)
    if normalise_category(category)[1] is not None:
        problems.append(
            f"unknown category {category!r}; use one of {', '.join(CATEGORIES)} "
            f"(or an alias: {', '.join(sorted(CATEGORY_ALIASES))})"
        )
    if type not in ("markdown", "function"):
        problems.append(f"type must be 'markdown' or 'function', not {type!r}")
    if problems:
        raise NiniError(ErrorCode.INVALID_ARGUMENT, "; ".join(problems), {"problems": problems})

    folder = Path(directory).expanduser() / name
    if type == "markdown":
        files = _render_markdown(name, description, category, MARKDOWN_BODY.get(language, MARKDOWN_BODY_ZH))
    else:
        files = _render_function(name, description, category)
    # any skill file, not only the ones written: a SKILL.md beside a new skill.py makes two skills
    for filename in (*SKILL_FILENAMES, PYTHON_SKILL_FILE, *files):
        existing = folder / filename
        if os.path.lexists(existing):
            raise NiniError(
                ErrorCode.CONFLICT, f"{existing} already exists; nothing was written", {"path": str(existing)}
            )
    written = []
    for filename, text in files.items():
        atomic_write_text(folder / filename, text)
        written.append(folder / filename)
    return written


def _render_markdown(name: str, description: str, category: str, body: str) -> dict[str, str]:
    title = " ".join(part.capitalize() for part in name.split("-"))
    # PyYAML's plain and single-quoted styles fold some line breaks (U+0085) into spaces, so a
    # description that does not read back is written again double-quoted, where every
    # character is escaped; the file must say exactly what was asked or not be written.
    for style in (None, '"'):
        frontmatter = yaml.safe_dump(
            {"name": name, "description": description, "category": category},
            allow_unicode=True,
            sort_keys=False,
            width=1 << 20,
            default_style=style,
        )
        text = f"---\n{frontmatter}---\n\n{body.format(title=title)}"
        parsed = parse_skill_text(text, name)
        if (parsed.name, parsed.description) == (name, description):
            return {"SKILL.md": text}
    raise NiniError(
        ErrorCode.INVALID_ARGUMENT,
        f"description {description!r} cannot be written as YAML so that it reads back unchanged",
    )


def _render_function(name: str, description: str, category: str) -> dict[str, str]:
    func = name.replace("-", "_")
    if func[0].isdigit() or keyword.iskeyword(func):
        func = f"skill_{func}"
    values = {"name": name, "description": description, "category": category, "func": func}
    return {"skill.py": FUNCTION_MODULE.format(**values), "test_skill.py": FUNCTION_TEST.format(**values)}
