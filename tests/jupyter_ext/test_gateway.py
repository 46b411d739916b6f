"""Agent kernels on a Jupyter Kernel Gateway: a real ``jupyter kernelgateway`` (with a token) and a
real ``jupyter server --gateway-url`` with nini, both child processes on 127.0.0.1 (tests/gateway_lab.py).

run-code runs in a kernel the gateway started (the kernel is the gateway's child), the workspace's
datasets and charts cross the kernel protocol both ways, a timeout interrupts through the gateway,
a killed kernel is KERNEL_DIED and the next call gets a fresh one; R stays the server's own, and a
server without R says so. The static policy is off on this server: the kill needs ``os``, and the
policy is not what this file tests.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from nini.execution.gateway import host_of
from nini.history.store import HistoryStore
from tests.gateway_lab import GatewayLab, gateway_lab
from tests.timeouts import timeout

NINI = str(Path(sys.executable).with_name("nini"))


@pytest.fixture(scope="module")
def lab() -> Iterator[GatewayLab]:
    with gateway_lab(server_env={"NINI_EXECUTION__PYTHON_POLICY": "off"}) as running:
        yield running


def workspace(lab: GatewayLab, session_id: str) -> Path:
    return lab.home / "sessions" / session_id / "workspace"


@pytest.mark.slow
def test_run_code_runs_in_a_kernel_the_gateway_started(lab: GatewayLab) -> None:
    session_id = lab.new_session()
    before = {k["id"] for k in lab.gateway_kernels()}
    reply = lab.run_code(session_id, "import os\nprint(os.getcwd())\nresult = [os.getpid(), os.getppid()]")
    assert reply["success"], reply["error"]
    pid, parent = reply["result"]["result"]
    assert parent == lab.gateway.pid  # the gateway's child, not the server's
    assert len({k["id"] for k in lab.gateway_kernels()} - before) == 1
    cwd = reply["result"]["stdout"].strip()  # a folder of the kernel's own, not the server's workspace
    assert Path(cwd).name.startswith("nini-workspace-") and not Path(cwd).is_relative_to(lab.home)
    assert reply["isolation"] == "gateway" and reply["gateway"] == lab.gateway_host
    store = HistoryStore(f"sqlite:///{lab.home / 'nini.db'}")  # the session record says where it ran
    try:
        executions = store.list_events(session_id, types=["code_execution"])
    finally:
        store.close()
    assert [(e["data"]["isolation"], e["data"]["gateway"]) for e in executions] == [("gateway", lab.gateway_host)]


@pytest.mark.slow
def test_datasets_and_charts_cross_the_kernel_protocol(lab: GatewayLab) -> None:
    session_id = lab.new_session()
    made = lab.run_code(
        session_id,
        "import pandas as pd\nimport matplotlib.pyplot as plt\n"
        "output_df = pd.DataFrame({'a': range(200_000)})\nplt.plot([1, 3, 2])",
        save_as="numbers",
        label="line",
    )
    assert made["success"], made["error"]
    assert made["result"]["datasets_saved"] == ["numbers"]
    assert [a["path"] for a in made["result"]["artifacts"]] == ["artifacts/line.png", "artifacts/line.svg"]
    chart = workspace(lab, session_id) / "artifacts" / "line.png"
    assert chart.read_bytes().startswith(b"\x89PNG")  # brought back to the server's workspace
    second = lab.run_code(
        session_id, "plt.plot([1])\nresult = int(df['a'].sum())", dataset_name="numbers", label="line"
    )
    assert second["success"], second["error"]
    assert second["result"]["result"] == sum(range(200_000))
    # the server's line.png is not overwritten: the kernel knew the name was taken
    assert [a["name"] for a in second["result"]["artifacts"]] == ["line-2.png", "line-2.svg"]
    assert chart.read_bytes().startswith(b"\x89PNG") and (chart.parent / "line-2.png").is_file()


@pytest.mark.slow
def test_a_timeout_interrupts_the_gateway_kernel_which_keeps_its_variables(lab: GatewayLab) -> None:
    session_id = lab.new_session()
    assert lab.run_code(session_id, "kept = 41")["success"]
    stopped = lab.run_code(session_id, "while True:\n    pass", timeout_s=2)
    assert (
        stopped["error"]["code"] == "TIMEOUT"
        and "was interrupted and keeps its variables" in stopped["error"]["message"]
    )
    after = lab.run_code(session_id, "result = kept + 1")
    assert after["success"] and after["result"]["result"] == 42


@pytest.mark.slow
def test_a_killed_gateway_kernel_is_kernel_died_and_the_next_call_gets_a_fresh_one(lab: GatewayLab) -> None:
    session_id = lab.new_session()
    first = lab.run_code(
        session_id,
        "import os\nimport pandas as pd\nkept = 1\nresult = os.getpid()\noutput_df = pd.DataFrame({'a': [1, 2]})",
        save_as="survivor",
    )
    assert first["success"], first["error"]
    died = lab.run_code(session_id, "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)")
    assert died["success"] is False and died["error"]["code"] == "KERNEL_DIED"
    assert "variables and imports were lost" in died["error"]["message"]
    after = lab.run_code(
        session_id, "import os\nresult = ['kept' in dir(), os.getpid(), int(df['a'].sum())]", dataset_name="survivor"
    )
    assert after["success"], after["error"]
    fresh, pid, total = after["result"]["result"]
    assert fresh is False and pid != first["result"]["result"] and total == 3  # the dataset is sent to the new kernel


@pytest.mark.slow
def test_r_runs_on_the_server_and_a_server_without_r_says_so(lab: GatewayLab) -> None:
    session_id = lab.new_session()
    status, body = lab.call("POST", f"sessions/{session_id}/run-r-code", {"code": "x <- 1"})
    assert status == 503 and body["error"]["code"] == "R_UNAVAILABLE"
    message = body["error"]["message"]
    assert f"R runs on this Jupyter server itself (not on the gateway at {lab.gateway_host}" in message
    assert "R is not on PATH" in message  # the server's PATH has no R (gateway_lab)


@pytest.mark.parametrize(
    ("url", "host"),
    [
        ("http://127.0.0.1:8888", "127.0.0.1:8888"),
        ("https://alice:secret@gateway.example.org/prefix?token=abc", "gateway.example.org"),
        ("http://[::1]:9000/", "[::1]:9000"),
    ],
)
def test_the_gateway_is_named_by_host_without_credentials(url: str, host: str) -> None:
    assert host_of(url) == host


def _nini(*args: str, tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("NINI_", "JUPYTER_"))}
    base.update(NINI_HOME=str(tmp_path / "home"), JUPYTER_CONFIG_DIR=str(tmp_path / "config"), **env)
    return subprocess.run([NINI, *args], env=base, capture_output=True, text=True, timeout=timeout(300), cwd=tmp_path)


def test_doctor_says_kernels_run_on_the_configured_gateway(tmp_path: Path) -> None:
    done = _nini("doctor", "--json", tmp_path=tmp_path, JUPYTER_GATEWAY_URL="http://kg:s3cret@127.0.0.1:8765/base")
    checks = {c["name"]: c for c in json.loads(done.stdout)}
    detail = checks["kernels"]["detail"]
    assert checks["kernels"]["ok"] and "run on the gateway at 127.0.0.1:8765" in detail
    assert "the sandbox there is the gateway's" in detail and "s3cret" not in done.stdout
    local = _nini(
        "doctor",
        "--json",
        tmp_path=tmp_path,
        NINI_EXECUTION__KERNELS="local",
        JUPYTER_GATEWAY_URL="http://127.0.0.1:8765",
    )
    assert "run on this machine" in {c["name"]: c for c in json.loads(local.stdout)}["kernels"]["detail"]


def test_kernels_gateway_without_a_gateway_is_refused_clearly(tmp_path: Path) -> None:
    (tmp_path / "step.py").write_text("result = 1\n")
    done = _nini("run-code", "step.py", tmp_path=tmp_path, NINI_EXECUTION__KERNELS="gateway")
    assert done.returncode == 1
    assert "execution.kernels is 'gateway' but nini does not run inside a Jupyter server started with a gateway" in (
        done.stdout + done.stderr
    )
