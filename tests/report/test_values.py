"""Findings an analyst would write (issue 17): labelled values, sensible rounding, tables as
tables, object reprs summarised, step names never taken from commented-out code.

The notebooks are real nbformat JSON whose outputs are what pandas and numpy print.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nbformat
import numpy as np
import pandas as pd
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from nini.config import load_settings
from nini.report.builder import ReportOptions, build_report
from nini.report.findings import key_findings
from nini.report.sources import from_notebook
from nini.report.values import format_number, is_bare_value, round_numbers, summarise_reprs

FRAME = pd.DataFrame({"data1": [7, 4, 1], "data2": [17, 3, 2.123456789]})
DATES = pd.date_range("2015-07-01", periods=5, freq="B")
ARRAY = np.array([[2.0, 4.0, 8.0], [1.0, 3.0, 9.0]])


def result(plain: str, html: str | None = None, count: int = 1) -> Any:
    data = {"text/plain": plain, **({"text/html": html} if html else {})}
    return new_output("execute_result", data=data, execution_count=count)


def printed(text: str) -> Any:
    return new_output("stream", name="stdout", text=text)


def notebook_report(tmp_path: Path, cells: list[Any], **options: Any) -> tuple[Any, Any]:
    path = tmp_path / "analysis.ipynb"
    nb = new_notebook(
        cells=cells, metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}
    )
    nbformat.validate(nb)
    nbformat.write(nb, path)
    data, _ = from_notebook(path, files_dir=tmp_path / "files")
    return data, build_report(data, ReportOptions(**options))


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0.5623850983416314, "0.5624"),
        (2857565.0, "2857565"),
        (12.5, "12.5"),
        (3.3333e-8, "3.333e-08"),
        (7, "7"),
        (0.0, "0"),
    ],
)
def test_numbers_keep_four_significant_digits_and_their_whole_part(value: float, text: str) -> None:
    assert format_number(value) == text


def test_long_floats_in_text_are_rounded_and_versions_dates_and_tuples_are_not() -> None:
    assert (
        round_numbers("slope 0.5623850983416314, v1.2.3, 2015-07-01, 12.5, (1035, 6)")
        == "slope 0.5624, v1.2.3, 2015-07-01, 12.5, (1035, 6)"
    )
    assert round_numbers("r2 0.987654", digits=2) == "r2 0.99"


@pytest.mark.parametrize(
    ("line", "bare"),
    [
        ("7", True),
        ("(1035, 6)", True),
        ("0.5623850983416314", True),
        ("[1] 5.5", True),
        ("nan", True),
        ("Model slope: 0.56", False),
        ("rows kept: 95", False),
    ],
)
def test_a_value_without_words_is_bare(line: str, bare: bool) -> None:
    assert is_bare_value(line) is bare


@pytest.mark.parametrize(
    ("value", "summary"),
    [
        (DATES, "DatetimeIndex of 5 dates, 2015-07-01 to 2015-07-07"),
        (pd.date_range("2015-01-01", periods=100), "DatetimeIndex of 100 dates, 2015-01-01 to 2015-04-10"),
        (DATES[0], "2015-07-01"),
        (ARRAY, "array of shape 2×3"),
        (np.arange(2000), "array of shape 2000"),
        (pd.RangeIndex(10), "RangeIndex of 10 values, 0 to 9"),
        (pd.Index(["a", "b"]), "Index of 2 values, a to b"),
    ],
)
def test_object_reprs_are_summarised_in_one_line(value: Any, summary: str) -> None:
    assert summarise_reprs(f"dates: {value!r}") == f"dates: {summary}"


def test_notebook_findings_say_what_they_measure(tmp_path: Path) -> None:
    cells = [
        new_code_cell(
            'print("Model slope:", 0.5623850983416314)\nprint(7)',
            execution_count=1,
            outputs=[printed("Model slope: 0.5623850983416314\n7\n")],
        ),
        new_code_cell("kmeans.score(X)", execution_count=2, outputs=[result("0.94213377", count=2)]),
        new_code_cell("0.5623850983416314", execution_count=3, outputs=[result("0.5623850983416314", count=3)]),
        new_code_cell(
            "dates = pd.date_range('2015-07-01', periods=5, freq='B')\ndates",
            execution_count=4,
            outputs=[result(repr(DATES), count=4)],
        ),
        new_code_cell(
            "np.array([[2, 4, 8], [1, 3, 9]]) * 1.0", execution_count=5, outputs=[result(repr(ARRAY), count=5)]
        ),
        new_code_cell("df.shape", execution_count=6, outputs=[result("(1035, 6)", count=6)]),
        new_code_cell("x = df.shape\nprint(x)", execution_count=7, outputs=[printed("(1035, 6)\n")]),
        new_code_cell("# Stores\nlen(stores)", execution_count=8, outputs=[result("42", count=8)]),
    ]
    data, report = notebook_report(tmp_path, cells)
    assert [finding.text for finding in report.findings] == [  # in the notebook's order
        "Model slope: 0.5624",
        "kmeans.score(X): 0.9421",
        "dates: DatetimeIndex of 5 dates, 2015-07-01 to 2015-07-07",
        "df.shape: (1035, 6)",
        "Stores: 42",
    ]  # the bare 7, the unnamed 0.56…, the printed (1035, 6) and a numpy array's shape say nothing of what they measure
    body = report.markdown.split("## 引用的单元格")[0]  # after it, the cells' code is quoted as written
    assert "DatetimeIndex([" not in report.markdown and "0.5623850983416314" not in body
    assert "- Model slope: 0.5624" in report.markdown


def test_a_dataframe_output_is_a_bounded_markdown_table(tmp_path: Path) -> None:
    wide = pd.DataFrame(np.arange(30 * 20).reshape(30, 20) / 7)
    cells = [
        new_code_cell(
            "df = pd.DataFrame(...)\ndf", execution_count=1, outputs=[result(repr(FRAME), FRAME._repr_html_())]
        ),
        new_code_cell("# Wide frame\nwide", execution_count=2, outputs=[result(repr(wide), wide._repr_html_(), 2)]),
    ]
    data, report = notebook_report(tmp_path, cells, lang="en")
    frame, wide_finding = report.findings
    assert frame.text == "df" and frame.table == (
        ("", "data1", "data2"),
        ("0", "7", "17"),
        ("1", "4", "3"),
        ("2", "1", "2.123"),
    )
    assert "| data1 | data2 |" in report.markdown and "data1 data2\\" not in report.markdown
    assert "- df (cell 1)\n\n  |   | data1 | data2 |\n  | --- | --- | --- |\n  | 0 | 7 | 17 |" in report.markdown
    assert len(wide_finding.table) == 12 and all(
        len(row) == 9 for row in wide_finding.table
    )  # 10 rows, 8 columns, and …
    assert wide_finding.table[-1][0] == "…" and wide_finding.table[0][-1] == "…"
    assert "<table>" in report.html and "<td>2.123</td>" in report.html


def test_a_printed_dataframe_is_a_table_not_a_header_bullet(tmp_path: Path) -> None:
    by_region = pd.DataFrame({"region": ["East", "South"], "revenue": [948035.0, 710935.0], "share": [0.332, 0.249]})
    text = repr(by_region.set_index("region")) + "\nTop region: East (33.2% of revenue)\n"
    cells = [
        new_code_cell("# Revenue by region\nprint(by_region)\nprint(top)", execution_count=1, outputs=[printed(text)])
    ]
    data, report = notebook_report(tmp_path, cells)
    (finding,) = report.findings
    assert finding.text == "Revenue by region: Top region: East (33.2% of revenue)"
    assert finding.table == (("region", "revenue", "share"), ("East", "948035", "0.332"), ("South", "710935", "0.249"))
    summary = report.markdown.split("## 分析摘要")[1].split("##")[0]
    assert "revenue  share" not in summary and "Top region: East" in summary


def test_a_frame_printed_without_its_index_is_a_table_too(tmp_path: Path) -> None:
    by_region = pd.DataFrame({"region": ["East", "Southwest"], "revenue": [948035, 516845], "share": [0.332, 0.181]})
    text = "Top region: East\n" + by_region.to_string(index=False) + "\n"
    cells = [
        new_code_cell(
            "# Revenue by region\nprint(top)\nprint(by_region.to_string(index=False))",
            execution_count=1,
            outputs=[printed(text)],
        )
    ]
    _, report = notebook_report(tmp_path, cells)
    (finding,) = report.findings
    assert finding.text == "Revenue by region: Top region: East"
    assert finding.table == (
        ("region", "revenue", "share"),
        ("East", "948035", "0.332"),
        ("Southwest", "516845", "0.181"),
    )


def test_tables_whose_columns_are_one_space_apart_are_split_where_every_line_has_a_gap() -> None:
    """A full column leaves one space to its neighbour (pandas' ``948035.0  0.332`` after ``East``),
    and R prints its header that way (``    region monthly_trend``): the first data row is no header."""
    from nini.report.values import split_text_tables

    frame = pd.DataFrame({"region": ["East", "Southwest"], "revenue": [948035.0, 516845.0], "share": [0.332, 0.181]})
    rest, (table,) = split_text_tables("Top:\n" + frame.to_string(index=False))
    assert rest == "Top:" and table == (
        ("region", "revenue", "share"),
        ("East", "948035", "0.332"),
        ("Southwest", "516845", "0.181"),
    )
    r_print = "    region monthly_trend\n     South        1684.0\n     North        1503.2\n Southwest         801.8"
    rest, (table,) = split_text_tables("Trend:\n" + r_print + "\ndone")
    assert rest == "Trend:\ndone" and table[0] == ("region", "monthly_trend") and table[1] == ("South", "1684")
    prose = "Top region: East (33.2% of revenue)\nSecond: South\nThird: North\nLast: Southwest"
    assert split_text_tables(prose) == (prose, [])


def test_decimals_come_from_the_options_and_the_setting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cells = [new_code_cell("model.rsquared", execution_count=1, outputs=[result("0.987654321")])]
    data, report = notebook_report(tmp_path, cells, decimals=2)
    assert [f.text for f in report.findings] == ["model.rsquared: 0.99"]
    assert [f.text for f in key_findings(data.steps)] == ["model.rsquared: 0.9877"]
    assert load_settings(tmp_path / "home").report.decimals == 4
    monkeypatch.setenv("NINI_REPORT__DECIMALS", "6")
    assert load_settings(tmp_path / "home").report.decimals == 6


@pytest.mark.parametrize(
    ("source", "label"),
    [
        ("# df.head()\nx = 1", None),
        ("# plt.show()\n# import seaborn as sns\nx = 1", None),
        ("# x = compute()\n# Clean the data\nx = 1", "Clean the data"),
        ("# library(ggplot2)\nx <- 1", None),
        ("# Note: outliers removed\nx = 1", "Note: outliers removed"),
        ("# Title\nx = 1", "Title"),
    ],
)
def test_commented_out_code_never_names_a_step(tmp_path: Path, source: str, label: str | None) -> None:
    data, _ = notebook_report(tmp_path, [new_code_cell(source, execution_count=1)])
    assert data.steps[0].label == label


def test_a_heading_just_above_names_the_next_cell_only(tmp_path: Path) -> None:
    cells = [
        new_markdown_cell("# Report title\n\nIntro."),
        new_code_cell("x = 1", execution_count=1),
        new_markdown_cell("## Load\n\ntext\n\n### Read the CSV"),
        new_code_cell("# df.head()\ny = 2", execution_count=2),
        new_code_cell("z = 3", execution_count=3),
        new_markdown_cell("## Fit"),
        new_code_cell("# Ordinary least squares\nfit()", execution_count=4),
    ]
    data, _ = notebook_report(tmp_path, cells)
    assert [step.label for step in data.steps] == [None, "Read the CSV", None, "Ordinary least squares"]


def test_a_step_without_a_title_names_its_chart_after_the_cell(tmp_path: Path) -> None:
    cells = [
        new_markdown_cell("# Charts"),
        new_code_cell(
            "# df.plot()\nplot()",
            execution_count=1,
            outputs=[new_output("display_data", data={"image/png": "iVBORw0KGgo=", "text/plain": "<Figure>"})],
        ),
    ]
    data, _ = notebook_report(tmp_path, cells)
    assert [chart.name for chart in data.charts] == ["cell-2.png"]


@pytest.mark.slow
def test_an_executed_notebook_reads_like_an_analyst_wrote_it(tmp_path: Path) -> None:
    cells = [
        new_markdown_cell("# Executed analysis"),
        new_code_cell(
            "import numpy as np\nimport pandas as pd\nframe = pd.DataFrame({'data1': [7, 4, 1], 'data2': [17, 3, 2]})\n"
            "frame"
        ),
        new_code_cell("# frame.describe()\nprint('Model slope:', 17 / 30.2)\nprint(len(frame))"),
        new_code_cell("pd.date_range('2015-07-01', periods=5, freq='B')"),
        new_code_cell("np.array([[2, 4, 8], [1, 3, 9]]) / 1.0"),
        new_code_cell("frame.shape"),
    ]
    notebook = tmp_path / "run.ipynb"
    nbformat.write(
        new_notebook(
            cells=cells, metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}
        ),
        notebook,
    )
    data, _ = from_notebook(notebook, execute=True, timeout_s=120, files_dir=tmp_path / "out")
    report = build_report(data, ReportOptions(lang="en"))
    frame, slope, dates, shape = report.findings  # a numpy array is no finding (issue 34)
    assert frame.text == "frame" and frame.table[0] == ("", "data1", "data2") and len(frame.table) == 4
    assert slope.text == "Model slope: 0.5629" and data.steps[1].label is None
    assert (
        dates.text
        == "pd.date_range('2015-07-01', periods=5, freq='B'): DatetimeIndex of 5 dates, 2015-07-01 to 2015-07-07"
    )
    assert shape.text == "frame.shape: (3, 2)"


def test_methods_are_the_headings_and_first_sentences_with_the_libraries(tmp_path: Path) -> None:
    essay = " ".join(f"Sentence {n} explains a detail at length." for n in range(200))  # ~8 KB of prose
    cells = [
        new_markdown_cell(f"# Study\n\nWe model churn. The data has 1035 rows. {essay}"),
        new_markdown_cell(
            "## Cleaning\n\n```python\nignored = True\n```\n\nDrop duplicates first. Then impute. Then more.\n\n"
            "A second paragraph that is left out."
        ),
        new_markdown_cell("## Steps\n\n- one\n- two\n- three\n- four\n- five"),
        new_code_cell(
            "import numpy as np\nimport pandas as pd\nfrom sklearn.cluster import KMeans\nimport os", execution_count=1
        ),
        new_code_cell("%matplotlib inline\nimport matplotlib.pyplot as plt\nimport pandas", execution_count=2),
    ]
    _, report = notebook_report(tmp_path, cells, lang="en")
    methods = report.markdown.split("## Methods\n")[1].split("\n## Summary")[0]
    assert methods.startswith(
        "\nWe model churn. The data has 1035 rows. …\n\n#### Cleaning\nDrop duplicates first. Then impute. …\n\n"
        "#### Steps\n- one\n- two\n- three\n- four\n- …"
    )
    assert "Sentence 5" not in methods and "second paragraph" not in methods and "ignored" not in methods
    assert "The analysis used Python (pandas, numpy, sklearn, matplotlib). Main steps:\n\n1. Steps\n" in methods
    assert len(methods) < 1500


def test_long_notes_are_cut_at_the_bound(tmp_path: Path) -> None:
    cells = [new_markdown_cell(f"## Part {n}\n\n" + "word " * 60 + ".") for n in range(40)]
    _, report = notebook_report(tmp_path, [*cells, new_code_cell("x = 1", execution_count=1)])
    methods = report.markdown.split("## 分析方法\n")[1].split("\n## 分析摘要")[0]
    assert "#### Part 0" in methods and "#### Part 39" not in methods and "\n…\n" in methods
    assert len(methods) < 1700


def test_a_notebook_of_charts_has_a_summary_naming_them(tmp_path: Path) -> None:
    png = {"image/png": "iVBORw0KGgo=", "text/plain": "<Figure size 640x480 with 1 Axes>"}
    cells = [
        new_code_cell(
            "# Revenue trend\nplt.plot(x, y)", execution_count=1, outputs=[new_output("display_data", data=png)]
        ),
        new_code_cell(
            "# Price histogram\nplt.hist(p)", execution_count=2, outputs=[new_output("display_data", data=png)]
        ),
    ]
    _, report = notebook_report(tmp_path, cells)
    summary = report.markdown.split("## 分析摘要\n")[1].split("\n## 图表")[0]
    assert "本次分析没有可汇总的结果" not in summary
    assert summary.strip() == "本次分析生成了 2 张图表：Revenue trend、Price histogram。"
    _, english = notebook_report(tmp_path, cells, lang="en")
    assert "Charts drawn (2): Revenue trend, Price histogram." in english.markdown


def test_a_series_result_is_a_two_column_table_under_its_expression(tmp_path: Path) -> None:
    sales = pd.DataFrame({"region": ["East", "South"], "revenue": [948035.0, 710935.123456]})
    series = sales.groupby("region")["revenue"].sum()
    cells = [
        new_code_cell("sales.groupby('region')['revenue'].sum()", execution_count=1, outputs=[result(repr(series))])
    ]
    _, report = notebook_report(tmp_path, cells)
    (finding,) = report.findings
    assert finding.text == "sales.groupby('region')['revenue'].sum()"
    assert finding.table == (("region", "revenue"), ("East", "948035"), ("South", "710935"))
    assert "dtype" not in report.markdown


def test_a_long_printed_frame_without_html_is_still_a_bounded_table(tmp_path: Path) -> None:
    frame = pd.DataFrame({"x": range(40), "y": [n / 3 for n in range(40)]})
    pd.set_option("display.max_rows", 60)
    try:
        plain = repr(frame)
    finally:
        pd.reset_option("display.max_rows")
    cells = [new_code_cell("frame", execution_count=1, outputs=[result(plain)])]
    _, report = notebook_report(tmp_path, cells)
    (finding,) = report.findings
    assert finding.text == "frame" and finding.table[0] == ("", "x", "y") and finding.table[1] == ("0", "0", "0")
    assert finding.table[2] == ("1", "1", "0.3333") and len(finding.table) == 12 and finding.table[-1][0] == "…"


def test_summary_highlights_are_statements_not_table_names(tmp_path: Path) -> None:
    cells = [
        new_code_cell("df", execution_count=1, outputs=[result(repr(FRAME), FRAME._repr_html_())]),
        new_code_cell("print('Rows kept:', 95)", execution_count=2, outputs=[printed("Rows kept: 95\n")]),
    ]
    _, report = notebook_report(tmp_path, cells)
    summary = report.markdown.split("## 分析摘要\n")[1].split("\n## 图表")[0]
    assert "- Rows kept: 95" in summary and "- df" not in summary
    assert "本次分析得到 2 项主要结果" in summary


# --- Structured values of one output (issue 34, item 2). Outputs are made by running pandas,
# matplotlib and plotly here; the statsmodels summary is a public notebook's saved output.

SALES = pd.DataFrame(
    {
        "region": ["East", "East", "West", "West"],
        "month": [5, 9, 5, 9],
        "year": [2023, 2023, 2024, 2024],
        "revenue": [31.45, 12.0, 7.25, 9.5],
    }
)
PIVOT = SALES.pivot_table(index="region", columns=["year", "month"], values="revenue", aggfunc="sum")
PIVOT_TABLE = (
    ("region", "2023 5", "2023 9", "2024 5", "2024 9"),
    ("East", "31.45", "12.0", "NaN", "NaN"),
    ("West", "NaN", "NaN", "7.25", "9.5"),
)
MONTHLY = SALES.pivot_table(index="month", columns="region", values="revenue")
GROUPED = SALES.groupby(["region", "month"])[["revenue"]].sum()
GROUPED_TABLE = (
    ("region", "month", "revenue"),
    ("East", "5", "31.45"),
    ("East", "9", "12"),
    ("West", "5", "7.25"),
    ("West", "9", "9.50"),
)

# ``sm.OLS(y, x).fit().summary()`` in a public notebook (Boston housing, statsmodels); its text/html, verbatim.
OLS_SUMMARY = (
    '<table class="simpletable">\n<caption>OLS Regression Results</caption>\n'
    "<tr>\n  <th>Dep. Variable:</th>          <td>MEDV</td>       <th>  R-squared:         </th> <td>   0.062</td>\n</tr>\n"
    "<tr>\n  <th>Model:</th>                   <td>OLS</td>       <th>  Adj. R-squared:    </th> <td>   0.061</td>\n</tr>\n"
    "<tr>\n  <th>Method:</th>             <td>Least Squares</td>  <th>  F-statistic:       </th> <td>   33.58</td>\n</tr>\n"
    "<tr>\n  <th>Date:</th>             <td>Sun, 14 May 2023</td> <th>  Prob (F-statistic):</th> <td>1.21e-08</td>\n</tr>\n"
    "<tr>\n  <th>Time:</th>                 <td>03:26:20</td>     <th>  Log-Likelihood:    </th> <td> -1823.9</td>\n</tr>\n"
    "<tr>\n  <th>No. Observations:</th>      <td>   506</td>      <th>  AIC:               </th> <td>   3652.</td>\n</tr>\n"
    "<tr>\n  <th>Df Residuals:</th>          <td>   504</td>      <th>  BIC:               </th> <td>   3660.</td>\n</tr>\n"
    "<tr>\n  <th>Df Model:</th>              <td>     1</td>      <th>                     </th>     <td> </td>   \n</tr>\n"
    "<tr>\n  <th>Covariance Type:</th>      <td>nonrobust</td>    <th>                     </th>     <td> </td>   \n</tr>\n"
    '</table>\n<table class="simpletable">\n'
    "<tr>\n    <td></td>       <th>coef</th>     <th>std err</th>      <th>t</th>      <th>P>|t|</th>  <th>[0.025</th>    "
    "<th>0.975]</th>  \n</tr>\n"
    "<tr>\n  <th>const</th> <td>   18.3901</td> <td>    0.817</td> <td>   22.499</td> <td> 0.000</td> <td>   16.784</td> "
    "<td>   19.996</td>\n</tr>\n"
    "<tr>\n  <th>DIS</th>   <td>    1.0916</td> <td>    0.188</td> <td>    5.795</td> <td> 0.000</td> <td>    0.722</td> "
    "<td>    1.462</td>\n</tr>\n"
    '</table>\n<table class="simpletable">\n'
    "<tr>\n  <th>Omnibus:</th>       <td>139.779</td> <th>  Durbin-Watson:     </th> <td>   0.570</td>\n</tr>\n"
    "<tr>\n  <th>Prob(Omnibus):</th> <td> 0.000</td>  <th>  Jarque-Bera (JB):  </th> <td> 305.104</td>\n</tr>\n"
    "<tr>\n  <th>Skew:</th>          <td> 1.466</td>  <th>  Prob(JB):          </th> <td>5.59e-67</td>\n</tr>\n"
    "<tr>\n  <th>Kurtosis:</th>      <td> 5.424</td>  <th>  Cond. No.          </th> <td>    9.32</td>\n</tr>\n"
    "</table><br/><br/>Notes:<br/>[1] Standard Errors assume that the covariance matrix of the errors is correctly specified."
)


def shown(data: dict[str, Any], kind: str = "execute_result") -> list[Any]:
    from nini.report.values import output_values

    return output_values({"output_type": kind, "data": data, "metadata": {}}, "python")


@pytest.mark.parametrize(
    ("frame", "table"),
    [
        (PIVOT, PIVOT_TABLE),  # MultiIndex columns: their levels joined; the index name's own row folded in
        (GROUPED, GROUPED_TABLE),  # a MultiIndex of rows: its rowspan filled down
        (MONTHLY, (("month", "East", "West"), ("5", "31.45", "7.25"), ("9", "12", "9.50"))),
    ],
)
def test_a_dataframe_is_a_table_from_its_html_and_its_printed_text(frame: pd.DataFrame, table: Any) -> None:
    from nini.report.values import printed_values

    (value,) = shown({"text/html": frame._repr_html_(), "text/plain": repr(frame)})
    assert value.table == table and value.origin == "result" and value.text is None
    rest, (printed,) = printed_values(f"Revenue by month:\n{frame}\ndone")
    assert rest == "Revenue by month:\ndone"  # the header row is the table's, never a text line
    assert printed.table[0] == table[0] and printed.table[1][0] == table[1][0] and len(printed.table) == len(table)
    assert printed.origin == "printed"


def test_the_monthly_table_keeps_its_header_not_a_line_of_run_together_cells() -> None:
    """Regression: a printed pivot became ``| | 5 | 9 31.45 |``."""
    from nini.report.values import split_text_tables

    rest, (table,) = split_text_tables(repr(PIVOT))
    assert table == PIVOT_TABLE and rest == ""


def test_a_grouped_series_printed_is_a_table_with_its_index_names() -> None:
    from nini.report.values import printed_values

    series = SALES.groupby(["region", "month"]).revenue.sum()
    rest, (value,) = printed_values(repr(series))
    assert value.table == GROUPED_TABLE and rest == ""


def test_the_table_schema_json_is_a_table_like_the_html() -> None:
    import json

    (value,) = shown(
        {
            "application/vnd.dataresource+json": json.loads(MONTHLY.to_json(orient="table")),
            "text/html": MONTHLY._repr_html_(),
            "text/plain": repr(MONTHLY),
        }
    )
    assert value.table == (("month", "East", "West"), ("5", "31.45", "7.25"), ("9", "12.0", "9.5"))
    (unnamed,) = shown({"application/vnd.dataresource+json": FRAME.to_json(orient="table")})
    assert unnamed.table == (("", "data1", "data2"), ("0", "7", "17.0"), ("1", "4", "3.0"), ("2", "1", "2.123"))


def test_html_cells_keep_their_words_entities_and_nested_tags() -> None:
    frame = pd.DataFrame({"note": ["A & B <ok>", "x"], "link": ["<b>bold</b>", "y"]})
    (value,) = shown({"text/html": frame.to_html(escape=True)})
    assert value.table[1] == ("0", "A & B <ok>", "<b>bold</b>")
    (nested,) = shown({"text/html": frame.to_html(escape=False)})
    assert nested.table[1] == ("0", "A & B", "bold")  # the tags are markup: their words stay


def test_a_long_or_wide_frame_is_bounded_with_an_elision_marker() -> None:
    wide = pd.DataFrame(np.arange(40 * 30).reshape(40, 30))
    (value,) = shown({"text/html": wide.to_html()})
    assert len(value.table) == 12 and all(len(row) == 9 for row in value.table)
    assert value.table[-1] == ("…",) * 9 and value.table[0][-1] == "…" and value.table[0][:3] == ("", "0", "1")
    pd.set_option("display.max_rows", 6)
    try:
        truncated = wide._repr_html_()
    finally:
        pd.reset_option("display.max_rows")
    (cut,) = shown({"text/html": truncated})
    assert ("…",) * 9 in cut.table  # pandas' own "..." row


def test_hostile_outputs_cost_little_and_stay_bounded() -> None:
    """A 25 MB table and a 10,000-column one are cut before they are parsed."""
    from nini.report.values import printed_values

    rows = "".join(f"<tr><th>{n}</th><td>{n * 0.5}</td><td>x</td></tr>" for n in range(600_000))
    (long,) = shown(
        {"text/html": f"<table><thead><tr><th></th><th>a</th><th>b</th></tr></thead><tbody>{rows}</tbody></table>"}
    )
    assert len(long.table) == 12 and long.table[-1] == ("…", "…", "…")
    header = "".join(f"<th>c{n}</th>" for n in range(10_000))
    cells = "".join(f"<td>{n}</td>" for n in range(10_000))
    (wide,) = shown(
        {
            "text/html": f"<table><thead><tr><th></th>{header}</tr></thead><tbody><tr><th>0</th>{cells}</tr></tbody></table>"
        }
    )
    assert wide.table[0][:3] == ("", "c0", "c1") and len(wide.table[0]) == 9 and wide.table[0][-1] == "…"
    log = "epoch 1 loss 0.5\n" * 1_500_000 + "Test RMSE: 0.42\n"  # 25 MB of stdout
    rest, values = printed_values(log)
    assert rest.endswith("Test RMSE: 0.42") and len(rest) < 250_000 and values == []


def test_a_statsmodels_summary_gives_named_statistics_and_its_coefficient_table() -> None:
    values = shown({"text/html": OLS_SUMMARY, "text/plain": '<class \'statsmodels.iolib.summary.Summary\'>\n"""'})
    named = {value.name: value.text for value in values if value.name}
    assert (
        named["R-squared"] == "0.062"
        and named["Prob (F-statistic)"] == "1.21e-08"
        and named["No. Observations"] == "506"
    )
    assert "" not in named and named["Df Model"] == "1"
    (coefficients,) = [value.table for value in values if value.table]
    assert coefficients == (
        ("", "coef", "std err", "t", "P>|t|", "[0.025", "0.975]"),
        ("const", "18.39", "0.817", "22.5", "0", "16.78", "20"),
        ("DIS", "1.092", "0.188", "5.795", "0", "0.722", "1.462"),
    )


def test_object_reprs_and_charts_give_no_value() -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import plotly.graph_objects as go
    import plotly.io as pio

    figure, axes = plt.subplots()
    reprs = [
        repr(figure),
        repr(axes.plot([1, 2], label="revenue")),
        repr(axes.plot([])[:0]),
        repr(axes.set_title("Revenue")),
        repr(axes),
        repr(axes.legend()),
        "alt.Chart(...)",
        "LinearRegression()",
    ]
    plt.close(figure)
    assert [shown({"text/plain": text}) for text in reprs] == [[]] * len(reprs)
    chart = go.Figure(go.Bar(x=[1, 2], y=[3, 4]), layout_title_text="Revenue")
    pio.renderers.default = "plotly_mimetype+notebook_connected"
    try:
        bundle = chart._repr_mimebundle_()
    finally:
        pio.renderers.default = "plotly_mimetype+notebook"
    assert "application/vnd.plotly.v1+json" in bundle and shown(bundle, "display_data") == []
    assert shown({"text/html": bundle["text/html"]}, "display_data") == []  # a script, no words
    styling = {
        "text/html": "<style>.rendered_html td {font-size: 14px}</style>",
        "text/plain": "<IPython.core.display.HTML object>",
    }
    assert shown(styling, "display_data") == []
    # PyMC's progress bar (fastprogress), verbatim from Bayesian Methods for Hackers chapter 1
    progress = {
        "text/html": [
            "\n",
            "    <div>\n",
            "      <progress value='60000' class='' max='60000' style='width:300px; "
            "height:20px; vertical-align: middle;'></progress>\n",
            "      100.00% [60000/60000 00:05&lt;00:00 Sampling 4 chains, 0 divergences]\n",
            "    </div>\n",
            "    ",
        ],
        "text/plain": ["<IPython.core.display.HTML object>"],
    }
    assert shown(progress, "display_data") == []


def test_a_numpy_array_is_never_a_table() -> None:
    assert [v.text for v in shown({"text/plain": repr(np.array([0.81, 0.85, 0.9]))})] == ["0.81, 0.85, 0.9"]
    assert [(v.text, v.table) for v in shown({"text/plain": repr(np.arange(12.0).reshape(3, 4))})] == [
        ("array of shape 3×4", None)
    ]


def test_short_markdown_and_html_displays_are_text_values() -> None:
    markdown = {
        "text/markdown": "**Test RMSE**: 0.52 ([details](#fit))",
        "text/plain": "<IPython.core.display.Markdown object>",
    }
    assert [(v.text, v.origin) for v in shown(markdown, "display_data")] == [("Test RMSE: 0.52 (details)", "display")]
    assert [v.text for v in shown({"text/html": "<h3>Accuracy: <b>0.93</b></h3>"}, "display_data")] == [
        "Accuracy: 0.93"
    ]
    assert [v.text for v in shown({"text/plain": "0.94213377"})] == ["0.94213377"]
    assert shown({"text/plain": "x" * 400}) == []  # a dump, not a value


def test_a_title_with_a_gap_above_a_frame_stays_text_and_an_aligned_log_is_no_table() -> None:
    from nini.report.values import printed_values

    rest, (value,) = printed_values("Results:  by region\n" + repr(MONTHLY))
    assert rest == "Results:  by region" and value.table[0] == ("month", "East", "West")
    log = "epoch 1  loss: 0.5  acc: 0.9\n" * 5_000
    assert printed_values(log) == (log.rstrip("\n"), [])


@pytest.mark.parametrize(
    "output",
    [
        {"output_type": "display_data", "data": "not a bundle"},
        {"output_type": "display_data", "data": {"text/html": {"a": 1}, "text/plain": 7}},
        {
            "output_type": "display_data",
            "data": {"application/vnd.dataresource+json": {"schema": {"fields": "x"}, "data": 3}},
        },
        {"output_type": "display_data", "data": {"application/vnd.dataresource+json": "{not json"}},
        {"output_type": "stream", "name": "stdout", "text": "x"},
        {"data": {"text/plain": "42"}},
    ],
)
def test_a_malformed_output_gives_no_value_and_no_error(output: dict[str, Any]) -> None:
    from nini.report.values import output_values

    assert output_values(output, "python") == []


def test_html_end_tags_may_be_left_out_as_html_allows() -> None:
    (value,) = shown({"text/html": "<table><tr><th>a<th>b<tr><td>1<td>2"})
    assert value.table == (("a", "b"), ("1", "2"))


def test_a_styled_frame_is_its_table_and_its_css_is_never_a_value() -> None:
    """``df.style`` renders the same DataFrame with CSS (a highlighted maximum, a gradient): its values
    are the frame's, so it is read as a table; its ``<style>`` block is never text."""
    styled = pd.DataFrame({"a": [1.5, 2.0], "b": [3, 4]}).style.highlight_max()._repr_html_()
    assert "background-color" in styled
    assert [v.table for v in shown({"text/html": styled}, "display_data")] == [
        (("", "a", "b"), ("0", "1.5", "3"), ("1", "2", "4"))
    ]
