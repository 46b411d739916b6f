"""``%load_ext nini`` in a real IPython kernel: the magics and what they record."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nbformat
import psutil
import pytest
from jupyter_client.manager import start_new_kernel

from nini.history.store import HistoryStore
from tests.conftest import REPO_ROOT
from tests.jupyter_ext.conftest import needs_r, nini_env
from tests.timeouts import timeout


@dataclass
class Output:
    stdout: str = ""
    stderr: str = ""
    errors: list[str] = field(default_factory=list)


class Kernel:
    def __init__(self, home: Path, cwd: Path, **env: str) -> None:
        self.home, self.cwd = home, cwd
        self.manager, self.client = start_new_kernel(kernel_name="python3", cwd=str(cwd), env=nini_env(home, cwd) | env)

    def run(self, code: str) -> Output:
        out = Output()

        def collect(message: dict[str, Any]) -> None:
            kind, content = message["msg_type"], message["content"]
            if kind == "stream":
                setattr(out, content["name"], getattr(out, content["name"]) + content["text"])
            elif kind == "error":
                out.errors.append(f"{content['ename']}: {content['evalue']}")

        self.client.execute_interactive(code, output_hook=collect, timeout=timeout(120))
        return out

    def store(self) -> HistoryStore:
        return HistoryStore(f"sqlite:///{self.home / 'nini.db'}")

    def shutdown(self) -> None:
        self.client.stop_channels()
        self.manager.shutdown_kernel(now=True)


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kernel]:
    # JPY_SESSION_NAME is how a Jupyter server tells a kernel its notebook
    started = Kernel(
        tmp_path_factory.mktemp("home"), tmp_path_factory.mktemp("notebooks"), JPY_SESSION_NAME="analysis.ipynb"
    )
    assert started.run("%load_ext nini").errors == []
    yield started
    started.shutdown()


@pytest.mark.slow
def test_session_is_created_once_and_named_after_the_notebook(kernel: Kernel) -> None:
    first = kernel.run("%nini session").stdout.strip()
    assert first and kernel.run("%nini session").stdout.strip() == first
    store = kernel.store()
    try:
        assert store.get_session(first)["title"] == "analysis.ipynb"
    finally:
        store.close()


@pytest.mark.slow
def test_skills_with_type_filter(kernel: Kernel) -> None:
    functions = kernel.run("%nini skills --type function").stdout
    assert "run_code" in functions and "load_dataset" in functions and "skill-creator" not in functions
    assert "skill-creator" in kernel.run("%nini skills").stdout


@pytest.mark.slow
@pytest.mark.parametrize("line", ["%nini bogus", "%nini skills --type python", "%nini"])
def test_usage_errors_do_not_break_the_kernel(kernel: Kernel, line: str) -> None:
    out = kernel.run(line)
    assert "UsageError" in out.stderr + "".join(out.errors)
    assert kernel.run("print(1 + 1)").stdout == "2\n"


@pytest.mark.slow
def test_export_writes_next_to_the_notebook(kernel: Kernel) -> None:
    session_id = kernel.run("%nini session").stdout.strip()
    path = Path(kernel.run("%nini export").stdout.strip())
    assert path == kernel.cwd / f"nini-session-{session_id}.ipynb"
    nbformat.validate(nbformat.read(path, as_version=4))
    markdown = Path(kernel.run("%nini export --format md").stdout.strip())
    assert markdown.suffix == ".md" and session_id in markdown.read_text()


@pytest.mark.slow
def test_df_that_is_not_a_dataframe_is_a_usage_error(kernel: Kernel) -> None:
    out = kernel.run("not_a_frame = 3\n")
    out = kernel.run("%%nini_r --df not_a_frame\nx <- 1")
    text = out.stderr + "".join(out.errors)
    assert "UsageError" in text or "R cannot be used" in text


@needs_r
@pytest.mark.slow
def test_nini_r_takes_and_returns_dataframes_and_is_recorded(kernel: Kernel) -> None:
    kernel.run("import pandas as pd\nsales = pd.DataFrame({'region': ['n', 's', 'n'], 'amount': [1.0, 2.0, 4.0]})")
    out = kernel.run(
        "%%nini_r --df sales --save-as out\n"
        "output_df <- aggregate(amount ~ region, data = df, FUN = sum)\nprint(nrow(output_df))"
    )
    assert out.errors == [] and "2" in out.stdout, out
    assert kernel.run("print(out.sort_values('region')['amount'].tolist())").stdout == "[5.0, 2.0]\n"
    session_id = kernel.run("%nini session").stdout.strip()
    store = kernel.store()
    try:
        calls = [(c["tool_name"], c["status"]) for c in store.list_tool_calls(session_id)]
        assert calls[-2:] == [("load_dataset", "succeeded"), ("run_r_code", "succeeded")]
        assert {d["name"] for d in store.list_datasets(session_id)} >= {"sales", "out"}
        assert [e["language"] for e in store.list_executions(session_id, "r")] == ["r"]
    finally:
        store.close()


@pytest.mark.slow
def test_nini_r_says_when_r_is_off(tmp_path: Path) -> None:
    off = Kernel(tmp_path / "home", tmp_path, NINI_R_ENABLED="false")
    try:
        off.run("%load_ext nini")
        out = off.run("%%nini_r\nx <- 1")
        assert "R cannot be used here" in out.stderr and "r_enabled" in out.stderr
    finally:
        off.shutdown()


@needs_r
@pytest.mark.slow
def test_the_docs_notebook_example_runs(kernel: Kernel) -> None:
    section = (REPO_ROOT / "docs" / "jupyterlab.md").read_text().split("## In a notebook\n", 1)[1].split("\n## ", 1)[0]
    python, r = re.findall(r"```(?:python|r)\n(.*?)```", section, re.S)[-2:]
    python = python.replace('"examples/data/sales.csv"', repr(str(REPO_ROOT / "examples" / "data" / "sales.csv")))
    for cell in (python, r):
        out = kernel.run(cell)
        assert out.errors == [] and "nini:" not in out.stderr, out
    totals = kernel.run("print(round(by_region['revenue'].sum()) == round(sales['revenue'].sum()))")
    assert totals.stdout == "True\n"


@needs_r
@pytest.mark.slow
def test_kernel_exit_stops_the_r_worker(tmp_path: Path) -> None:
    kernel = Kernel(tmp_path / "home", tmp_path)
    kernel.run("%load_ext nini")
    assert kernel.run("%%nini_r\nx <- 1").errors == []
    children = psutil.Process(kernel.manager.provisioner.pid).children(recursive=True)
    assert children, "the R worker is a child of the kernel"
    kernel.client.stop_channels()
    kernel.manager.shutdown_kernel(now=False)  # a clean exit runs the magics' atexit hook
    _gone, alive = psutil.wait_procs(children, timeout=timeout(15))
    assert alive == []
    assert not (tmp_path / "home" / "nini.db-wal").exists() or (tmp_path / "home" / "nini.db-wal").stat().st_size == 0
