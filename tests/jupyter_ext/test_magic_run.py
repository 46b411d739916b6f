"""``%%nini_run`` and what a sandboxed export's first cell uses (``%nini session --new``, ``%nini load``),
in a real IPython kernel: the cell's code runs in nini's sandbox, never in the kernel (issue 31, item 6)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest

from nini.execution.sandbox import probe_bwrap
from tests.conftest import REPO_ROOT
from tests.jupyter_ext.conftest import needs_r
from tests.jupyter_ext.test_magics import Kernel

SALES = REPO_ROOT / "examples" / "data" / "sales.csv"
needs_bwrap = pytest.mark.skipif(not probe_bwrap()[0], reason=f"no working bubblewrap: {probe_bwrap()[1]}")
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kernel]:
    started = Kernel(tmp_path_factory.mktemp("home"), tmp_path_factory.mktemp("notebooks"))
    assert started.run("%load_ext nini").errors == []
    yield started
    started.shutdown()


def test_a_fresh_session_and_a_loaded_dataset(kernel: Kernel) -> None:
    first = kernel.run("%nini session").stdout.strip()
    fresh = kernel.run("%nini session --new --title 're-run of nini session s1'").stdout.strip()
    assert fresh and fresh != first and kernel.run("%nini session").stdout.strip() == fresh
    loaded = kernel.run(f"%nini load {SALES} --name sales")
    assert loaded.errors == [] and loaded.stdout.strip() == (
        "nini: dataset sales: 144 rows, 6 columns (encoding utf-8, detected; separator ',', detected)"
    ), loaded
    missing = kernel.run("%nini load no-such.csv")
    assert "NOT_FOUND" in missing.stderr and str(kernel.cwd) not in missing.stderr
    store = kernel.store()
    try:
        assert store.get_session(fresh)["title"] == "re-run of nini session s1"
        assert [d["name"] for d in store.list_datasets(fresh)] == ["sales"]
    finally:
        store.close()


@needs_bwrap
def test_the_cell_runs_in_the_sandbox_not_in_the_kernel(kernel: Kernel, tmp_path: Path) -> None:
    marker, expanded = tmp_path / "marker.txt", tmp_path / "expanded.txt"
    kernel.run(f"%nini load {SALES} --name sales")
    label = f'count {{open("{expanded}", "w")}} $HOME'  # what IPython would expand, were the line expanded
    cell = (
        f"%%nini_run --dataset=sales '--label={label}'\n"
        f"planted = 'from the agent'\n"
        f"try:\n    open(bytes.fromhex({str(marker).encode().hex()!r}).decode(), 'w').write('escaped')\n"
        f"except OSError:\n    pass\n"
        f"print(len(df))\nresult = {{'rows': len(df)}}\n"
    )
    out = kernel.run(cell)
    assert out.errors == [] and out.stdout.startswith("144\n"), out
    assert not marker.exists() and not expanded.exists()  # neither the code nor its line ran here
    assert kernel.run("print('planted' in dir())").stdout == "False\n"
    session_id = kernel.run("%nini session").stdout.strip()
    store = kernel.store()
    try:
        (call,) = [c for c in store.list_tool_calls(session_id) if c["tool_name"] == "run_code"]
        (event,) = store.list_events(session_id, types=["code_execution"])
    finally:
        store.close()
    assert call["arguments"]["label"] == label
    assert event["data"]["isolation"] == "sandbox"


def test_a_refused_step_says_why_and_a_bad_line_is_a_usage_error(kernel: Kernel) -> None:
    refused = kernel.run("%%nini_run\nimport subprocess\n")
    assert "POLICY_VIOLATION" in refused.stderr and refused.errors == []
    unclosed = kernel.run("%%nini_run '--label=open\nprint(1)\n")
    assert "UsageError" in unclosed.stderr + "".join(unclosed.errors)
    assert kernel.run("print(1 + 1)").stdout == "2\n"


@needs_r
def test_r_cells_run_in_the_session_s_r_worker(kernel: Kernel) -> None:
    kernel.run(f"%nini load {SALES} --name sales")
    out = kernel.run(
        "%%nini_run --r --dataset=sales --save-as=regions\n"
        "output_df <- aggregate(revenue ~ region, data = df, FUN = sum)\ncat(nrow(output_df), '\\n')"
    )
    assert out.errors == [] and out.stdout.strip() == "4", out
    assert "regions" not in kernel.run("print(sorted(dir()))").stdout  # the dataset stays in the session


def test_export_sandboxed_from_the_notebook(kernel: Kernel) -> None:
    kernel.run("%%nini_run\nprint('hello')\n")
    path = Path(kernel.run("%nini export --sandboxed").stdout.strip())
    notebook = nbformat.read(path, as_version=4)
    assert "%load_ext nini" in notebook.cells[1].source
    assert any(c.source.startswith("%%nini_run") and "print('hello')" in c.source for c in notebook.cells)
