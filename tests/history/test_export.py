"""Session export: a notebook that validates and re-runs to the same numbers, Markdown and JSON."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

from nini.errors import NiniError
from nini.execution.policy import find_violations
from nini.history.export import export_session, write_session_export
from tests.conftest import REPO_ROOT, Harness, runtime_harness
from tests.timeouts import timeout

SALES = REPO_ROOT / "examples" / "data" / "sales.csv"
ANALYSIS = REPO_ROOT / "examples" / "analysis"


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Harness, Any, dict[str, Any]]]:
    """A session with a loaded dataset, a summary, a chart, a failure, its fix and a refused step."""
    for harness in runtime_harness(tmp_path_factory):
        session = harness.session()
        steps = {
            "load": harness.call(session, "load_dataset", path=session.upload(SALES), name="sales"),
            "summary": harness.call(
                session,
                "run_code",
                code=(ANALYSIS / "01_summary.py").read_text(),
                dataset_name="sales",
                save_as="region_summary",
                label="summary",
            ),
            "trend": harness.call(
                session,
                "run_code",
                code=(ANALYSIS / "02_trend.py").read_text(),
                dataset_name="sales",
                label="trend",
                purpose="visualization",
            ),
            "broken": harness.call(
                session, "run_code", code="share = datasets['region_summary']['missing']", label="share"
            ),
            "fixed": harness.call(
                session,
                "run_code",
                code="share = datasets['region_summary']['share']\nprint(round(float(share.sum()), 3))",
                label="share",
            ),
            "refused": harness.call(session, "run_code", code="import subprocess"),
        }
        assert [s.success for s in steps.values()] == [True, True, True, False, True, False]
        yield harness, session, steps


def export(recorded: tuple[Harness, Any, dict], format: str) -> str:
    harness, session, _ = recorded
    return export_session(harness.runtime.store, session.id, session.workspace.root, format, check=find_violations)


def test_the_notebook_validates_and_holds_each_execution_in_order(recorded) -> None:  # noqa: ANN001
    notebook = nbformat.reads(export(recorded, "ipynb"), as_version=4)
    nbformat.validate(notebook)
    _, _, steps = recorded
    code_cells = [c for c in notebook.cells if c.cell_type == "code" and "nini" in c.metadata]
    ids = [c.metadata["nini"]["execution_id"] for c in code_cells]
    assert ids == [steps[k].execution_id for k in ("summary", "trend", "broken", "fixed")]
    assert code_cells[0].source.startswith("df = datasets['sales']")
    assert code_cells[0].source.rstrip().endswith("datasets['region_summary'] = output_df")
    assert code_cells[2].metadata["tags"] == ["nini-agent-code", "raises-exception"]
    trend_images = [o for o in code_cells[1].outputs if "image/png" in o.get("data", {})]
    assert len(trend_images) == 1  # the chart, once, though it is both a display output and an artifact
    notes = [c.source for c in notebook.cells if c.cell_type == "markdown"]
    assert any("refused by the policy" in n and "import subprocess" in n for n in notes)


def test_the_notebook_re_executes_to_the_same_numbers(recorded, tmp_path: Path) -> None:  # noqa: ANN001
    harness, session, _ = recorded
    out = write_session_export(
        harness.runtime.store, session.id, session.workspace.root, "ipynb", tmp_path / "s.ipynb", check=find_violations
    )
    assert sorted(p.name for p in (tmp_path / "s_files" / "datasets").iterdir()) == ["sales.parquet"]
    notebook = nbformat.read(out, as_version=4)
    NotebookClient(
        notebook, timeout=timeout(120), kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    checked = 0
    for cell in notebook.cells:
        meta = cell.metadata.get("nini") if cell.cell_type == "code" else None
        if not meta:
            continue
        recorded_stdout = harness.runtime.store.get_execution(meta["execution_id"])["stdout"]
        rerun_stdout = "".join(
            o.get("text", "") for o in cell.outputs if o.output_type == "stream" and o.name == "stdout"
        )
        assert rerun_stdout == recorded_stdout, meta
        checked += bool(recorded_stdout)
    assert checked == 3  # summary table, growth figures, share total


def test_markdown_lists_every_step_with_its_status(recorded) -> None:  # noqa: ANN001
    text = export(recorded, "md")
    assert text.count("## Step ") == 5
    assert "failed (CODE_ERROR)" in text and "failed (POLICY_VIOLATION)" in text
    assert "![" in text and ".png)" in text


def test_json_holds_the_whole_record(recorded) -> None:  # noqa: ANN001
    bundle = json.loads(export(recorded, "json"))
    assert len(bundle["tool_calls"]) == 6 and len(bundle["executions"]) == 5
    assert {d["name"] for d in bundle["datasets"]} == {"sales", "region_summary"}
    assert {a["format"] for a in bundle["artifacts"]} == {"png", "svg"}


def test_unknown_format_and_unknown_session_are_clear_errors(recorded) -> None:  # noqa: ANN001
    harness, session, _ = recorded
    with pytest.raises(NiniError) as bad_format:
        export_session(harness.runtime.store, session.id, session.workspace.root, "docx", check=find_violations)
    assert bad_format.value.code.value == "INVALID_ARGUMENT"
    with pytest.raises(NiniError) as missing:
        export_session(harness.runtime.store, "nosuchsession", session.workspace.root, "ipynb", check=find_violations)
    assert missing.value.code.value == "NOT_FOUND"


def test_the_notebook_names_no_host_path(recorded) -> None:  # noqa: ANN001
    from tests.history.test_export_rerun import ABSOLUTE

    harness, session, _ = recorded
    text = export(recorded, "ipynb")
    assert ABSOLUTE.findall(text) == [] and str(session.workspace.root) not in text
    assert f"nini-session-{session.id}_files/datasets/sales.parquet" in text  # what it needs beside it


def test_markdown_copies_its_images_and_shows_tool_results_as_text(recorded, tmp_path: Path) -> None:  # noqa: ANN001
    harness, session, steps = recorded
    store = harness.runtime.store
    chat = harness.session()
    store.add_message(chat.id, "user", "Summarise revenue by region")
    store.add_message(
        chat.id, "assistant", None, metadata={"tool_calls": [{"id": "c1", "name": "run_code", "arguments": "{}"}]}
    )
    store.add_message(
        chat.id, "tool", json.dumps(steps["summary"].result), tool_call_id="c1", metadata={"name": "run_code"}
    )
    store.add_message(
        chat.id,
        "tool",
        json.dumps({"success": False, "error": {"code": "NOT_FOUND", "message": "no such dataset"}}),
        tool_call_id="c2",
        metadata={"name": "run_code"},
    )
    text = export_session(store, chat.id, chat.workspace.root, "md", check=find_violations)
    assert "None" not in text and '{"' not in text
    assert "**assistant** calls `run_code`." in text and "**tool** `run_code`:" in text
    assert "| total_revenue | 2857565.0 |" in text  # the result's fields, as a table
    assert "| region | units | revenue | share |" in text  # the data frame preview, as a table
    assert "```text\n" in text and "East" in text  # its stdout as text
    assert "failed (NOT_FOUND): no such dataset" in text

    out = write_session_export(
        store, session.id, session.workspace.root, "md", tmp_path / "report.md", check=find_violations
    )
    links = [line[line.index("](") + 2 : -1] for line in out.read_text().splitlines() if line.startswith("![")]
    assert links and all(link.startswith("report_files/artifacts/") for link in links)
    assert all((tmp_path / link).is_file() for link in links)
