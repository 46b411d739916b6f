"""Exports say the code is the agent's, and re-run it in nini's sandbox when asked (issue 31, item 6).

The attack: a step whose payload stays quiet in the sandbox (it writes a marker at a host path the
sandbox cannot see, and swallows the error) is exported; re-run as a plain notebook it acts, as
the reader. The sandboxed export re-runs every step through ``%%nini_run`` in a fresh session's
sandboxed kernel: the marker stays unwritten, and the numbers still come out.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

from nini.execution.policy import find_violations
from nini.execution.sandbox import probe_bwrap
from nini.history.export import export_session, write_session_export
from nini.history.store import HistoryStore
from tests.conftest import REPO_ROOT, Harness, runtime_harness
from tests.test_run_r_code import R_USABLE
from tests.timeouts import timeout

SALES = REPO_ROOT / "examples" / "data" / "sales.csv"
TAG = "nini-agent-code"
# quiet in the sandbox (no such folder there, and the error is swallowed); the path is built at
# run time, so the static policy cannot see it leaves the workspace
PAYLOAD = """target = bytes.fromhex({hex!r}).decode()
try:
    with open(target, "w") as handle:
        handle.write("the agent's code ran outside the sandbox")
except OSError:
    pass
print(round(float(df["revenue"].sum()), 2))
"""
needs_bwrap = pytest.mark.skipif(not probe_bwrap()[0], reason=f"no working bubblewrap: {probe_bwrap()[1]}")


class Recorded:
    def __init__(self, harness: Harness, session: Any, steps: dict[str, Any], marker: Path, expanded: Path) -> None:
        self.harness, self.session, self.steps, self.marker, self.expanded = harness, session, steps, marker, expanded

    def export(self, format: str = "ipynb", **options: Any) -> str:
        return export_session(
            self.harness.runtime.store,
            self.session.id,
            self.session.workspace.root,
            format,
            check=find_violations,
            **options,
        )

    def write(self, out: Path, **options: Any) -> nbformat.NotebookNode:
        write_session_export(
            self.harness.runtime.store,
            self.session.id,
            self.session.workspace.root,
            "ipynb",
            out,
            check=find_violations,
            **options,
        )
        return nbformat.read(out, as_version=4)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Recorded]:
    """A session: a dataset, the quiet payload (its label tries IPython's {expansion}), a step the
    policy refused, one that ran with the policy off and would be refused now, and (with R) an R
    step saving a dataset that a Python step reads."""
    host = tmp_path_factory.mktemp("host")
    marker, expanded = host / "marker.txt", host / "expanded.txt"
    for harness in runtime_harness(tmp_path_factory):
        session = harness.session()
        execution = harness.runtime.settings.execution
        steps = {
            "load": harness.call(session, "load_dataset", path=session.upload(SALES), name="sales"),
            "payload": harness.call(
                session,
                "run_code",
                code=PAYLOAD.format(hex=str(marker).encode().hex()),
                dataset_name="sales",
                label=f"total {{open({str(expanded)!r}, 'w')}} $HOME",
            ),
            "refused": harness.call(
                session, "run_code", code="import subprocess\nsubprocess.run(['id'])", label="shell"
            ),
        }
        execution.python_policy = "off"
        try:
            steps["unchecked"] = harness.call(session, "run_code", code="import os\nprint(os.sep)", label="sep")
        finally:
            execution.python_policy = "strict"
        if R_USABLE:
            steps["r_sum"] = harness.call(
                session,
                "run_r_code",
                dataset_name="sales",
                save_as="by_region",
                label="by region",
                code="output_df <- aggregate(revenue ~ region, data = df, FUN = sum)\n"
                "cat(sprintf('%.2f\\n', max(output_df$revenue)))",
            )
            steps["reads_r"] = harness.call(session, "run_code", code="print(len(datasets['by_region']))")
        assert {k: s.success for k, s in steps.items()} == {k: k != "refused" for k in steps}, {
            k: s.error for k, s in steps.items()
        }
        assert not marker.exists() and not expanded.exists()  # the sandbox held the first time
        yield Recorded(harness, session, steps, marker, expanded)


def _stdout(cell: Any) -> str:
    return "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream" and o.name == "stdout")


def _step_cells(notebook: Any) -> dict[str, Any]:
    return {
        c.metadata["nini"]["execution_id"]: c
        for c in notebook.cells
        if c.cell_type == "code" and "execution_id" in c.metadata.get("nini", {})
    }


def _execute(notebook: Any, folder: Path) -> None:
    NotebookClient(
        notebook, timeout=timeout(300), kernel_name="python3", resources={"metadata": {"path": str(folder)}}
    ).execute()


@pytest.mark.parametrize("sandboxed", [False, True])
def test_the_header_says_whose_code_it_is_and_names_the_flagged_steps(recorded: Recorded, sandboxed: bool) -> None:
    notebook = nbformat.reads(recorded.export(sandboxed=sandboxed, language="en"), as_version=4)
    header = notebook.cells[0]
    assert header.cell_type == "markdown"
    text = header.source
    assert "written by nini's agent" in text and recorded.session.id in text and " UTC" in text
    refused = recorded.steps["refused"]
    store = recorded.harness.runtime.store
    flagged = text[text.index("Steps the static policy flags:") :]
    assert "step 2 `shell` (python) (refused, never ran)" in flagged and "'subprocess'" in flagged
    assert "step 3 `sep` (python) (ran, but the policy would refuse it now)" in flagged and "'os'" in flagged
    assert "payload" not in flagged and "total" not in flagged  # quiet code is not flagged: the sandbox is the boundary
    if sandboxed:
        assert "%%nini_run" in text and "runs none of the agent's code" in text
    else:
        assert "without a sandbox" in text and "--sandboxed" in text
    # every step's cell, and only those, carries the tag
    steps = _step_cells(notebook)
    ran = [k for k in recorded.steps if k not in ("load", "refused")]
    assert set(steps) == {recorded.steps[k].execution_id for k in ran}
    tagged = [c for c in notebook.cells if TAG in c.metadata.get("tags", [])]
    assert tagged == list(steps.values())
    assert store.get_execution(refused.execution_id)["status"] == "failed"
    assert any("refused by the policy" in c.source for c in notebook.cells if c.cell_type == "markdown")


def test_the_header_follows_the_language_and_markdown_has_it_too(recorded: Recorded) -> None:
    chinese = nbformat.reads(recorded.export(), as_version=4).cells[0].source
    assert "这些代码由 nini 的智能体" in chinese and "没有沙箱" in chinese and "静态策略标记的步骤" in chinese
    markdown = recorded.export("md", language="en")
    assert "written by nini's agent" in markdown and "step 2 `shell` (python) (refused, never ran)" in markdown
    assert "outside any sandbox" in markdown


def test_sandboxed_applies_to_notebooks_only(recorded: Recorded) -> None:
    from nini.errors import NiniError

    with pytest.raises(NiniError) as raised:
        recorded.export("md", sandboxed=True)
    assert raised.value.code.value == "INVALID_ARGUMENT"


def test_a_sandboxed_step_is_a_nini_run_cell_with_the_arguments_it_ran_with(recorded: Recorded) -> None:
    notebook = nbformat.reads(recorded.export(sandboxed=True), as_version=4)
    setup = notebook.cells[1].source
    assert "%load_ext nini" in setup and "%nini session --new --title 're-run of nini session" in setup
    assert f"%nini load nini-session-{recorded.session.id}_files/datasets/sales.parquet --name sales" in setup
    steps = _step_cells(notebook)
    payload = steps[recorded.steps["payload"].execution_id].source.splitlines()[0]
    assert payload.startswith("%%nini_run --dataset=sales ") and "--purpose=exploration" in payload
    assert "'--label=total {open(" in payload  # one quoted word, which %%nini_run does not expand
    if R_USABLE:
        r_line = steps[recorded.steps["r_sum"].execution_id].source.splitlines()[0]
        assert r_line.startswith("%%nini_run --r --dataset=sales --save-as=by_region '--label=by region'")
    assert not any(c.source.startswith("%%R") for c in notebook.cells if c.cell_type == "code")


@pytest.mark.slow
def test_the_plain_export_re_runs_the_payload_as_you(recorded: Recorded, tmp_path: Path) -> None:
    """The attack itself: what was quiet in the sandbox writes the marker when the export re-runs."""
    notebook = recorded.write(tmp_path / "plain.ipynb")
    try:
        _execute(notebook, tmp_path)
        assert recorded.marker.read_text() == "the agent's code ran outside the sandbox"
    finally:
        recorded.marker.unlink(missing_ok=True)


@needs_bwrap
@pytest.mark.slow
def test_the_sandboxed_export_re_runs_in_the_sandbox_and_the_numbers_come_out(
    recorded: Recorded, tmp_path: Path, nini_home: Path
) -> None:
    notebook = recorded.write(tmp_path / "contained.ipynb", sandboxed=True)
    _execute(notebook, tmp_path)  # in a kernel whose NINI_HOME is this test's

    assert not recorded.marker.exists() and not recorded.expanded.exists()
    store = recorded.harness.runtime.store
    cells = _step_cells(notebook)
    payload = recorded.steps["payload"].execution_id
    assert _stdout(cells[payload]) == store.get_execution(payload)["stdout"] != ""
    if R_USABLE:
        for key in ("r_sum", "reads_r"):
            execution_id = recorded.steps[key].execution_id
            assert _stdout(cells[execution_id]) == store.get_execution(execution_id)["stdout"] != "", key
    # every step ran in a fresh session of this NINI_HOME, recorded like an agent's, in the sandbox
    rerun = HistoryStore(f"sqlite:///{nini_home / 'nini.db'}")
    try:
        (session,) = rerun.list_sessions()
        assert session["title"] == f"re-run of nini session {recorded.session.id}"
        calls = [(c["tool_name"], c["status"]) for c in rerun.list_tool_calls(session["id"])]
        isolation = {e["data"]["isolation"] for e in rerun.list_events(session["id"], types=["code_execution"])}
    finally:
        rerun.close()
    expected = [("load_dataset", "succeeded"), ("run_code", "succeeded"), ("run_code", "failed")]
    if R_USABLE:
        expected += [("run_r_code", "succeeded"), ("run_code", "succeeded")]
    assert calls == expected  # the step that ran with the policy off is refused now
    assert isolation == {"sandbox"}
