"""``nini report``: a recorded session or a notebook, in-process through typer's runner."""

from __future__ import annotations

import base64
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from nini.config import Settings
from nini.execution.workspace import Workspace
from nini.history.store import HistoryStore
from nini.report.builder import TEXT
from tests.conftest import REPO_ROOT
from tests.test_cli import _restore_nini_logger, fail, ok  # noqa: F401 - autouse fixture shared with test_cli
from tests.test_cli_sessions import nini  # noqa: F401 - the in-process `nini` fixture

EXAMPLE = REPO_ROOT / "examples" / "notebooks" / "sales_analysis.ipynb"
SALES = REPO_ROOT / "examples" / "data" / "sales.csv"
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)
pytestmark = pytest.mark.usefixtures("chinese_locale")  # written for the spec's Chinese report: auto under a zh locale

ZH_SECTIONS = ["## 数据集概览", "## 分析方法", "## 分析摘要", "## 图表", "## 关键发现", "## 结论与建议"]
APPENDIX = "## 分析统计（系统观测）"


@pytest.fixture
def session_id(settings: Settings) -> str:
    """A session recorded the way run_code records one: a dataset, a failure, its correction, a chart."""
    store = HistoryStore.from_settings(settings)
    try:
        store.create_session("cli-report", title="区域销售")
        workspace = Workspace.for_session(settings.sessions_dir, "cli-report").ensure()
        (workspace.artifacts_dir / "trend.png").write_bytes(PNG)

        def run(code: str, status: str = "succeeded", artifacts: tuple = (), **execution: object) -> str:
            call = store.start_tool_call("cli-report", "run_code", {"code": code})
            row = {"language": "python", "code": code, "status": status, "label": "growth", **execution}
            done = store.finish_tool_call(call["id"], status=status, execution=row, artifacts=list(artifacts))
            return done["execution"]["id"]

        call = store.start_tool_call("cli-report", "load_dataset", {"path": "uploads/sales.csv"})
        store.finish_tool_call(
            call["id"],
            status="succeeded",
            datasets=[
                {
                    "name": "sales",
                    "path": "datasets/sales.parquet",
                    "rows": 144,
                    "columns": ["month", "region", "revenue"],
                }
            ],
        )
        failed = run(
            "df['profit']",
            "failed",
            error={"code": "CODE_ERROR", "message": "KeyError: 'profit'"},
            stderr="Traceback (most recent call last):\nKeyError: 'profit'",
        )
        run(
            "result = {'growth': 0.583}",
            result={"South growth": "+58.3%"},
            retry_of=failed,
            artifacts=[{"name": "trend.png", "path": "artifacts/trend.png", "format": "png", "kind": "chart"}],
        )
    finally:
        store.close()
    return "cli-report"


def workspace_of(session_id: str) -> Path:
    from nini.config import load_settings

    return Workspace.for_session(load_settings().sessions_dir, session_id).root


def written(stdout: str) -> list[Path]:
    paths = [Path(line) for line in stdout.splitlines() if line.strip()]
    assert paths and all(p.is_absolute() and p.is_file() for p in paths), stdout
    return paths


def test_a_session_report_in_markdown_and_html(nini, session_id: str, tmp_path: Path) -> None:
    md, html = written(ok(nini("report", "--session", session_id, "--out", str(tmp_path / "out"))))
    assert (md.suffix, html.suffix) == (".md", ".html") and md.stem == html.stem and md.parent == tmp_path / "out"
    text = md.read_text(encoding="utf-8")
    assert text.startswith("# 区域销售\n")
    positions = [text.index(heading + "\n") for heading in ZH_SECTIONS]
    assert positions == sorted(positions)
    assert "South growth" in text and "KeyError" not in text  # the failed step was corrected
    link = text.split("![trend](")[1].split(")")[0]
    # written away from the workspace, the report links to its own copy, never back into NINI_HOME
    assert link == f"{session_id}-charts/trend.png" and str(workspace_of(session_id)) not in text
    assert (md.parent / link).read_bytes() == (workspace_of(session_id) / "artifacts" / "trend.png").read_bytes()
    assert APPENDIX not in text and "run_code" not in text
    page = html.read_text(encoding="utf-8")
    assert "data:image/png;base64," in page and "<h2>关键发现</h2>" in page


def test_observability_is_an_appendix_after_an_identical_body(nini, session_id: str, tmp_path: Path) -> None:
    (plain,) = written(ok(nini("report", "--session", session_id, "--out", str(tmp_path), "--format", "md")))
    (full,) = written(
        ok(nini("report", "--session", session_id, "--out", str(tmp_path), "--format", "md", "--with-observability"))
    )
    assert plain != full
    body, appendix = full.read_text(encoding="utf-8").split(APPENDIX)
    assert body.rstrip("\n") == plain.read_text(encoding="utf-8").rstrip("\n")
    assert "run_code" in appendix and "load_dataset" in appendix and "144" in appendix


def test_english_headings_and_a_title(nini, session_id: str, tmp_path: Path) -> None:
    (md,) = written(
        ok(
            nini(
                "report",
                "--session",
                session_id,
                "--out",
                str(tmp_path),
                "--format",
                "md",
                "--lang",
                "en",
                "--title",
                "Regional sales",
            )
        )
    )
    text = md.read_text(encoding="utf-8")
    en = TEXT["en"]
    assert text.startswith("# Regional sales\n")
    for key in ("datasets", "methods", "summary", "charts", "findings", "conclusions"):
        assert f"## {en[key]}\n" in text
    assert "## 关键发现" not in text


def test_default_folder_is_the_session_workspace_and_ipynb(nini, session_id: str, settings: Settings) -> None:
    paths = written(ok(nini("report", "--session", session_id, "--format", "md,html,ipynb")))
    reports = Workspace.for_session(settings.sessions_dir, session_id).root / "reports"
    assert [p.parent for p in paths] == [reports] * 3 and [p.suffix for p in paths] == [".md", ".html", ".ipynb"]
    nbformat.validate(nbformat.read(paths[2], as_version=4))
    again = written(ok(nini("report", "--session", session_id)))
    assert again[0].stem != paths[0].stem and paths[0].is_file()  # a second report never overwrites the first


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "exactly one"),
        (("x.ipynb", "--session", "cli-report"), "exactly one"),
        (("--session", "cli-report", "--execute"), "--execute"),
        (("--session", "nobody"), "no session nobody"),
        (("--session", "../etc"), "invalid session id"),
        (("--session", "cli-report", "--format", "md,docx"), "docx"),
        (("missing.ipynb",), "no such notebook"),
    ],
)
def test_wrong_requests_exit_1_with_a_message(nini, session_id: str, args: tuple[str, ...], message: str) -> None:
    assert message in fail(nini("report", *args))


def test_a_refused_notebook_leaves_no_folder_behind(nini, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (tmp_path / "not-json.ipynb").write_text("this is not a notebook", encoding="utf-8")
    assert "no such notebook" in fail(nini("report", str(tmp_path / "missing.ipynb"), "--out", str(out)))
    assert "not a readable notebook" in fail(nini("report", str(tmp_path / "not-json.ipynb"), "--out", str(out)))
    assert list(out.iterdir()) == []  # no empty missing_report_files/ (one was left per refusal)


def test_pdf_without_a_converter_says_what_to_install(nini, session_id: str, tmp_path: Path, monkeypatch) -> None:
    import sys

    from nini.report import output

    monkeypatch.setitem(sys.modules, "weasyprint", None)
    monkeypatch.setattr(output.shutil, "which", lambda name: None)
    out = tmp_path / "out"
    message = fail(nini("report", "--session", session_id, "--out", str(out), "--format", "md,pdf"))
    assert "error [NOT_FOUND]" in message and "weasyprint" in message and not out.exists()


def test_the_example_notebook(nini, tmp_path: Path) -> None:
    before = EXAMPLE.read_bytes()
    md, html = written(ok(nini("report", str(EXAMPLE), "--out", str(tmp_path))))
    assert EXAMPLE.read_bytes() == before
    assert md.name.startswith("sales_analysis-report-") and html.stem == md.stem
    charts = sorted(p.name for p in (tmp_path / "sales_analysis_report_files").iterdir())
    assert charts == ["monthly-revenue-trend.png", "revenue-by-product.png"]
    text = md.read_text(encoding="utf-8")
    assert text.startswith("# 2025 年销售数据分析\n")
    positions = [text.index(heading + "\n") for heading in ZH_SECTIONS]
    assert positions == sorted(positions)
    assert "](sales_analysis_report_files/monthly-revenue-trend.png)" in text
    assert "Traceback" not in text
    findings = text.split("\n## 关键发现\n")[1].split("\n## 结论与建议\n")[0]
    summary = text.split("\n## 分析摘要\n")[1].split("\n## 图表\n")[0]
    # the failed cell is named in the summary, never a finding
    assert (
        "7 个单元格中有 1 个失败，结果不完整。失败的单元格：单元格 6（KeyError）。" in summary
        and "KeyError" not in findings
    )
    assert "Revenue by region" in findings and "South: +58.3%" in findings and "pipette" in findings
    assert "East 地区收入最高" in text.split("\n## 结论与建议\n")[1]  # the notebook's conclusions cell
    assert html.read_text(encoding="utf-8").count("data:image/png;base64,") == 2
    # a second report gets its own chart folder: the first report's links keep their files
    first_chart = (tmp_path / "sales_analysis_report_files" / "monthly-revenue-trend.png").stat().st_mtime_ns
    again, _ = written(ok(nini("report", str(EXAMPLE), "--out", str(tmp_path))))
    assert again != md and "](sales_analysis_report_files-2/monthly-revenue-trend.png)" in again.read_text(
        encoding="utf-8"
    )
    assert (tmp_path / "sales_analysis_report_files" / "monthly-revenue-trend.png").stat().st_mtime_ns == first_chart


@pytest.mark.slow
def test_execute_runs_a_notebook_first(nini, tmp_path: Path) -> None:
    (tmp_path / "data.csv").write_text("region,revenue\nEast,10\nWest,32\n", encoding="utf-8")
    notebook = tmp_path / "fresh.ipynb"
    cells = [
        new_markdown_cell("# Fresh analysis"),
        new_code_cell("# Total revenue\nimport pandas as pd\nprint('total', pd.read_csv('data.csv')['revenue'].sum())"),
        new_code_cell("print(margin)"),
    ]
    nbformat.write(
        new_notebook(
            cells=cells, metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}
        ),
        notebook,
    )
    before = notebook.read_bytes()

    unexecuted = written(ok(nini("report", str(notebook), "--format", "md")))[0].read_text(encoding="utf-8")
    assert "total 42" not in unexecuted  # nothing ran: the cell is skipped like a failed step
    (md,) = written(ok(nini("report", str(notebook), "--execute", "--format", "md", "--lang", "en")))

    assert md.parent == tmp_path and notebook.read_bytes() == before
    text = md.read_text(encoding="utf-8")
    assert "Total revenue: total 42 (cell 2)" in text
    # what failed in the run is in the body, as from saved outputs
    assert "\n## Summary\n\n1 of 2 cells failed; results are partial. Failed cells: cell 3 (NameError)." in text
    assert (tmp_path / "fresh_report_files-2" / "fresh.executed.ipynb").is_file()  # the 2nd report's folder


@pytest.mark.slow
def test_a_session_recorded_by_run_code(nini, tmp_path: Path) -> None:
    code = "print(df.groupby('region')['revenue'].sum().idxmax(), 'leads')\n"
    ok(
        nini(
            "run-code",
            "-",
            "--session",
            "real",
            "--new",
            "--data",
            str(SALES),
            "--dataset",
            "sales",
            "--label",
            "leader",
            input=code,
        )
    )
    (md,) = written(ok(nini("report", "--session", "real", "--out", str(tmp_path), "--format", "md")))
    text = md.read_text(encoding="utf-8")
    assert "leader: East leads" in text and "- **sales**" in text


def test_the_skill_and_the_cli_write_the_same_report(nini, nini_home: Path, project_dir: Path) -> None:
    """One pipeline: the agent's skill (which REST and the sidebar go through) and `nini report
    --session` give byte-identical Markdown, the user's report.decimals preference in both."""
    import asyncio

    from nini.config import load_settings
    from nini.runtime import Runtime
    from nini.skills.invoke import invoke

    loop = asyncio.new_event_loop()
    runtime = Runtime(load_settings(), project_dir=project_dir)
    try:
        session = runtime.create_session(session_id="same")
        store = session.store
        call = store.start_tool_call("same", "run_code", {"code": "result = fit()"})
        store.finish_tool_call(
            call["id"],
            status="succeeded",
            execution={
                "language": "python",
                "code": "result = fit()",
                "status": "succeeded",
                "label": "model",
                "result": {"slope": 0.56289, "intercept": 12.3456},
            },
        )
        failed = store.start_tool_call("same", "run_code", {"code": "plot()"})
        store.finish_tool_call(
            failed["id"],
            status="failed",
            execution={
                "language": "python",
                "code": "plot()",
                "status": "failed",
                "label": "plot",
                "error": {"code": "CODE_ERROR", "message": "NameError: name 'plot' is not defined"},
            },
        )
        runtime.preferences.table.put_explicit(None, "report.decimals", 2)
        result = loop.run_until_complete(invoke(session, "generate_report", {"formats": ["md"]}))
        assert result.success, result.error
        by_skill = session.workspace.fs.read_bytes(result.result["paths"]["md"])
    finally:
        loop.run_until_complete(runtime.aclose())
        loop.close()

    (md,) = written(ok(nini("report", "--session", "same", "--format", "md")))
    assert md.read_bytes() == by_skill
    text = by_skill.decode()
    assert "slope: 0.56" in text and "0.5629" not in text and "intercept: 12" in text  # two digits, as preferred
    assert "2 个步骤中有 1 个失败，结果不完整。失败的步骤：步骤 2（NameError）。" in text


def test_the_language_follows_ui_language_unless_lang_says(nini, nini_home: Path, session_id: str) -> None:
    (md,) = written(ok(nini("report", "--session", session_id, "--format", "md")))
    assert "\n## 关键发现\n" in md.read_text(encoding="utf-8")
    (nini_home / "settings.json").write_text('{"ui": {"language": "en"}}', encoding="utf-8")
    (md,) = written(ok(nini("report", "--session", session_id, "--format", "md")))
    text = md.read_text(encoding="utf-8")
    assert "\n## Key findings\n" in text and "\n## Summary\n" in text
    assert not any("\u4e00" <= char <= "\u9fff" for char in text.replace("区域销售", ""))  # every word English
    (md,) = written(ok(nini("report", "--session", session_id, "--format", "md", "--lang", "zh")))
    assert "\n## 关键发现\n" in md.read_text(encoding="utf-8")


def saved_notebook(folder: Path, kernel: str = "python3") -> Path:
    """A notebook as saved: cell 3 raised, cell 5 timed out in its last run, cell 6 never ran."""
    from nbformat.v4 import new_output

    cells = [
        new_markdown_cell("# Churn model"),
        new_code_cell(
            "# Test RMSE\nprint('RMSE:', 0.4123)",
            execution_count=1,
            outputs=[new_output("stream", name="stdout", text="RMSE: 0.4123\n")],
        ),
        new_code_cell(
            "model.fit(X)",
            execution_count=2,
            outputs=[
                new_output(
                    "error", ename="NameError", evalue="name 'model' is not defined", traceback=["NameError: ..."]
                )
            ],
        ),
        new_markdown_cell("## Conclusion\n\nThe model is good enough to ship."),
        new_code_cell(
            "while True: pass",
            execution_count=3,
            outputs=[new_output("error", ename="KeyboardInterrupt", evalue="", traceback=["KeyboardInterrupt"])],
        ),
        new_code_cell("print('never')"),
    ]
    notebook = folder / "churn.ipynb"
    nbformat.write(
        new_notebook(
            cells=cells, metadata={"kernelspec": {"name": kernel, "display_name": kernel, "language": "python"}}
        ),
        notebook,
    )
    return notebook


def test_failed_cells_reach_the_summary_of_a_notebook_report(nini, tmp_path: Path) -> None:
    md, html = written(ok(nini("report", str(saved_notebook(tmp_path)), "--lang", "en")))
    text = md.read_text(encoding="utf-8")
    summary = text.split("\n## Summary\n")[1].split("\n## ")[0]
    assert summary.startswith(
        "\n3 of 4 cells failed; results are partial. "
        "Failed cells: cell 3 (NameError), cell 5 (KeyboardInterrupt), cell 6 (not run)."
    )
    assert "- Test RMSE: RMSE: 0.4123 (cell 2)" in text  # the finding names its cell
    assert text.split("\n## Conclusions and recommendations\n")[1].startswith("\nThe model is good enough to ship.\n")
    page = html.read_text(encoding="utf-8")
    assert '<a href="#cell-2"' in page and '<h3 id="cell-2">cell 2</h3>' in page and '<a href="#cell-3"' in page


def test_kernel_needs_execute(nini, tmp_path: Path) -> None:
    assert "--kernel" in fail(nini("report", str(saved_notebook(tmp_path)), "--kernel", "python3"))


def test_execute_without_the_notebooks_kernel_reports_the_saved_outputs(nini, tmp_path: Path) -> None:
    """A notebook for a kernel that is not installed (python2) is reported from its saved outputs,
    and the report and stderr say so: never nothing written."""
    result = nini("report", str(saved_notebook(tmp_path, kernel="python2")), "--execute", "--lang", "en")
    md, _ = written(ok(result))
    assert "ran from saved outputs: kernel python2 is not installed" in result.stderr
    summary = md.read_text(encoding="utf-8").split("\n## Summary\n")[1]
    assert summary.startswith("\nran from saved outputs: kernel python2 is not installed.\n\n3 of 4 cells failed")
    assert not (tmp_path / "churn_report_files" / "churn.executed.ipynb").exists()  # nothing ran
    # --strict: the report is written, and the exit status says the notebook did not run
    strict = nini("report", str(tmp_path / "churn.ipynb"), "--execute", "--strict", "--format", "md")
    assert strict.exit_code == 3 and written(strict.stdout)[0].read_text(encoding="utf-8").startswith("# Churn model")
