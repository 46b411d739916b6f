"""Limits with real kernels: timeouts (interrupt, then restart), dead kernels, the memory limit."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from nini.execution import confine

from .conftest import Kernels, new_session


def test_timeout_interrupts_and_keeps_state(kernels: Kernels) -> None:
    session = new_session()
    kernels.run("kept = 'yes'", session)
    out = kernels.run("while True:\n    pass", session, timeout_s=2)
    assert not out.success
    assert out.error["code"] == "TIMEOUT"
    assert "2 s" in out.error["message"] and "keeps its variables" in out.error["message"]
    assert kernels.run("print(kept)", session).stdout == "yes\n"
    assert kernels.pool.kernel_info(session)["restarts"] == 0


def test_timeout_keeps_output_printed_before_it(kernels: Kernels) -> None:
    # the shared session (no test here needs its kernel fresh): an interrupted run leaves the kernel as it was
    out = kernels.run("import time\nprint('started', flush=True)\ntime.sleep(30)", timeout_s=1)
    assert out.error["code"] == "TIMEOUT"
    assert out.stdout == "started\n"


@pytest.mark.slow
def test_timeout_restarts_a_kernel_that_ignores_the_interrupt(kernels: Kernels) -> None:
    session = new_session()
    kernels.run("kept = 1", session)
    stubborn = (
        "while True:\n    try:\n        while True:\n            pass\n    except KeyboardInterrupt:\n        pass"
    )
    out = kernels.run(stubborn, session, timeout_s=1)  # it never ends: returning at all is the restart
    assert out.error["code"] == "TIMEOUT"
    assert "restarted" in out.error["message"] and "lost" in out.error["message"]
    assert kernels.pool.kernel_info(session)["restarts"] == 1
    assert kernels.run("print('kept' in dir())", session).stdout == "False\n"


@pytest.mark.parametrize(
    "code",
    ["import os\nos._exit(1)", "import ctypes\nctypes.string_at(0)"],
    ids=["exit", "segfault"],
)
def test_dead_kernel_is_reported_and_replaced(kernels: Kernels, code: str) -> None:
    session = new_session()
    kernels.run("import pandas as pd\nkept = 1\noutput_df = pd.DataFrame({'a': [1]})", session, save_as="survivor")
    out = kernels.run(code, session)
    assert not out.success
    assert out.error["code"] == "KERNEL_DIED"
    assert "lost" in out.error["message"] and "kept" in out.error["message"]
    assert kernels.pool.kernel_info(session)["restarts"] == 1
    after = kernels.run("print('kept' in dir())", session, dataset_name="survivor")
    assert after.success, after.error
    assert after.stdout == "False\n"  # a new kernel, with the prelude run again (df loaded)


def test_memory_limit_stops_a_huge_allocation(kernels: Kernels) -> None:
    out = kernels.run("block = bytearray(3 * 1024**3)", new_session())
    assert not out.success
    assert out.error["code"] in ("CODE_ERROR", "KERNEL_DIED")
    if out.error["code"] == "CODE_ERROR":
        assert out.error["ename"] == "MemoryError"


def test_data_stack_works_under_the_default_memory_limit(kernels: Kernels) -> None:
    code = (
        "import numpy as np, pandas as pd, pyarrow as pa, matplotlib.pyplot as plt, resource\n"
        "frame = pd.DataFrame({'a': np.arange(2_000_000), 'b': np.random.rand(2_000_000)})\n"
        "frame.to_parquet('big.parquet')\n"
        "back = pd.read_parquet('big.parquet')\n"
        "plt.plot(back['a'][:1000], back['b'][:1000])\n"
        "result = [resource.getrlimit(resource.RLIMIT_AS)[0], pa.default_memory_pool().backend_name, len(back)]\n"
    )
    out = kernels.run(code, label="under-limit")
    assert out.success, out.error
    assert out.result == [2048 * 1024**2, "system", 2_000_000]
    assert len(out.artifacts) == 2


def test_confine_sets_the_limit_and_runs_the_module_in_its_own_process(tmp_path: Path) -> None:
    (tmp_path / "probe_limits.py").write_text(
        "import os, resource, sys\nprint(resource.getrlimit(resource.RLIMIT_AS)[0], os.getpid(), sys.argv[1:])\n"
    )
    cmd = confine.command([sys.executable, "-m", "probe_limits", "a", "b"], memory_bytes=1024**3, sandboxed=False)
    proc = subprocess.run(
        cmd, capture_output=True, text=True, check=True, env={**os.environ, "PYTHONPATH": str(tmp_path)}
    )
    limit, _pid, argv = proc.stdout.split(maxsplit=2)
    assert int(limit) == 1024**3
    assert argv.strip() == "['a', 'b']"
    assert resource.getrlimit(resource.RLIMIT_AS)[0] != 1024**3  # this process is untouched


def test_confine_usage_error() -> None:
    cmd = confine.command([sys.executable, "-m", "x"], memory_bytes=1024**3, sandboxed=False)
    proc = subprocess.run(cmd[:-3], capture_output=True, text=True)
    assert proc.returncode == 2 and "-m MODULE" in proc.stderr
