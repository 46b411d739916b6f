"""InProcessExecutor in a real IPython kernel: the notebook's namespace, the kernel path's contract,
errors, timeouts, interrupts and cancellation.

Each test drives one cell in the kernel, as ``%%nini`` does: a loop thread awaits
``executor.run(...)`` for some requests while the main thread serves them; the cell prints the
outcomes as one JSON line, which is all the cell may print.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from jupyter_client.manager import start_new_kernel

from nini.execution.outcome import CONTRACT_KEYS
from tests.conftest import REPO_ROOT, execute_in_kernel

from .conftest import Kernels, new_session

MARK = "NINI-OUTCOMES "
SETUP = """
import asyncio as _a, dataclasses as _dc, json as _json, pathlib as _pl, threading as _th
from nini.execution.inprocess import InProcessExecutor as _Executor
from nini.execution.outcome import CodeRequest as _Request
from nini.execution.workspace import Workspace as _Workspace

_nini_loop = _a.new_event_loop()
_th.Thread(target=_nini_loop.run_forever, daemon=True).start()
_nini_executor = _Executor()

def _nini_run(requests, root, cancel_after=None):
    workspace = _Workspace(_pl.Path(root)).ensure()

    async def one(request):
        run = _nini_executor.run("s", workspace, _Request(**request))
        if cancel_after is None:
            return await run
        try:
            return await _a.wait_for(run, cancel_after)
        except _a.TimeoutError:
            return None

    async def all_runs():
        return [await one(r) for r in requests]

    done = _a.run_coroutine_threadsafe(all_runs(), _nini_loop)
    try:
        _nini_executor.serve(until=done)
    except KeyboardInterrupt:
        print("NINI-INTERRUPTED")
        _nini_executor.serve(until=done)
    outcomes = [None if o is None else _dc.asdict(o) for o in done.result()]
    print("NINI-OUTCOMES " + _json.dumps(outcomes))
"""


class Kernel:
    """A real ipykernel (the notebook's) with the executor set up; ``run`` executes one cell."""

    def __init__(self, cwd: Path, home: Path) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("NINI_")}
        env.update(NINI_HOME=str(home), PYTHONPATH=str(REPO_ROOT))
        self.cwd = cwd
        self.manager, self.client = start_new_kernel(kernel_name="python3", cwd=str(cwd), env=env)
        assert self.run(SETUP)["errors"] == []

    def run(self, code: str, *, interrupt_after: float | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {"stdout": "", "stderr": "", "errors": [], "displays": []}

        def collect(message: dict[str, Any]) -> None:
            kind, content = message["msg_type"], message["content"]
            if kind == "stream":
                out[content["name"]] += content["text"]
            elif kind == "error":
                out["errors"].append(f"{content['ename']}: {content['evalue']}")
            elif kind in ("display_data", "execute_result"):
                out["displays"].append(content["data"])

        execute_in_kernel(self.manager, self.client, code, collect, interrupt_after=interrupt_after)
        return out

    def outcomes(self, requests: list[dict[str, Any]], workspace: Path, **options: Any) -> tuple[list[dict], dict]:
        """Run ``requests`` through the executor; (outcomes as dicts, what else the cell showed)."""
        args = ", ".join(f"{k}={v!r}" for k, v in options.items() if k != "interrupt_after")
        out = self.run(
            f"_nini_run({requests!r}, {str(workspace)!r}{', ' + args if args else ''})",
            interrupt_after=options.get("interrupt_after"),
        )
        lines = out["stdout"].splitlines()
        found = [json.loads(line[len(MARK) :]) for line in lines if line.startswith(MARK)]
        assert found, out
        out["other_lines"] = [line for line in lines if not line.startswith(MARK)]
        return found[0], out

    def outcome(self, code: str, workspace: Path, **request: Any) -> dict[str, Any]:
        (outcome,), shown = self.outcomes([{"code": code, **request}], workspace)
        assert shown["other_lines"] == [] and shown["stderr"] == "" and shown["errors"] == [], shown
        assert shown["displays"] == [], "the code's output leaked into the cell"
        return outcome

    def shutdown(self) -> None:
        self.client.stop_channels()
        self.manager.shutdown_kernel(now=True)


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kernel]:
    started = Kernel(tmp_path_factory.mktemp("notebooks"), tmp_path_factory.mktemp("home"))
    yield started
    started.shutdown()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return tmp_path / "workspace"


def test_the_notebooks_variables_are_visible_and_results_come_back(kernel: Kernel, workspace: Path) -> None:
    kernel.run(
        "import pandas as pd\nsales = pd.DataFrame({'region': ['n', 's', 'n'], 'amount': [1.0, 2.0, 4.0]})\n"
        "result = 'the user keeps this'"
    )
    code = (
        "print('rows', len(sales))\n"
        "output_df = sales.groupby('region', as_index=False)['amount'].sum()\n"
        "result = float(sales['amount'].sum())"
    )
    out = kernel.outcome(code, workspace, save_as="totals")
    assert out["success"], out["error"]
    assert out["stdout"] == "rows 3\n" and out["result"] == 7.0
    assert out["has_dataframe"] and out["dataframe_preview"]["rows"] == [["n", 5.0], ["s", 2.0]]
    assert out["datasets_saved"] == ["totals"]
    assert pd.read_parquet(workspace / "datasets" / "totals.parquet")["amount"].tolist() == [5.0, 2.0]
    loaded = kernel.outcome("result = [df.shape[0], sorted(datasets)]", workspace, dataset_name="totals")
    assert loaded["result"] == [2, ["totals"]]
    # state persists between runs and is the notebook's: the user sees what the code defined
    kernel.outcome("by_region = sales.groupby('region')['amount'].sum().to_dict()", workspace)
    assert kernel.run("print(by_region, result)")["stdout"] == "{'n': 5.0, 's': 2.0} the user keeps this\n"


def test_the_notebooks_own_df_and_datasets_survive_a_run_with_a_dataset(kernel: Kernel, workspace: Path) -> None:
    kernel.run("df = 'the user df'\ndatasets = ['the user list']")
    kernel.outcome("import pandas as pd\noutput_df = pd.DataFrame({'v': [1, 2]})", workspace, save_as="vals")
    seen = kernel.outcome("result = [int(df['v'].sum()), sorted(datasets)]", workspace, dataset_name="vals")
    assert seen["result"] == [3, ["vals"]]  # the run sees the session's df and datasets
    assert kernel.run("print(df, datasets)")["stdout"] == "the user df ['the user list']\n"


def test_the_working_directory_and_sys_path_stay_the_notebooks(kernel: Kernel, workspace: Path) -> None:
    """Sandboxed steps write the workspace; the user's kernel never runs from it (issue 31)."""
    out = kernel.outcome("import os, sys\nresult = [os.getcwd(), [p for p in sys.path if 'workspace' in p]]", workspace)
    assert out["result"] == [str(kernel.cwd), []]
    assert kernel.run("import os\nprint(os.getcwd())")["stdout"].strip() == str(kernel.cwd)


def test_a_module_planted_in_the_workspace_is_never_imported(kernel: Kernel, workspace: Path) -> None:
    """What a sandboxed step left in the workspace (a module named like a common library) does not
    run when a later step of the same session, in the user's kernel, imports that library."""
    workspace.mkdir(parents=True, exist_ok=True)
    marker = workspace.parent / "planted-ran"
    (workspace / "nini_planted_lib.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\nplanted = True\n")
    out = kernel.outcome(
        "try:\n    import nini_planted_lib\n    result = 'imported'\nexcept ImportError:\n    result = 'not found'",
        workspace,
    )
    assert out["result"] == "not found"
    assert not marker.exists()


def test_links_planted_in_the_workspace_are_not_followed_by_the_kernel_side(
    kernel: Kernel, workspace: Path, tmp_path: Path
) -> None:
    """A link where nini's kernel side writes (charts, the pending list, a saved dataset) or reads
    (the dataset index, a dataset) is refused: nothing is written or read outside the workspace."""
    outside = tmp_path / "outside"
    outside.mkdir()
    kernel.outcome("import pandas as pd\noutput_df = pd.DataFrame({'v': [1]})", workspace, save_as="kept")
    (workspace / "artifacts").rename(workspace / "artifacts-was")
    (workspace / "artifacts").symlink_to(outside, target_is_directory=True)
    chart = kernel.outcome("import matplotlib.pyplot as plt\nplt.plot([1, 2])\nresult = 1", workspace, label="chart")
    assert chart["success"] and chart["artifacts"] == []
    assert "charts were not saved: 'artifacts' in the session workspace is a symbolic link" in chart["stderr"]
    (workspace / "artifacts").unlink()
    (workspace / "artifacts").mkdir()
    (workspace / "artifacts" / "pending.txt").symlink_to(outside / "pending.txt")
    listed = kernel.outcome(
        "import matplotlib.pyplot as plt\nplt.plot([3])", workspace, label="again", pending_file="artifacts/pending.txt"
    )
    assert listed["artifacts"] == [] and not (outside / "pending.txt").exists()
    (workspace / "datasets" / "sneaky@1-1-00000000.parquet").symlink_to(outside / "written.parquet")
    saved = kernel.outcome(
        "import pandas as pd\noutput_df = pd.DataFrame({'v': [2]})",
        workspace,
        save_as="sneaky",
        save_file="datasets/sneaky@1-1-00000000.parquet",
    )
    assert saved["datasets_saved"] == ["sneaky"] and not (outside / "written.parquet").exists()
    assert (workspace / "datasets" / "sneaky@1-1-00000000.parquet").is_file()  # the link was replaced, not followed
    secret = outside / "secret.parquet"
    pd.DataFrame({"secret": [739146825]}).to_parquet(secret)  # a number no duration or id holds by chance
    (workspace / "datasets" / "kept.parquet").unlink()
    (workspace / "datasets" / "kept.parquet").symlink_to(secret)
    read = kernel.outcome("result = int(datasets['kept']['secret'][0])", workspace)
    assert not read["success"] and "739146825" not in json.dumps(read)
    assert "symbolic link" in read["error"]["message"]
    assert list(outside.iterdir()) == [secret]


def test_unknown_dataset_is_refused_before_the_code_runs(kernel: Kernel, workspace: Path) -> None:
    out = kernel.outcome("marker_never_set = 1", workspace, dataset_name="absent")
    assert out["error"]["code"] == "NOT_FOUND"
    assert kernel.run("print('marker_never_set' in dir())")["stdout"] == "False\n"


# Code whose outcome must match the kernel path's (nini's own kernel, KernelPool).
SAME_AS_KERNEL = [
    pytest.param("result = {'n': 1}\nprint('hi')", {}, id="result-and-print"),
    pytest.param(
        "import pandas as pd\noutput_df = pd.DataFrame({'a': [1, 2]})\nresult = 2", {"save_as": "ab"}, id="save-as"
    ),
    pytest.param("import pandas as pd\nprint('printed')\npd.DataFrame({'col': [5]})", {}, id="last-expression"),
    pytest.param("x = 41\nx + 1;", {}, id="semicolon-hides-value"),
    pytest.param(
        "import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.figure()\nplt.bar(['a'], [1])",
        {"label": "Two Charts"},
        id="figures",
    ),
    pytest.param(
        "import matplotlib.pyplot as plt\nplt.plot([1])\nraise ValueError('late')",
        {"label": "partial"},
        id="figure-then-error",
    ),
    pytest.param(
        "from IPython.display import HTML, display\ndisplay(HTML('<b>bold</b>'))", {"label": "rich"}, id="rich-output"
    ),
    pytest.param("a = 1\nb = 0\nc = a / b\nd = 2", {}, id="zero-division"),
    pytest.param("def f():\n    return missing\n\nf()", {}, id="name-error"),
    pytest.param("x = 1\ny = (\nz = 3", {}, id="syntax-error"),
    pytest.param("if True:\nprint(1)", {}, id="indentation-error"),
    pytest.param("output_df = 3", {"save_as": "nope"}, id="save-as-without-a-frame"),
    pytest.param(
        "class Thing:\n    def __repr__(self):\n        return 'Thing()'\nresult = Thing()", {}, id="result-not-json"
    ),
    pytest.param(
        "import sys, warnings\nwarnings.warn('careful')\nprint('to stderr', file=sys.stderr)", {}, id="stderr"
    ),
]


def _comparable(outcome: dict[str, Any]) -> dict[str, Any]:
    contract = {k: outcome[k] for k in CONTRACT_KEYS if k != "duration_ms"}
    if contract["error"]:
        contract["error"] = {k: v for k, v in contract["error"].items() if k in ("code", "message", "line", "ename")}
    # a traceback names the cell by the shell's execution count, which differs between the kernels
    contract["stderr"] = re.sub(r"In\[\d+\]", "In[N]", contract["stderr"])
    contract["stderr"] = re.sub(r"/tmp/\S+", "PATH", contract["stderr"])
    return {**contract, "output_types": [o["output_type"] for o in outcome["outputs"]]}


# The kernel path's side of every case runs in one session of the pool, as every case runs in the one
# notebook kernel: a kernel start per case proved nothing more (no case reads what another left, and
# each label, and so each artifact's name, is used once)
CONTRACT_SESSION = new_session()


@pytest.mark.parametrize(("code", "request_args"), SAME_AS_KERNEL)
def test_the_contract_is_the_kernel_paths(
    kernel: Kernel, kernels: Kernels, tmp_path: Path, code: str, request_args: dict[str, Any]
) -> None:
    expected = kernels.run(code, CONTRACT_SESSION, **request_args)
    got = kernel.outcome(code, tmp_path / "workspace", **request_args)
    from dataclasses import asdict

    assert _comparable(got) == _comparable(asdict(expected))
    if got["error"] and got["error"].get("ename"):
        assert got["error"]["traceback"] and all("\x1b" not in t for t in got["error"]["traceback"])


def test_figures_are_files_and_closed_after_the_run(kernel: Kernel, workspace: Path) -> None:
    out = kernel.outcome("import matplotlib.pyplot as plt\nplt.plot([3, 1, 2])", workspace, label="line")
    assert [a["name"] for a in out["artifacts"]] == ["line.png", "line.svg"]
    assert (workspace / "artifacts" / "line.png").read_bytes().startswith(b"\x89PNG")
    assert kernel.run("import matplotlib.pyplot as plt\nprint(len(plt.get_fignums()))")["stdout"] == "0\n"


@pytest.mark.slow
@pytest.mark.parametrize("code", ["import time\ntime.sleep(30)", "while True:\n    pass"], ids=["sleep", "busy"])
def test_timeout_interrupts_the_code_and_the_kernel_carries_on(kernel: Kernel, workspace: Path, code: str) -> None:
    requests = [
        {"code": "state_before = 1\n" + code + "\nran_on = True", "timeout_s": 1},
        {"code": "result = state_before + 1"},
    ]
    (late, after), shown = kernel.outcomes(requests, workspace)
    assert late["error"]["code"] == "TIMEOUT" and "keeps its variables" in late["error"]["message"]
    assert late["duration_ms"] >= 900  # the limit was waited for; the code was stopped, not let end:
    assert kernel.run("print('ran_on' in globals())")["stdout"] == "False\n"
    assert after["success"] and after["result"] == 2
    assert shown["other_lines"] == [] and shown["errors"] == []
    assert kernel.run("print('alive')")["stdout"] == "alive\n"


@pytest.mark.slow
def test_code_that_ignores_the_interrupt_is_reported_stuck(kernel: Kernel, workspace: Path) -> None:
    code = (
        "import time\nend = time.time() + 6\nwhile time.time() < end:\n    try:\n        "
        "time.sleep(0.1)\n    except KeyboardInterrupt:\n        pass\nresult = 'late'"
    )
    (stuck, after), _shown = kernel.outcomes([{"code": code, "timeout_s": 1}, {"code": "result = 'next'"}], workspace)
    assert stuck["error"]["code"] == "TIMEOUT" and "may still be busy" in stuck["error"]["message"]
    assert after["result"] == "next"  # ran once the shell was free again


@pytest.mark.slow
def test_the_user_interrupting_the_cell_cancels_the_run(kernel: Kernel, workspace: Path) -> None:
    requests = [{"code": "import time\nprint('started')\ntime.sleep(30)"}, {"code": "result = 'after'"}]
    (canceled, after), shown = kernel.outcomes(requests, workspace, interrupt_after=2.0)
    assert shown["other_lines"] == ["NINI-INTERRUPTED"]
    assert canceled["error"]["code"] == "CANCELED" and canceled["stdout"] == "started\n"
    assert after["result"] == "after"  # serving again after the interrupt works
    assert kernel.run("print('alive')")["stdout"] == "alive\n"


@pytest.mark.slow
def test_canceling_the_caller_interrupts_the_code(kernel: Kernel, workspace: Path) -> None:
    requests = [{"code": "import time\ntime.sleep(30)\nslept = True"}, {"code": "result = 'next'"}]
    (canceled, after), shown = kernel.outcomes(requests, workspace, cancel_after=1.0)
    assert canceled is None and after["result"] == "next"
    assert kernel.run("print('slept' in globals())")["stdout"] == "False\n"  # interrupted, not waited for
    assert shown["other_lines"] == [] and shown["errors"] == []


def test_serve_refuses_other_threads() -> None:
    import concurrent.futures

    from nini.execution.inprocess import InProcessExecutor

    executor = InProcessExecutor(shell=object())
    failed: list[BaseException] = []

    def serve() -> None:
        try:
            executor.serve(concurrent.futures.Future())
        except RuntimeError as exc:
            failed.append(exc)

    thread = threading.Thread(target=serve)
    thread.start()
    thread.join(5)
    assert failed and "main thread" in str(failed[0])
