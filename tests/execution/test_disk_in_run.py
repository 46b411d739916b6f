"""The workspace budget (bytes and files) holds during a run, through the real ``nini`` CLI: fallocate,
an inode flood, sparse files and R writing past the quota are stopped with TOO_LARGE, the stopped or
refused run is recorded, and once files are removed the session runs again.

Limits are lowered through ``NINI_*`` settings so that each attack is stopped after a few hundred MiB
or a few thousand files; the static policy is off (``os`` is what the attacks use): what is proven
is the run-time watch (``nini.execution.disk_watch``).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from nini.config import Settings
from nini.execution.sandbox import probe_bwrap
from nini.skills.builtin.run_r import r_status
from tests.timeouts import timeout

NINI = Path(sys.executable).with_name("nini")
pytestmark = [
    pytest.mark.skipif(not probe_bwrap()[0], reason=f"no working bubblewrap: {probe_bwrap()[1]}"),
    pytest.mark.slow,
]
MiB = 1 << 20
# 200,000 empty files in the folder {0}
FLOOD = "import os\nos.makedirs('{0}', exist_ok=True)\nfor n in range(200_000):\n    open(f'{0}/f{{n}}', 'w').close()\n"


def nini(*args: str, code: str | None = None, **env: str) -> subprocess.CompletedProcess:
    environment = {
        **os.environ,
        "NINI_EXECUTION__PYTHON_POLICY": "off",
        "NINI_EXECUTION__SANDBOX": "bwrap",
        "NINI_UI__LANGUAGE": "en",
        **env,
    }
    return subprocess.run(
        [str(NINI), *args], input=code, capture_output=True, text=True, timeout=timeout(180), env=environment
    )


def run(command: str, session: str, code: str, **env: str) -> dict[str, Any]:
    done = nini(command, "-", "--session", session, "--new", "--json", code=code, **env)
    assert done.returncode in (0, 1, 2), done.stderr
    return json.loads(done.stdout)


def held(folder: Path) -> tuple[int, int]:
    """Bytes (allocated) and entries beneath ``folder``."""
    blocks = entries = 0
    for _where, dirs, files in os.walk(folder):
        for name in dirs + files:
            entries += 1
            blocks += os.lstat(os.path.join(_where, name)).st_blocks * 512
    return blocks, entries


def alive(pid: int, workspace: Path) -> bool:
    """Whether the sandbox ``pid`` (bwrap) still runs, or any process of the workspace's owner (a
    root nini's session uid) does."""
    if os.path.exists(f"/proc/{pid}"):
        return True
    owner = os.stat(workspace).st_uid
    if owner == os.getuid():
        return False
    for entry in os.listdir("/proc"):
        try:
            status = Path(f"/proc/{entry}/status").read_text()
        except OSError:
            continue
        if any(line.split()[1:2] == [str(owner)] for line in status.splitlines() if line.startswith("Uid:")):
            return True
    return False


def test_fallocate_far_past_the_quota_stops_at_the_quota(nini_home: Path) -> None:
    env = {"NINI_EXECUTION__WORKSPACE_QUOTA_MB": "64"}
    code = (
        "import os\nmade = 0\n"
        "for n in range(16):  # 16 x 64 MiB: 1 GiB, 16 times the quota\n"
        "    fd = os.open(f'alloc-{n}.bin', os.O_CREAT | os.O_WRONLY, 0o644)\n"
        "    try:\n        os.posix_fallocate(fd, 0, 64 << 20)\n        made += 1\n"
        "    finally:\n        os.close(fd)\n"
        "result = made\n"
    )
    out = run("run-code", "alloc", code, **env)
    assert not out["success"] and out["error"]["code"] == "TOO_LARGE", out
    assert "workspace_quota_mb" in out["error"]["message"] and "64 MiB" in out["error"]["message"]
    allocated, _ = held(nini_home / "sessions" / "alloc" / "workspace")
    assert 64 * MiB <= allocated < 256 * MiB  # stopped near the quota, far from the 1 GiB asked for


def test_a_flood_of_files_stops_at_the_file_limit_and_both_runs_are_recorded(nini_home: Path) -> None:
    env = {"NINI_EXECUTION__WORKSPACE_MAX_FILES": "3000"}
    out = run("run-code", "flood", FLOOD.format("flood"), **env)
    assert not out["success"] and out["error"]["code"] == "TOO_LARGE", out
    assert "workspace_max_files" in out["error"]["message"] and "3,000" in out["error"]["message"]
    assert "interrupted and keeps its variables" in out["error"]["message"]
    workspace = nini_home / "sessions" / "flood" / "workspace"
    _, entries = held(workspace)
    assert 3000 < entries < 100_000  # stopped soon after the limit, long before the 200,000

    refused = run("run-code", "flood", "print('more')", **env)  # at its budget: no code runs
    assert refused["error"]["code"] == "TOO_LARGE" and "3,000" in refused["error"]["message"]
    assert "delete files" in refused["error"]["message"]
    shown = nini("sessions", "show", "flood", "--json")
    recorded = json.loads(shown.stdout)
    assert [(c["status"], c["error_code"]) for c in recorded["tool_calls"]] == [("failed", "TOO_LARGE")] * 2
    [execution] = recorded["executions"]  # the stopped run, with its code; the refused one never ran
    assert execution["status"] == "failed" and "flood/f" in execution["code"]


def test_sparse_files_count_for_the_size_they_claim(nini_home: Path) -> None:
    env = {"NINI_EXECUTION__WORKSPACE_QUOTA_MB": "64"}
    code = (
        "import os, time\nrefused = []\n"
        "try:\n    with open('huge.bin', 'wb') as f:\n        f.truncate(1 << 40)\n"
        "except OSError as exc:\n    refused.append(exc.errno)\n"
        "try:\n    with open('far.bin', 'wb') as f:\n        f.seek(1 << 40)\n        f.write(b'x')\n"
        "except OSError as exc:\n    refused.append(exc.errno)\n"
        "print(refused)\n"
        "for n in range(64):  # holes only: 64 x 48 MiB claimed, nothing written\n"
        "    with open(f'hole-{n}.bin', 'wb') as f:\n        f.truncate(48 << 20)\n"
        "time.sleep(100)\n"
    )
    done = nini("run-code", "-", "--session", "sparse", "--new", "--json", "--timeout", "120", code=code, **env)
    out = json.loads(done.stdout)
    assert f"[{27}, {27}]" in out["result"]["stdout"]  # EFBIG: no file may claim more than the quota
    assert out["error"]["code"] == "TOO_LARGE", out  # stopped by the watch, not by the timeout
    assert "workspace_quota_mb" in out["error"]["message"]


@pytest.mark.skipif(not r_status(Settings())[0], reason="R unavailable")
def test_r_writing_past_the_quota_is_stopped(nini_home: Path) -> None:
    env = {"NINI_EXECUTION__WORKSPACE_QUOTA_MB": "64"}
    code = (
        "chunk <- raw(1024 * 1024)\n"
        "for (i in 1:2048) {  # 2 GiB in 1 MiB files, 32 times the quota\n"
        "  con <- file(sprintf('fill-%d.bin', i), 'wb')\n  writeBin(chunk, con)\n  close(con)\n}\n"
        "result <- 'all written'\n"
    )
    out = run("run-r", "rfill", code, **env)
    assert not out["success"] and out["error"]["code"] == "TOO_LARGE", out
    assert "R worker was restarted" in out["error"]["message"] and "workspace_quota_mb" in out["error"]["message"]
    workspace = nini_home / "sessions" / "rfill" / "workspace"
    written, _ = held(workspace)
    assert 64 * MiB <= written < 1024 * MiB
    for path in workspace.glob("fill-*.bin"):
        path.unlink()
    again = run("run-r", "rfill", "result <- 6 * 7", **env)
    assert again["success"] and again["result"]["result"] in (42, [42]), again


def test_the_kernel_keeps_its_variables_and_a_writer_left_running_is_stopped(
    nini_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In one process (as a Jupyter server keeps its kernels): a stopped run leaves the kernel
    usable, with its variables, once files are removed; a thread the code left writing after its run
    ended is stopped by the guard between runs (the kernel with it), and the next run says why."""
    from nini.config import load_settings
    from nini.runtime import Runtime
    from nini.skills.invoke import invoke

    for key, value in {"PYTHON_POLICY": "off", "SANDBOX": "bwrap", "WORKSPACE_MAX_FILES": "1000"}.items():
        monkeypatch.setenv(f"NINI_EXECUTION__{key}", value)
    monkeypatch.setenv("NINI_UI__LANGUAGE", "en")
    in_background = (
        "import threading\ndef flood():\n"
        + "".join(f"    {line}\n" for line in FLOOD.format("bg").splitlines())
        + "threading.Thread(target=flood, daemon=True).start()\n"
    )

    async def scenario() -> None:
        async with Runtime(load_settings()) as runtime:
            session = runtime.session_or_new("kept")
            workspace = session.workspace.root
            assert (await invoke(session, "run_code", {"code": "kept = 41"})).success
            stopped = await invoke(session, "run_code", {"code": FLOOD.format("flood")})
            assert stopped.error["code"] == "TOO_LARGE" and "keeps its variables" in stopped.error["message"]
            refused = await invoke(session, "run_code", {"code": "result = kept"})
            assert refused.error["code"] == "TOO_LARGE" and "workspace_max_files" in refused.error["message"]
            shutil.rmtree(workspace / "flood")
            again = await invoke(session, "run_code", {"code": "result = kept + 1"})
            assert again.success and again.result["result"] == 42
            assert runtime.kernels.kernel_info(session.id)["restarts"] == 0  # the same kernel

            sandbox = runtime.kernels.kernel_info(session.id)["pid"]
            left = await invoke(session, "run_code", {"code": in_background})
            assert left.success or left.error["code"] == "TOO_LARGE"  # the run may end before the flood passes
            for _ in range(600):  # the guard kills the kernel, its thread with it (at most a minute)
                if runtime.kernels.kernel_info(session.id) is None and not alive(sandbox, workspace):
                    break
                await asyncio.sleep(0.1)
            assert runtime.kernels.kernel_info(session.id) is None and not alive(sandbox, workspace)
            _, entries = held(workspace / "bg")
            assert entries < 100_000
            refused = await invoke(session, "run_code", {"code": "result = 1"})
            assert refused.error["code"] == "TOO_LARGE" and "went on growing" in refused.error["message"]
            shutil.rmtree(workspace / "bg")
            fresh = await invoke(session, "run_code", {"code": "result = 'kept' in globals()"})
            assert fresh.success and fresh.result["result"] is False  # a new kernel

    asyncio.run(scenario())
