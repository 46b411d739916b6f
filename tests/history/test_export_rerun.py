"""Exports that re-run anywhere: a Python and R session exported with its files, moved, re-executed."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

from nini.execution.policy import find_violations
from nini.history.export import write_session_export
from tests.conftest import REPO_ROOT, Harness, runtime_harness
from tests.test_run_r_code import needs_r
from tests.timeouts import timeout

SALES = REPO_ROOT / "examples" / "data" / "sales.csv"
ANALYSIS = REPO_ROOT / "examples" / "analysis"
# An absolute POSIX path in notebook text: a slash starting a path after a quote, space or line start.
ABSOLUTE = re.compile(r"""(?:^|[\s"'(=])(/(?:home|work|tmp|usr|root|var|opt|etc|srv|mnt)\b[^\s"']*)""", re.M)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Harness, Any, dict[str, Any]]]:
    """A session: a CSV dataset, Python steps, an R model reading and saving datasets, a failed
    R step, one that does not parse and one the policy refuses."""
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
            "model": harness.call(
                session,
                "run_r_code",
                code=(ANALYSIS / "03_model.R").read_text(),
                dataset_name="sales",
                save_as="model_terms",
                label="model",
            ),
            "terms": harness.call(
                session,
                "run_code",
                label="terms",
                code=(
                    "terms = datasets['model_terms']\n"
                    "print(len(terms), round(float(terms['estimate'].abs().sum()), 4))\n"
                ),
            ),
            "r_fails": harness.call(session, "run_r_code", code="x <- 1\nstop('no good')", label="stops"),
            "r_parse": harness.call(session, "run_r_code", code="x <- (1 +", label="unparsed"),
            "r_refused": harness.call(session, "run_r_code", code="system('ls')", label="shell"),
            "after": harness.call(
                session,
                "run_r_code",
                code="cat(sprintf('%.2f\\n', sum(df$revenue)))",
                dataset_name="sales",
                label="total",
            ),
        }
        assert [s.success for s in steps.values()] == [True, True, True, True, False, False, False, True], {
            k: s.error for k, s in steps.items()
        }
        yield harness, session, steps


def _stdout(cell: Any) -> str:
    return "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream" and o.name == "stdout")


@needs_r
def test_the_exported_folder_moves_and_re_runs_to_the_same_numbers(recorded, tmp_path: Path) -> None:  # noqa: ANN001
    harness, session, steps = recorded
    out = write_session_export(
        harness.runtime.store,
        session.id,
        session.workspace.root,
        "ipynb",
        tmp_path / "first" / "analysis.ipynb",
        check=find_violations,
    )
    text = out.read_text()
    assert ABSOLUTE.findall(text) == []
    assert str(session.workspace.root) not in text and str(tmp_path) not in text
    assert sorted(p.name for p in (tmp_path / "first" / "analysis_files" / "datasets").iterdir()) == ["sales.parquet"]

    moved = tmp_path / "elsewhere" / "copy"
    shutil.move(tmp_path / "first", moved)
    notebook = nbformat.read(moved / "analysis.ipynb", as_version=4)
    NotebookClient(
        notebook, timeout=timeout(300), kernel_name="python3", resources={"metadata": {"path": str(moved)}}
    ).execute()

    store = harness.runtime.store
    cells = {
        c.metadata["nini"]["execution_id"]: c
        for c in notebook.cells
        if c.cell_type == "code" and "execution_id" in c.metadata.get("nini", {})
    }
    for key in ("summary", "terms", "after"):
        assert _stdout(cells[steps[key].execution_id]) == store.get_execution(steps[key].execution_id)["stdout"], key
    model_out = _stdout(cells[steps["model"].execution_id])
    recorded_model = store.get_execution(steps["model"].execution_id)["stdout"]
    assert "top region from Python's summary" in model_out
    assert _numbers(model_out) == _numbers(recorded_model)
    assert (moved / "analysis_files" / "datasets").is_dir()


@needs_r
def test_r_steps_are_r_magic_cells_with_their_datasets_passed_in_and_out(recorded) -> None:  # noqa: ANN001
    harness, session, steps = recorded
    from nini.history.export import export_session

    notebook = nbformat.reads(
        export_session(harness.runtime.store, session.id, session.workspace.root, "ipynb", check=find_violations),
        as_version=4,
    )
    nbformat.validate(notebook)
    by_id = {
        c.metadata["nini"].get("execution_id"): c
        for c in notebook.cells
        if c.cell_type == "code" and "nini" in c.metadata
    }
    model = by_id[steps["model"].execution_id]
    first = model.source.splitlines()[0]
    assert first.startswith("%%R") and "-i df=datasets.sales" in first and "-o output_df" in first
    assert "nini_in_0=datasets.region_summary" in first
    assert any(o.output_type == "stream" and "top region" in o.text for o in model.outputs)
    assert any("image/png" in o.get("data", {}) for o in model.outputs)  # the ggplot, kept
    saved = [c for c in notebook.cells if c.metadata.get("nini", {}).get("bridge_for") == steps["model"].execution_id]
    assert [c.source for c in saved] == ["datasets['model_terms'] = output_df.reset_index(drop=True)"]
    assert by_id[steps["r_fails"].execution_id].metadata["tags"] == ["nini-agent-code", "raises-exception"]
    unparsed = by_id[steps["r_parse"].execution_id].metadata
    assert unparsed["tags"] == ["nini-agent-code", "raises-exception"] and unparsed["nini"]["status"] == "failed"
    assert unparsed["nini"]["error"]["message"].startswith("R syntax error")
    notes = [c.source for c in notebook.cells if c.cell_type == "markdown"]
    refused = [n for n in notes if "refused by the policy" in n]
    assert len(refused) == 1 and "```r\nsystem('ls')\n```" in refused[0] and "policy's reasons" in refused[0]
    assert "nini-session-" + session.id + "_files/datasets/sales.parquet" in notes[0]
    assert not any(" ran in r" in n for n in notes)
    markdown = export_session(harness.runtime.store, session.id, session.workspace.root, "md", check=find_violations)
    assert "## Step 5: unparsed (r, failed (CODE_ERROR))" in markdown and "R syntax error" in markdown
    json.dumps(notebook)


def _numbers(text: str) -> list[str]:
    return re.findall(r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?", text)
