"""Outputs are capped as they arrive, through the real ``nini`` CLI: a huge display, a flood of
small ones, a raw message larger than the cap sent by hostile code on the kernel's own socket, a
huge R print. nini's own process (the CLI's, measured by its VmHWM) never holds an output whole,
the history database grows by at most the caps, and ``executions/`` replaced by a link keeps an
output once and has nothing written through it.

The caps are lowered (``execution.output_max_mb`` = 2, a 4 MiB run budget) so the sizes stay small.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from nini.config import Settings
from nini.execution.output_caps import MIB
from nini.execution.sandbox import probe_bwrap
from nini.history.store import HistoryStore
from nini.skills.builtin.run_r import r_status
from tests.execution.conftest import Kernels, make_kernels, new_session
from tests.timeouts import timeout

NINI = Path(sys.executable).with_name("nini")
OUTPUT_MAX = 2 * MIB
RUN_BUDGET = 4 * MIB
ENV = {
    "NINI_EXECUTION__OUTPUT_MAX_MB": "2",
    "NINI_EXECUTION__RUN_OUTPUTS_MAX_MB": "4",
    "NINI_UI__LANGUAGE": "en",
    "NINI_EXECUTION__PYTHON_POLICY": "off",
    "NINI_EXECUTION__SANDBOX": "bwrap",
}
OVERHEAD = 512 * 1024  # the rows, events and JSON around a run's outputs
# Sent with the kernel's own session and socket, past the cooperative cap on session.send
HOSTILE = (
    "from jupyter_client.session import Session\n"
    "k = get_ipython().kernel\n"
    "Session.send(k.session, k.iopub_socket, 'display_data', {'data': {'text/plain': 'x' * 64_000_000}, "
    "'metadata': {}}, parent=k.get_parent('shell'))\n"
    "print('still running')\n"
)
pytestmark = [
    pytest.mark.skipif(not probe_bwrap()[0], reason=f"no working bubblewrap: {probe_bwrap()[1]}"),
    pytest.mark.slow,
]


def nini(home: Path, *args: str, code: str) -> tuple[subprocess.CompletedProcess, int]:
    """Run the CLI with ``code`` on stdin; its result and the peak resident memory of its own
    process (VmHWM, a high-water mark: the last reading before it exits is its peak so far)."""
    env = {**os.environ, "NINI_HOME": str(home), **ENV}
    process = subprocess.Popen(
        [str(NINI), *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    streams: list[str] = []
    reader = threading.Thread(target=lambda: streams.extend(process.communicate(code, timeout=timeout(900))))
    reader.start()
    peak = 0
    while reader.is_alive():
        peak = max(peak, _vm_hwm(process.pid))
        reader.join(timeout=0.02)  # waits for the exit; reads the mark again at least every 20 ms
    return subprocess.CompletedProcess(process.args, process.returncode, *streams), peak


def _vm_hwm(pid: int) -> int:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:  # exited meanwhile
        return 0
    return next((int(line.split()[1]) * 1024 for line in status.splitlines() if line.startswith("VmHWM:")), 0)


def run_code(home: Path, session: str, code: str) -> tuple[dict[str, Any], int]:
    # a loaded machine may take a while over 20,000 displays: the run's own limit is not what is tested
    done, peak = nini(home, "run-code", "-", "--session", session, "--new", "--json", "--timeout", "600", code=code)
    assert done.returncode in (0, 1), done.stderr
    return json.loads(done.stdout), peak


def fresh_store(home: Path) -> int:
    """The size of a new history database, made without running anything: in this process, by the
    store the CLI opens (a precondition, not what is tested: a CLI start for it cost more than the store)."""
    HistoryStore(f"sqlite:///{home / 'nini.db'}").close()
    return db_size(home)


def db_size(home: Path) -> int:
    return sum(path.stat().st_size for path in home.glob("nini.db*") if path.name != "nini.db-shm")


def stored_text(home: Path) -> str:
    with sqlite3.connect(home / "nini.db") as db:
        return "\n".join(db.iterdump())


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> int:
    """The peak memory of the CLI running a step with a small output: what every run costs anyway."""
    home = tmp_path_factory.mktemp("baseline")
    code = "from IPython.display import display\ndisplay({'text/plain': 'x' * 1000}, raw=True)"
    result, peak = run_code(home, "small", code)
    assert result["success"], result
    return peak


def test_a_120_mb_display_never_enters_nini_whole(nini_home: Path, baseline: int) -> None:
    before = fresh_store(nini_home)
    code = "from IPython.display import display\ndisplay({'text/plain': 'x' * 120_000_000}, raw=True)\nprint('after')"
    result, peak = run_code(nini_home, "big", code)
    assert result["success"], result
    stdout = result["result"]["stdout"]
    assert "execution.output_max_mb" in stdout and "114.4 MiB" in stdout  # the size it had, in the preview
    assert len(stdout) < 10_000 and stdout.endswith("after\n")
    assert peak < baseline + 3 * OUTPUT_MAX + 32 * MIB, (peak, baseline)
    assert db_size(nini_home) - before <= OUTPUT_MAX + OVERHEAD


def test_20000_html_displays_keep_at_most_the_run_budget(nini_home: Path) -> None:
    before = fresh_store(nini_home)
    code = (
        "from IPython.display import HTML, display\n"
        "for i in range(20_000):\n    display(HTML('<table>' + '<tr><td>%d</td></tr>' % i * 100 + '</table>'))\n"
    )
    result, _ = run_code(nini_home, "flood", code)
    assert result["success"], result
    stderr = result["result"]["stderr"]
    # the run's note (the kernel's own count, read back with the result) says outputs were left out and
    # names the budget; the marker in the stream where they stopped travels on iopub, which drops messages
    # past its high-water mark when nini reads slower than the flood comes (a loaded machine): not required
    assert "was not kept" in stderr and "execution.run_outputs_max_count" in stderr, stderr
    assert db_size(nini_home) - before <= RUN_BUDGET + OVERHEAD


def test_a_raw_message_over_the_cap_is_refused_before_nini_reads_it(nini_home: Path, baseline: int) -> None:
    result, peak = run_code(nini_home, "hostile", HOSTILE)
    assert not result["success"]
    error = result["error"]
    assert error["code"] == "TOO_LARGE" and "execution.output_max_mb" in error["message"], error
    assert "Traceback" not in json.dumps(result) and str(nini_home) not in error["message"]
    assert peak < baseline + 3 * OUTPUT_MAX + 32 * MIB, (peak, baseline)
    shown, _ = nini(nini_home, "sessions", "show", "hostile", "--json", code="")
    calls = json.loads(shown.stdout)["tool_calls"]
    assert [(c["status"], c["error_code"]) for c in calls] == [("failed", "TOO_LARGE")]  # the record is kept


def test_a_link_planted_as_executions_keeps_an_output_once_and_gets_nothing(nini_home: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    lines = 60_000  # about 1.5 MB: under the output cap, far over what the record keeps of a copy
    code = (
        "import os, shutil\n"
        "shutil.rmtree('executions', ignore_errors=True)\n"
        f"os.symlink({str(outside)!r}, 'executions')\n"
        f"for i in range({lines}):\n    print(f'line-{{i:07d}}-' + 'z' * 12)\n"
    )
    before = fresh_store(nini_home)
    result, _ = run_code(nini_home, "linked", code)
    assert result["success"], result
    assert list(outside.iterdir()) == []
    middle = f"line-{lines // 2:07d}-"
    assert stored_text(nini_home).count(middle) == 1  # kept whole once: not in the call's result, nor its outputs
    assert db_size(nini_home) - before <= lines * 26 + OVERHEAD


@pytest.mark.skipif(not r_status(Settings())[0], reason="R is not available")
def test_a_huge_r_print_is_capped(nini_home: Path) -> None:
    before = fresh_store(nini_home)
    done, _ = nini(
        nini_home,
        "run-r",
        "-",
        "--session",
        "rprint",
        "--new",
        "--json",
        code='cat(strrep("x", 50000000))\ncat("\\ndone\\n")\nresult <- 1\n',
    )
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    result = answer["result"]
    assert result["success"] and result["result"] == 1 and "execution.output_max_mb" in result["stdout"]
    # the whole stdout nini kept (in the workspace): the cap, not the 50 MB printed
    whole = nini_home / "sessions" / "rprint" / "workspace" / "executions" / answer["execution_id"] / "stdout.txt"
    assert OUTPUT_MAX < whole.stat().st_size <= OUTPUT_MAX + 1000
    assert db_size(nini_home) - before <= OVERHEAD


@pytest.fixture(scope="module")
def kernels(event_loop_for_module: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    yield from make_kernels(event_loop_for_module, tmp_path_factory.mktemp("kernels"), sandbox="bwrap", output_max_mb=1)


def test_after_a_refused_message_the_session_gets_a_fresh_kernel(kernels: Kernels) -> None:
    session = new_session()
    assert kernels.run("kept = 1", session).success
    refused = kernels.run(HOSTILE, session)
    assert refused.error is not None and refused.error["code"] == "TOO_LARGE"
    assert "the kernel was restarted" in refused.error["message"]
    after = kernels.run("print('fresh', 'kept' in dir())", session)
    assert after.success and after.stdout == "fresh False\n"
