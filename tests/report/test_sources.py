"""Report sources: a session recorded by real kernels, the store's rollback mark, and notebooks."""

from __future__ import annotations

import base64
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from nini.errors import ErrorCode, NiniError
from nini.history import schema
from nini.history.store import HistoryStore
from nini.report.builder import ReportOptions, build_report
from nini.report.sources import from_notebook, from_session
from tests.conftest import REPO_ROOT, Harness, runtime_harness

SALES = REPO_ROOT / "examples" / "data" / "sales.csv"
EXAMPLE = REPO_ROOT / "examples" / "notebooks" / "sales_analysis.ipynb"
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


# a session recorded by real kernels


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Harness]:
    yield from runtime_harness(tmp_path_factory)


@pytest.fixture(scope="module")
def recorded(harness: Harness) -> dict[str, Any]:
    """Load, summarise, fail, correct (a retry), chart: what an agent's analysis records."""
    session = harness.runtime.create_session(title="区域销售分析")
    runs: dict[str, Any] = {"session": session}
    runs["load"] = harness.call(session, "load_dataset", path=session.upload(SALES), name="sales")
    runs["summary"] = harness.call(
        session,
        "run_code",
        dataset_name="sales",
        save_as="by_region",
        label="revenue-by-region",
        code="output_df = df.groupby('region', as_index=False)['revenue'].sum()\nprint(len(output_df), 'regions')",
    )
    runs["failed"] = harness.call(
        session, "run_code", dataset_name="sales", label="growth", code="growth = df['profit'].sum()"
    )
    runs["fixed"] = harness.call(
        session, "run_code", dataset_name="sales", label="growth", code="result = {'total': float(df['revenue'].sum())}"
    )
    runs["chart"] = harness.call(
        session,
        "run_code",
        dataset_name="sales",
        label="monthly-revenue",
        purpose="visualization",
        code="import matplotlib.pyplot as plt\ndf.groupby('month')['revenue'].sum().plot()\n",
    )
    assert not runs["failed"].success and all(runs[k].success for k in ("load", "summary", "fixed", "chart"))
    return runs


def test_steps_are_the_executions_in_order_with_the_retry(harness: Harness, recorded: dict[str, Any]) -> None:
    session = recorded["session"]
    data = from_session(harness.runtime.store, session.id, session.workspace.root)
    assert data.source == f"session {session.id}" and data.title == "区域销售分析"
    ids = [recorded[k].execution_id for k in ("summary", "failed", "fixed", "chart")]
    assert [s.id for s in data.steps] == ids and [s.order for s in data.steps] == [0, 1, 2, 3]
    summary, failed, fixed, chart = data.steps
    assert [s.status for s in data.steps] == ["succeeded", "failed", "succeeded", "succeeded"]
    assert summary.stdout == "4 regions\n" and summary.save_as == "by_region" and summary.dataset_name == "sales"
    assert failed.error["code"] == "CODE_ERROR" and "profit" in failed.error["message"]
    assert fixed.retry_of == failed.id and fixed.result == {"total": pytest.approx(2857565.0)}
    assert chart.purpose == "visualization" and chart.label == "monthly-revenue"
    assert {s.language for s in data.steps} == {"python"} and {s.tool_name for s in data.steps} == {"run_code"}
    assert not any(s.rolled_back for s in data.steps) and all(
        s.created_at and s.duration_ms is not None for s in data.steps
    )


def test_charts_datasets_and_tool_calls(harness: Harness, recorded: dict[str, Any]) -> None:
    session = recorded["session"]
    data = from_session(harness.runtime.store, session.id, session.workspace.root)
    assert sorted(c.name.rsplit(".", 1)[1] for c in data.charts) == ["png", "svg"]
    assert [c.order for c in data.charts] == [0, 1]
    for chart in data.charts:
        assert chart.path.is_absolute() and chart.path.is_file() and session.workspace.root in chart.path.parents
        assert chart.name.startswith("monthly-revenue") and chart.step_id == recorded["chart"].execution_id
    datasets = {d.name: d for d in data.datasets}
    assert datasets["sales"].rows == 144 and "revenue" in datasets["sales"].columns
    assert datasets["by_region"].rows == 4 and datasets["by_region"].columns == ["region", "revenue"]
    assert [c.name for c in data.tool_calls] == ["load_dataset"] + ["run_code"] * 4
    assert [c.status for c in data.tool_calls].count("failed") == 1
    assert all(c.duration_ms is not None for c in data.tool_calls)


def test_a_dataframe_a_session_step_displayed_is_a_table_finding(harness: Harness) -> None:
    """The DataFrame a run_code step ends with is recorded as the kernel displayed it (text/html),
    and the report shows it as a bounded table under the step's label, not a flattened line."""
    session = harness.runtime.create_session()
    harness.call(session, "load_dataset", path=session.upload(SALES), name="sales")
    shown = harness.call(
        session,
        "run_code",
        dataset_name="sales",
        label="revenue by region",
        code="df.groupby('region')[['revenue']].sum().sort_values('revenue', ascending=False)",
    )
    assert shown.success, shown.error
    data = from_session(harness.runtime.store, session.id, session.workspace.root)
    (step,) = data.steps
    assert step.table is not None and step.table[0] == ("region", "revenue") and len(step.table) == 5
    (finding,) = build_report(data, ReportOptions()).findings
    assert finding.text == "revenue by region" and finding.table == step.table


def test_an_unknown_session_is_not_found(harness: Harness, tmp_path: Path) -> None:
    with pytest.raises(NiniError) as caught:
        from_session(harness.runtime.store, "no-such-session", tmp_path)
    assert caught.value.code is ErrorCode.NOT_FOUND


# the store alone: which artifacts are charts, rollback


@pytest.fixture
def store(tmp_path: Path) -> Iterator[HistoryStore]:
    opened = HistoryStore(f"sqlite:///{tmp_path / 'db' / 'nini.db'}")
    yield opened
    opened.close()


def record_step(
    store: HistoryStore,
    session_id: str,
    workspace: Path,
    files: list[tuple[str, str, str]],
    write: bool = True,
    status: str = "succeeded",
) -> str:
    """One run_code-like call whose execution made ``files`` ([(path, format, kind)])."""
    call = store.start_tool_call(session_id, "run_code", {"code": "..."})
    for path, _, _ in files:
        if write and not path.startswith(".."):
            (workspace / path).parent.mkdir(parents=True, exist_ok=True)
            (workspace / path).write_bytes(PNG)
    execution = {"language": "python", "code": "...", "status": status}
    artifacts = [{"name": Path(p).name, "path": p, "format": f, "kind": k} for p, f, k in files]
    return store.finish_tool_call(call["id"], status=status, execution=execution, artifacts=artifacts)["execution"][
        "id"
    ]


def test_which_artifacts_are_charts(store: HistoryStore, tmp_path: Path) -> None:
    session_id, workspace = store.create_session()["id"], tmp_path / "ws"
    record_step(
        store,
        session_id,
        workspace,
        [
            ("artifacts/fit.png", "png", "chart"),
            ("artifacts/fit.pdf", "pdf", "file"),
            ("artifacts/map.html", "html", "file"),
            ("artifacts/trend.plotly.json", "json", "file"),
            ("artifacts/table.csv", "csv", "file"),
            ("artifacts/config.json", "json", "file"),
            ("artifacts/photo.JPEG", "JPEG", "chart"),
            ("reports/report-1.html", "html", "report"),
        ],
    )
    record_step(store, session_id, workspace, [("artifacts/gone.png", "png", "chart")], write=False)
    record_step(store, session_id, workspace, [("../outside.png", "png", "chart")])
    (tmp_path / "outside.png").write_bytes(PNG)

    data = from_session(store, session_id, workspace)
    assert [c.name for c in data.charts] == ["fit.png", "fit.pdf", "map.html", "trend.plotly.json", "photo.JPEG"]
    assert [c.order for c in data.charts] == [0, 1, 2, 3, 4]
    assert all(c.path == (workspace / "artifacts" / c.name).resolve() for c in data.charts)


def test_rolled_back_steps_are_marked_and_their_charts_left_out(store: HistoryStore, tmp_path: Path) -> None:
    session_id, workspace = store.create_session()["id"], tmp_path / "ws"
    kept = record_step(store, session_id, workspace, [("artifacts/a.png", "png", "chart")])
    undone = record_step(store, session_id, workspace, [("artifacts/b.png", "png", "chart")])

    first = store.mark_rolled_back(undone)
    again = store.mark_rolled_back(undone)
    assert first["rolled_back_at"] and again["rolled_back_at"] == first["rolled_back_at"]  # the first time stays
    assert store.get_execution(kept)["rolled_back_at"] is None

    data = from_session(store, session_id, workspace)
    assert [(s.id, s.rolled_back) for s in data.steps] == [(kept, False), (undone, True)]
    assert [c.name for c in data.charts] == ["a.png"]
    with pytest.raises(NiniError) as caught:
        store.mark_rolled_back("x-missing")
    assert caught.value.code is ErrorCode.NOT_FOUND


def test_a_version_1_database_gains_the_rollback_column(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    old = HistoryStore(f"sqlite:///{path}")
    session_id = old.create_session()["id"]
    execution_id = record_step(old, session_id, tmp_path, [])
    old.close()
    with closing(sqlite3.connect(path)) as raw, raw:  # as the first nini left it
        raw.execute("ALTER TABLE executions DROP COLUMN rolled_back_at")
        raw.execute("UPDATE schema_version SET version = 1")

    store = HistoryStore(f"sqlite:///{path}")
    try:
        assert store.get_execution(execution_id)["rolled_back_at"] is None
        assert store.mark_rolled_back(execution_id)["rolled_back_at"]
    finally:
        store.close()
    with closing(sqlite3.connect(path)) as raw:
        assert [row[0] for row in raw.execute("SELECT version FROM schema_version")] == [schema.SCHEMA_VERSION]


def test_a_version_2_database_gains_the_preference_tables(tmp_path: Path) -> None:
    path = tmp_path / "v2.db"
    HistoryStore(f"sqlite:///{path}").close()
    with closing(sqlite3.connect(path)) as raw, raw:  # as nini left it before preference learning
        raw.execute("DROP TABLE user_preferences")
        raw.execute("DROP TABLE skill_run_feedback")
        raw.execute("DROP INDEX ix_events_turn_id")
        raw.execute("UPDATE schema_version SET version = 2")
    store = HistoryStore(f"sqlite:///{path}")
    try:
        from nini.memory.preferences.store import PreferenceStore

        assert PreferenceStore(store).put_explicit(None, "tone", "formal")["confidence"] == 1.0
    finally:
        store.close()
    with closing(sqlite3.connect(path)) as raw:
        assert [row[0] for row in raw.execute("SELECT version FROM schema_version")] == [schema.SCHEMA_VERSION]
        assert raw.execute("SELECT name FROM sqlite_master WHERE name = 'ix_events_turn_id'").fetchone() == (
            "ix_events_turn_id",
        )


# notebooks


def test_the_example_notebook(tmp_path: Path) -> None:
    before = EXAMPLE.read_bytes()
    data, files = from_notebook(EXAMPLE, files_dir=tmp_path / "files")
    assert files == tmp_path / "files" and EXAMPLE.read_bytes() == before
    assert data.source == "sales_analysis.ipynb" and data.title == "2025 年销售数据分析"

    notebook = nbformat.read(EXAMPLE, as_version=4)
    code_cells = [c for c in notebook.cells if c.cell_type == "code"]
    assert [s.id for s in data.steps] == [c.id for c in code_cells]
    assert [s.code for s in data.steps] == [c.source for c in code_cells]
    (failed,) = [s for s in data.steps if s.status == "failed"]
    assert (
        failed.error["code"] == "CODE_ERROR"
        and failed.error["message"].startswith("KeyError")
        and "profit" in failed.error["message"]
    )
    assert "Traceback" not in str(failed.error) and failed.result is None
    assert data.steps[0].label == "load-data" and data.steps[0].stdout.startswith("144 rows")
    assert data.steps[1].label == "Revenue by region" and data.steps[-1].label == "Total revenue"
    assert {s.language for s in data.steps} == {"python"}
    assert data.steps[-1].result == "2857565.0"  # a short last expression

    assert [c.name for c in data.charts] == ["monthly-revenue-trend.png", "revenue-by-product.png"]
    for chart in data.charts:
        assert chart.path.parent == (tmp_path / "files").resolve() and chart.path.read_bytes().startswith(b"\x89PNG")
        assert chart.step_id in {s.id for s in data.steps if s.status == "succeeded"}
    assert len(data.notes) == 3
    assert data.notes[1].startswith("## 分析方法") and data.notes[2].startswith("## 结论与建议")


def small_notebook(cells: list[Any], language: str = "python") -> Any:
    return new_notebook(cells=cells, metadata={"kernelspec": {"name": "k", "display_name": "K", "language": language}})


def image_output(*mimes: str, output_type: str = "display_data") -> Any:
    payload = {
        "image/png": base64.b64encode(PNG).decode(),
        "image/jpeg": base64.b64encode(b"\xff\xd8jpeg").decode(),
        "image/svg+xml": "<svg xmlns='http://www.w3.org/2000/svg'/>",
        "application/vnd.plotly.v1+json": {"data": [], "layout": {}},
    }
    return new_output(
        output_type,
        data={m: payload[m] for m in mimes},
        **({"execution_count": 1} if output_type == "execute_result" else {}),
    )


@pytest.mark.parametrize(
    ("text", "result"),
    [
        ("42", "42"),
        ("'East'", "'East'"),
        ("<Figure size 640x480 with 1 Axes>", None),
        ("[<matplotlib.lines.Line2D at 0x7f>]", None),
        ("x" * 500, None),
        ("a\nb\nc\nd\ne", None),
    ],
)
def test_only_a_short_last_expression_is_a_result(tmp_path: Path, text: str, result: str | None) -> None:
    cell = new_code_cell(
        "value", execution_count=1, outputs=[new_output("execute_result", data={"text/plain": text}, execution_count=1)]
    )
    path = tmp_path / "nb.ipynb"
    nbformat.write(small_notebook([cell]), path)
    assert from_notebook(path, files_dir=tmp_path / "f")[0].steps[0].result == result


def test_cells_that_never_ran_charts_names_and_language(tmp_path: Path) -> None:
    cells = [
        new_markdown_cell("Intro without a heading"),
        new_code_cell(
            "# label: Fit Plot\nplot()", execution_count=1, outputs=[image_output("image/png", "image/svg+xml")]
        ),
        new_code_cell(
            "# 月度 趋势\nplot(); plot()",
            execution_count=2,
            outputs=[image_output("image/png"), image_output("image/jpeg", output_type="execute_result")],
        ),
        new_code_cell(
            "# Fit plot\nplotly()", execution_count=3, outputs=[image_output("application/vnd.plotly.v1+json")]
        ),
        new_code_cell("cat('never ran')"),
        new_code_cell("   \n"),  # empty: not a step
        new_code_cell(
            "plot()",
            execution_count=5,
            outputs=[
                new_output("stream", name="stdout", text=["a\n", "b\n"]),
                new_output("stream", name="stderr", text="warn\n"),
                image_output("image/png"),
            ],
        ),
    ]
    path = tmp_path / "analysis.ipynb"
    nbformat.write(small_notebook(cells, language="R"), path)
    data, files = from_notebook(path)

    assert files == tmp_path / "analysis_report_files" and data.title == "Analysis"  # no heading: the file's name
    assert data.notes == ["Intro without a heading"]
    assert [s.status for s in data.steps] == ["succeeded", "succeeded", "succeeded", "failed", "succeeded"]
    assert data.steps[3].error["code"] == "CANCELED" and {s.language for s in data.steps} == {"r"}
    assert [s.label for s in data.steps] == ["Fit Plot", "月度 趋势", "Fit plot (2)", None, None]
    assert data.steps[4].stdout == "a\nb\n" and data.steps[4].stderr == "warn\n"
    assert [c.name for c in data.charts] == [
        "fit-plot.png",
        "fit-plot.svg",
        "月度-趋势-1.png",
        "月度-趋势-2.jpg",
        "fit-plot-2.plotly.json",
        "cell-7.png",
    ]
    assert [c.order for c in data.charts] == list(range(6))
    assert (files / "fit-plot.svg").read_text().startswith("<svg") and (files / "fit-plot.png").read_bytes() == PNG
    assert (files / "fit-plot-2.plotly.json").read_text() == '{"data": [], "layout": {}}'


@pytest.mark.parametrize(
    ("source", "label"),
    [
        ("# Revenue by region\nx = 1", "Revenue by region"),
        ("#!/usr/bin/env python\n# -*- coding: utf-8 -*-\n\n# Title\nx = 1", "Title"),
        ("x = 1  # a trailing comment\n# later on\ny = 2", None),
        ("# noqa: E501\nx = 1", None),
        ("%matplotlib inline\n# after a magic", None),
        ("# Title\n# label: fixed-name\nx = 1", "fixed-name"),
        ("#\n#   Spaced   out  \nx", "Spaced   out"),
    ],
)
def test_cell_labels(tmp_path: Path, source: str, label: str | None) -> None:
    path = tmp_path / "nb.ipynb"
    nbformat.write(small_notebook([new_code_cell(source, execution_count=1)]), path)
    assert from_notebook(path, files_dir=tmp_path / "f")[0].steps[0].label == label


@pytest.mark.parametrize(
    ("content", "code"),
    [
        (None, ErrorCode.NOT_FOUND),
        (b"not json at all", ErrorCode.INVALID_ARGUMENT),
        (b'{"cells": 5}', ErrorCode.INVALID_ARGUMENT),
    ],
)
def test_unreadable_notebooks(tmp_path: Path, content: bytes | None, code: ErrorCode) -> None:
    path = tmp_path / "broken.ipynb"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(NiniError) as caught:
        from_notebook(path, files_dir=tmp_path / "files")
    assert caught.value.code is code and "broken.ipynb" in caught.value.message


@pytest.mark.slow
def test_execute_runs_a_copy_next_to_the_data(tmp_path: Path) -> None:
    (tmp_path / "data.csv").write_text("x,y\n1,2\n3,4\n", encoding="utf-8")
    cells = [
        new_markdown_cell("# Executed"),
        new_code_cell(
            "# label: read\nimport pandas as pd\nframe = pd.read_csv('data.csv')\nprint(int(frame['y'].sum()))"
        ),
        new_code_cell("# label: plot\nimport matplotlib.pyplot as plt\nframe.plot(x='x', y='y')\nplt.show()"),
        new_code_cell("1 / 0"),
        new_code_cell("len(frame)"),
    ]
    notebook = tmp_path / "fresh.ipynb"
    nbformat.write(
        new_notebook(
            cells=cells, metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}
        ),
        notebook,
    )
    before = notebook.read_bytes()

    data, files = from_notebook(notebook, execute=True, timeout_s=120, files_dir=tmp_path / "out")

    assert notebook.read_bytes() == before
    assert [s.status for s in data.steps] == ["succeeded", "succeeded", "failed", "succeeded"]
    assert data.steps[0].stdout == "6\n" and data.steps[2].error["message"].startswith("ZeroDivisionError")
    assert data.steps[3].result == "2"  # the cells after the error ran too
    assert [c.name for c in data.charts] == ["plot.png"]
    executed = nbformat.read(files / "fresh.executed.ipynb", as_version=4)
    nbformat.validate(executed)
    assert executed.cells[1].outputs[0]["text"] == "6\n"


@pytest.mark.slow
def test_execute_with_an_unknown_kernel_is_not_found(tmp_path: Path) -> None:
    notebook = tmp_path / "nb.ipynb"
    nbformat.write(new_notebook(cells=[new_code_cell("1")]), notebook)
    with pytest.raises(NiniError) as caught:
        from_notebook(notebook, execute=True, kernel_name="no-such-kernel", files_dir=tmp_path / "out")
    assert caught.value.code is ErrorCode.NOT_FOUND and "no-such-kernel" in caught.value.message


def test_a_huge_text_output_is_read_as_its_head_and_tail(tmp_path: Path) -> None:
    from nbformat.v4 import new_code_cell, new_notebook, new_output

    from nini.report.sources import LONG_OUTPUT_CHARS, from_notebook

    printed = "first line\n" + "x" * (3 * LONG_OUTPUT_CHARS) + "\ngrand total: 42\n"
    cell = new_code_cell(
        "# totals\nprint(everything)", execution_count=1, outputs=[new_output("stream", name="stdout", text=printed)]
    )
    path = tmp_path / "huge.ipynb"
    nbformat.write(new_notebook(cells=[cell]), path)
    data, _files = from_notebook(path, files_dir=tmp_path / "files")
    stdout = data.steps[0].stdout
    assert LONG_OUTPUT_CHARS <= len(stdout) <= LONG_OUTPUT_CHARS + 10
    assert stdout.startswith("first line\n") and stdout.endswith("grand total: 42\n")


# the notebook source (issue 34): cell numbers, sections, empty-source cells, languages, failures,
# the title and the notebook's own conclusion


def write(tmp_path: Path, cells: list[Any], name: str = "nb.ipynb", **metadata: Any) -> Path:
    notebook = new_notebook(
        cells=cells,
        metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}, **metadata},
    )
    nbformat.validate(notebook)
    path = tmp_path / name
    nbformat.write(notebook, path)
    return path


def error_output(ename: str = "NameError", evalue: str = "name 'x' is not defined") -> Any:
    return new_output("error", ename=ename, evalue=evalue, traceback=[f"\x1b[31m{ename}\x1b[0m: {evalue}"])


def test_cells_are_numbered_among_all_cells_under_their_nearest_heading(tmp_path: Path) -> None:
    cells = [
        new_markdown_cell("# Housing study"),  # 1
        new_code_cell("import pandas as pd", execution_count=1),  # 2
        new_markdown_cell("## Get the <b>Data</b>\n\nWe load it."),  # 3
        new_code_cell("", execution_count=2, outputs=[image_output("image/png")]),  # 4: empty source, a chart
        new_code_cell("", execution_count=None),  # 5: empty, nothing shown: no step
        new_markdown_cell("Prose without a heading keeps the section."),  # 6
        new_code_cell("x + 1", execution_count=3, outputs=[error_output()]),  # 7
        new_markdown_cell("### Fit [the model](https://example.org)"),  # 8
        new_code_cell("# fit\nfit()", execution_count=4, outputs=[image_output("image/png")]),  # 9
    ]
    data, files = from_notebook(write(tmp_path, cells), files_dir=tmp_path / "files")
    assert [s.cell for s in data.steps] == [2, 4, 7, 9]
    assert [s.section for s in data.steps] == ["Housing study", "Get the Data", "Get the Data", "Fit the model"]
    empty = data.steps[1]
    assert empty.code == "" and empty.status == "succeeded" and empty.label == "Get the Data"  # the sub-heading above
    assert [c.name for c in data.charts] == ["get-the-data.png", "fit.png"]  # the empty-source cell's chart is kept
    assert data.charts[0].step_id == empty.id and (files / "get-the-data.png").read_bytes() == PNG
    failed = data.steps[2]
    assert failed.status == "failed" and failed.error["code"] == "CODE_ERROR" and failed.error["ename"] == "NameError"
    assert data.execution is None  # nothing ran for the report


def test_a_cell_never_run_fails_only_in_a_notebook_that_ran(tmp_path: Path) -> None:
    ran = [
        new_code_cell("x = 1", execution_count=1),
        new_code_cell("print(x)"),
        new_code_cell("y = 2", execution_count=3),
    ]
    data, _ = from_notebook(write(tmp_path, ran, "ran.ipynb"), files_dir=tmp_path / "f1")
    assert [s.status for s in data.steps] == ["succeeded", "failed", "succeeded"]
    assert data.steps[1].error["code"] == "CANCELED" and data.steps[1].cell == 2
    never = [new_code_cell("x = 1"), new_code_cell("print(x)")]  # saved without outputs (e.g. from jupytext)
    data, _ = from_notebook(write(tmp_path, never, "never.ipynb"), files_dir=tmp_path / "f2")
    assert [s.status for s in data.steps] == ["succeeded", "succeeded"] and not any(s.error for s in data.steps)


def test_r_magic_cells_and_r_kernel_notebooks_are_r_steps(tmp_path: Path) -> None:
    cells = [
        new_code_cell("%load_ext rpy2.ipython", execution_count=1),
        new_code_cell(
            "%%R -i df -o fit\n# Fit a linear model\nfit <- lm(y ~ x, data = df)\nsummary(fit)",
            execution_count=2,
            outputs=[new_output("stream", name="stdout", text="Call:\nlm(formula = y ~ x, data = df)\n")],
        ),
        new_code_cell("print(fit)", execution_count=3),
    ]
    data, _ = from_notebook(write(tmp_path, cells, "magic.ipynb"), files_dir=tmp_path / "f1")
    assert [s.language for s in data.steps] == ["python", "r", "python"]
    assert data.steps[1].label == "Fit a linear model"  # the comment under the cell magic names it
    ir = {"kernelspec": {"name": "ir", "display_name": "R", "language": "R"}, "language_info": {"name": "R"}}
    value = new_output(
        "display_data", data={"text/plain": "[1] 55", "text/html": "55", "text/markdown": "55", "text/latex": "55"}
    )
    path = tmp_path / "irkernel.ipynb"
    nbformat.write(
        new_notebook(cells=[new_code_cell("sum(1:10)", execution_count=1, outputs=[value])], metadata=ir), path
    )
    (step,) = from_notebook(path, files_dir=tmp_path / "f2")[0].steps
    assert step.language == "r" and step.values and step.values[-1].name == "sum(1:10)"
    assert any("55" in (v.text or "") for v in step.values)  # IRkernel's display_data is a value


def test_values_are_the_outputs_in_order_with_the_last_expression_named(tmp_path: Path) -> None:
    frame = (
        "<table><thead><tr><th></th><th>revenue</th></tr></thead>"
        "<tbody><tr><th>East</th><td>948035.0</td></tr></tbody></table>"
    )
    cells = [
        new_code_cell(
            "print('rows:', 3)\nshow(frame)\nscore",
            execution_count=1,
            outputs=[
                new_output("stream", name="stdout", text="rows: 3\n"),
                new_output("display_data", data={"text/html": frame, "text/plain": "      revenue\nEast  948035.0"}),
                new_output("execute_result", data={"text/plain": "0.9421"}, execution_count=1),
            ],
        )
    ]
    (step,) = from_notebook(write(tmp_path, cells), files_dir=tmp_path / "f")[0].steps
    shown, result = step.values
    assert shown.table is not None and shown.table[1][0] == "East" and shown.origin == "display" and shown.name is None
    assert result.text == "0.9421" and result.origin == "result" and result.name == "score"


@pytest.mark.parametrize(
    ("cells", "metadata", "name", "title"),
    [
        ([new_markdown_cell("# Heading")], {"title": "Housing <i>prices</i>"}, "nb", "Housing prices"),
        (
            [nbformat.v4.new_raw_cell('---\ntitle: "Quarto report"\nformat: html\n---'), new_markdown_cell("# Other")],
            {},
            "nb",
            "Quarto report",
        ),
        (
            [
                new_markdown_cell(
                    '# [![Binder](https://mybinder.org/badge.svg)](https://x) Sales <a href="https://x">study</a>'
                )
            ],
            {},
            "nb",
            "Sales study",
        ),
        # level-1 headings after the first code are chapters, not the title
        (
            [
                new_markdown_cell("Intro"),
                new_code_cell("import sys", execution_count=1),
                new_markdown_cell("# Get the Data"),
                new_markdown_cell("# Setup"),
            ],
            {},
            "02_end_to_end_machine_learning_project",
            "02 end to end machine learning project",
        ),
        (
            [
                new_markdown_cell("**Chapter 2 – End-to-end Machine Learning project**"),
                new_markdown_cell("<table><td><a href='x'><img src='badge.svg'/></a></td></table>"),
                new_code_cell("print(1)", execution_count=1),
                new_markdown_cell("# Get the Data"),
            ],
            {},
            "02_end_to_end",
            "Chapter 2 – End-to-end Machine Learning project",
        ),
        (
            [new_markdown_cell("## Only a level-2 heading"), new_code_cell("1", execution_count=1)],
            {},
            "sales-q3",
            "Sales q3",
        ),
        # handson-ml3's chapter 8: the bold line opens it, "# Setup" comes before the first code
        (
            [
                new_markdown_cell("**Chapter 8 – Dimensionality Reduction**"),
                new_markdown_cell("# Setup"),
                new_code_cell("import sys", execution_count=1),
            ],
            {},
            "08_dimensionality_reduction",
            "Chapter 8 – Dimensionality Reduction",
        ),
        (
            [new_markdown_cell("# Setup"), new_code_cell("import sys", execution_count=1)],
            {},
            "churn_model",
            "Churn model",
        ),
    ],
)
def test_the_title(tmp_path: Path, cells: list[Any], metadata: dict, name: str, title: str) -> None:
    data, _ = from_notebook(write(tmp_path, cells, f"{name}.ipynb", **metadata), files_dir=tmp_path / "f")
    assert data.title == title


LONG = " ".join(f"Sentence {n} of the closing remarks." for n in range(120))


@pytest.mark.parametrize(
    ("cells", "expected"),
    [
        # the section's Markdown cells up to the next heading of its level, code cells skipped, HTML stripped
        (
            [
                new_markdown_cell("# Study"),
                new_markdown_cell("## Results\nThe RMSE is 0.5."),
                new_markdown_cell("## Conclusion\n\nThe model <b>works</b>. ![chart](a.png)"),
                new_code_cell("x = 1"),
                new_markdown_cell("- lower prices\n- more data\n\n### Caveats\nSmall sample."),
                new_markdown_cell("## Exercises\nTry it yourself."),
            ],
            "The model works.\n\n- lower prices\n- more data\n\nCaveats\nSmall sample.",
        ),
        (
            [new_markdown_cell("# 分析"), new_markdown_cell("## 五、结论与建议\n华东收入最高。\n\n## 附录\n无")],
            "华东收入最高。",
        ),
        (
            [new_markdown_cell("## Results\nThe RMSE is 0.5 on the test set."), new_code_cell("rmse")],
            "The RMSE is 0.5 on the test set.",
        ),
        # rasbt's chapter 2: a line of prose is not a concluding section
        (
            [
                new_markdown_cell("Check recommended package versions:"),
                new_code_cell("check_packages(d)"),
                new_markdown_cell("# Summary of the data types"),
            ],
            None,
        ),
        ([new_markdown_cell("## Conclusion"), new_markdown_cell("## Appendix\nmore")], None),  # an empty section
        # rasbt's chapter 2 closes with "# Summary", "..." and, past a rule, a note on the next cell
        (
            [
                new_markdown_cell("# Summary"),
                new_markdown_cell("..."),
                new_markdown_cell("--- \n\nReaders may ignore the following cell"),
                new_code_cell("! python convert.py"),
            ],
            None,
        ),
        (
            [new_markdown_cell("## Takeaways\nPrices rise with income.\n\n***\n\nFootnote: data from 1990.")],
            "Prices rise with income.",
        ),
    ],
)
def test_the_notebooks_own_conclusion(tmp_path: Path, cells: list[Any], expected: str | None) -> None:
    data, _ = from_notebook(write(tmp_path, cells), files_dir=tmp_path / "f")
    assert data.conclusion == expected


def test_a_long_conclusion_is_bounded_at_a_sentence(tmp_path: Path) -> None:
    data, _ = from_notebook(write(tmp_path, [new_markdown_cell(f"### Takeaways\n{LONG}")]), files_dir=tmp_path / "f")
    assert data.conclusion is not None and 1_000 < len(data.conclusion) <= 1_500
    assert data.conclusion.startswith("Sentence 0 of") and data.conclusion.endswith("remarks.…")


def test_a_session_steps_values_come_from_its_recorded_outputs(harness: Harness) -> None:
    """A session's DataFrame is a table value the same way a notebook's is; the printed line
    before it is no table, and the table is not counted twice (the row's stdout repeats it)."""
    session = harness.runtime.create_session()
    harness.call(session, "load_dataset", path=session.upload(SALES), name="sales")
    harness.call(
        session,
        "run_code",
        dataset_name="sales",
        code="print('regions:', df['region'].nunique())\ndf.groupby('region')[['revenue']].sum()",
    )
    (step,) = from_session(harness.runtime.store, session.id, session.workspace.root).steps
    (value,) = [v for v in step.values if v.table is not None]
    assert value.origin == "result" and value.table[0] == ("region", "revenue") and len(value.table) == 5
    assert step.cell is None and step.section is None


def test_hostile_markdown_is_read_in_bounded_work(tmp_path: Path) -> None:
    """Lines of unclosed tags, links and emphasis (each pattern once scanned to the end of the
    line from every opening: minutes here) and a heading past 200,000 lines of prose."""
    cells = [
        new_markdown_cell("<h1 " * 20_000),
        new_markdown_cell("# Study " + "<a [x](" * 20_000),
        new_markdown_cell("## Summary\n" + "**ab `cd <!-- " * 20_000),
        new_markdown_cell("a\n" * 200_000 + "# Late"),
    ]
    data, _ = from_notebook(write(tmp_path, cells), files_dir=tmp_path / "f")
    assert data.title.startswith("Study") and len(data.title) <= 120
    assert data.conclusion is not None and len(data.conclusion) <= 1_500
