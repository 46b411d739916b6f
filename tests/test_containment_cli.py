"""Attacks on the sandbox through the real ``nini`` CLI: agent code tries every trick it can from
inside ``run_code`` / ``run_r_code``, and the host is checked afterwards.

The static policy is switched off (``NINI_EXECUTION__PYTHON_POLICY=off``) for the Python attacks:
what is proven here is the operating-system boundary, which must hold for code the policy misses.
Network probes only target sockets this test made; nothing leaves the machine.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from nini.execution.sandbox import probe_bwrap
from nini.skills.builtin.run_r import r_status

NINI = Path(sys.executable).with_name("nini")
pytestmark = [
    pytest.mark.skipif(not probe_bwrap()[0], reason=f"no working bubblewrap: {probe_bwrap()[1]}"),
    pytest.mark.slow,
]


def nini(
    *args: str, code: str | None = None, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess:
    environment = {
        **os.environ,
        "NINI_EXECUTION__PYTHON_POLICY": "off",
        "NINI_EXECUTION__SANDBOX": "bwrap",
        **(env or {}),
    }
    return subprocess.run(
        [str(NINI), *args], input=code, capture_output=True, text=True, timeout=timeout, env=environment
    )


def run_code(session: str, code: str, **env: str) -> dict[str, Any]:
    done = nini("run-code", "-", "--session", session, "--new", "--json", code=code, env=env)
    assert done.returncode in (0, 1, 2), done.stderr
    return json.loads(done.stdout)


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A host folder agent code points its links at; it must stay empty."""
    folder = tmp_path / "outside"
    folder.mkdir()
    return folder


def test_links_planted_by_agent_code_never_lead_nini_outside(outside: Path, nini_home: Path) -> None:
    session = "links"
    plant = (
        "import os, shutil\n"
        f"for name in ('executions', 'artifacts', 'reports', 'uploads'):\n"
        "    if os.path.isdir(name): shutil.rmtree(name)\n"
        f"    os.symlink({str(outside)!r}, name)\n"
        "result = sorted(os.listdir('.'))\n"
    )
    planted = run_code(session, plant)
    assert planted["success"], planted
    # a long output (written to executions/ by nini), a rich output (artifacts/ by nini)
    noisy = run_code(
        session, "from IPython.display import HTML, display\ndisplay(HTML('<b>x</b>'))\nprint('y' * 20000)"
    )
    assert noisy["success"] and noisy["result"]["stdout"].startswith("yyyy")
    assert "rich output not saved" in noisy["result"]["stderr"] and "link" in noisy["result"]["stderr"]
    report = nini("report", "--session", session)
    assert report.returncode == 2 and "POLICY_VIOLATION" in report.stderr and "reports" in report.stderr
    exported = nini("sessions", "export", session, "--format", "ipynb", "--out", str(outside.parent / "s.ipynb"))
    assert exported.returncode == 0, exported.stderr
    assert list(outside.iterdir()) == []
    shown = json.loads(nini("sessions", "show", session, "--json").stdout)
    assert [c["status"] for c in shown["tool_calls"]] == ["succeeded", "succeeded"]  # both runs recorded


def test_what_the_host_hides_stays_hidden(tmp_path: Path) -> None:
    folder = Path(tempfile.mkdtemp(prefix="nini-sock-", dir="/var/tmp"))
    folder.chmod(0o755)
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(folder / "host.sock"))
    os.chmod(folder / "host.sock", 0o777)
    server.listen()
    try:
        code = (
            "import os, socket, json\nfound = {}\n"
            "for path in ('/etc/shadow', '/etc/gshadow', '/root/.ssh', '/var/lib', '/run', '/home'):\n"
            "    found[path] = os.path.exists(path)\n"
            "s = socket.socket(socket.AF_UNIX)\n"
            f"try:\n    s.connect({str(folder / 'host.sock')!r})\n    found['socket'] = 'connected'\n"
            "except OSError as exc:\n    found['socket'] = type(exc).__name__\n"
            "try:\n    open('/etc/shadow').read()\n    found['shadow_read'] = True\n"
            "except OSError:\n    found['shadow_read'] = False\n"
            "result = found\n"
        )
        out = run_code("hidden", code)
    finally:
        server.close()
        (folder / "host.sock").unlink()
        folder.rmdir()
    assert out["success"], out
    found = out["result"]["result"]
    assert found.pop("socket") in ("FileNotFoundError", "ConnectionRefusedError", "PermissionError")
    assert found == {
        "/etc/shadow": False,
        "/etc/gshadow": False,
        "/root/.ssh": False,
        "/var/lib": False,
        "/run": False,
        "/home": False,
        "shadow_read": False,
    }


def test_no_python_spelling_runs_a_program(tmp_path: Path) -> None:
    code = (
        "import os, pkgutil, ctypes\nimport pandas as pd\nstatus = {}\n"
        "status['os.system'] = os.system('id > pwned-1.txt')\n"
        "status['pandas'] = pd.io.common.os.system('id > pwned-2.txt')\n"
        "try:\n    pkgutil.resolve_name('subprocess:check_output')(['id'])\n    status['resolve_name'] = 'ran'\n"
        "except OSError as exc:\n    status['resolve_name'] = type(exc).__name__\n"
        "status['libc'] = ctypes.CDLL(None).system(b'id > pwned-3.txt')\n"
        "try:\n    os.posix_spawn('/usr/bin/id', ['id'], {})\n    status['posix_spawn'] = 'ran'\n"
        "except OSError as exc:\n    status['posix_spawn'] = type(exc).__name__\n"
        "import sys, subprocess\n"
        "try:\n    subprocess.run([sys.executable, '-c', 'print(2 + 2)'])\n    status['python_again'] = 'ran'\n"
        "except OSError as exc:\n    status['python_again'] = type(exc).__name__\n"
        "result = status\n"
    )
    out = run_code("exec", code)
    assert out["success"], out
    status = out["result"]["result"]
    assert status["os.system"] != 0 and status["pandas"] != 0 and status["libc"] != 0
    assert status["resolve_name"] == "PermissionError" and status["posix_spawn"] == "PermissionError"
    assert status["python_again"] == "PermissionError"  # not even the interpreter (pools fork instead)
    assert "uid=" not in out["result"]["stdout"]


# Agent code forking children that live 2 s until fork fails: ``children`` (forked) and ``stopped``
# (the errno that stopped it: EAGAIN at a process limit).
FORK_FLOOD = (
    "import os, time\nchildren, stopped = [], None\n"
    "for _ in range(1000):\n"
    "    try:\n        pid = os.fork()\n    except OSError as exc:\n        stopped = exc.errno\n        break\n"
    "    if pid == 0:\n        time.sleep(2)\n        os._exit(0)\n"
    "    children.append(pid)\n"
    "for pid in children:\n    os.waitpid(pid, 0)\n"
)


def test_limits_hold_through_the_cli(tmp_path: Path) -> None:
    code = FORK_FLOOD + (
        "filled, full = 0, None\n"
        "try:\n    with open('/tmp/fill', 'wb') as f:\n        for _ in range(100):\n"
        "            f.write(b'x' * (1 << 20))\n            f.flush()\n            filled += 1\n"
        "except OSError as exc:\n    full = exc.errno\n"
        "result = [len(children), stopped, filled, full]\n"
    )
    out = run_code("limits", code, NINI_EXECUTION__TMP_SIZE_MB="16", NINI_EXECUTION__MAX_PROCESSES="32")
    assert out["success"], out
    forked, stopped, filled, full = out["result"]["result"]
    assert stopped == 11 and forked < 32  # EAGAIN at the process limit
    assert full == 28 and filled <= 16  # ENOSPC at the size of /tmp


def test_a_workspace_over_its_quota_refuses_more_runs(tmp_path: Path) -> None:
    env = {"NINI_EXECUTION__WORKSPACE_QUOTA_MB": "16"}
    code = "for n in range(3):\n    open(f'part-{n}.bin', 'wb').write(b'x' * (7 << 20))\n"
    first = run_code("quota", code, **env)  # goes over: stopped (disk_watch), or done before the watch saw it
    assert first["success"] or first["error"]["code"] == "TOO_LARGE", first
    refused = nini("run-code", "-", "--session", "quota", "--new", code="print(1)", env=env)
    assert refused.returncode == 1 and "TOO_LARGE" in refused.stderr and "workspace_quota_mb" in refused.stderr
    big = run_code("quota2", "open('big.bin', 'wb').write(b'x' * (20 << 20))", **env)  # RLIMIT_FSIZE: 16 MiB
    assert not big["success"] and ("File too large" in big["error"]["message"] or big["error"]["code"] == "TOO_LARGE")


@pytest.mark.skipif(
    not r_status(__import__("nini.config", fromlist=["Settings"]).Settings())[0], reason="R unavailable"
)
def test_r_finds_no_way_to_run_a_program(tmp_path: Path, nini_home: Path) -> None:
    code = (
        'p <- tryCatch({ pdf(file = "|id > pwned-pdf.txt"); plot(1); dev.off(); "opened" },\n'
        '              error = function(e) "refused")\n'
        "result <- list(pdf = p, files = list.files(pattern = 'pwned'))\n"
    )
    done = nini("run-r", "-", "--session", "rexec", "--new", "--json", code=code)
    out = json.loads(done.stdout)
    workspace = nini_home / "sessions" / "rexec" / "workspace"
    assert not list(workspace.glob("pwned*"))
    if out["success"]:
        assert out["result"]["result"]["files"] == []
    else:  # the static policy refused the pipe first: also fine, nothing ran
        assert out["error"]["code"] in ("POLICY_VIOLATION", "CODE_ERROR")
