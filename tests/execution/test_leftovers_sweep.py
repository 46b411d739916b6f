"""A killed server's leftovers are swept when the next server starts (issue 36, item 6), not when
each session is next used: a real Jupyter server is started over a NINI_HOME holding the leftovers
of a dead nini (a pid that no longer runs) and of a live one (this test's process). The dead one's
go, in the background; the live one's, and every file a record names, stay.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from jupyter_ext.serve import ServerProcess
from nini.execution import sandbox
from nini.execution.leftovers import ARTIFACT_TEMP_GRACE_S
from nini.execution.r_workers import R_RUNTIME_BASE
from nini.execution.runtime_dirs import OWNER_FILE, owner_token, process_start
from tests import timeouts

NINI = Path(sys.executable).with_name("nini")
pytestmark = pytest.mark.slow


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def _runtime_dir(base: Path, prefix: str, pid: int, start: str | None) -> Path:
    folder = base / f"{prefix}{os.urandom(4).hex()}"
    folder.mkdir()
    (folder / OWNER_FILE).write_text(json.dumps({"pid": pid, "start": start}))
    (folder / "kernel.log").write_text("left behind")
    return folder


def _wait_until_gone(paths: list[Path], timeout: float = 90) -> None:
    """Wait (polling the files) until every path is gone; fail naming those still there."""
    deadline = time.monotonic() + timeouts.timeout(timeout)
    while any(p.exists() for p in paths):
        if time.monotonic() > deadline:
            pytest.fail(f"not swept: {[str(p) for p in paths if p.exists()]}")
        time.sleep(0.1)


def test_the_next_server_sweeps_a_dead_servers_leftovers_and_keeps_a_live_ones(nini_home: Path, tmp_path: Path) -> None:
    env = {**os.environ, "NINI_HOME": str(nini_home), "NINI_UI__LANGUAGE": "en"}
    saved = subprocess.run(
        [str(NINI), "run-code", "-", "--session", "s1", "--new", "--save-as", "sales", "--json"],
        input="import pandas as pd\noutput_df = pd.DataFrame({'a': [1, 2, 3]})\n",
        capture_output=True,
        text=True,
        timeout=timeouts.timeout(180),
        env=env,
    )
    assert saved.returncode == 0, saved.stderr
    workspace = nini_home / "sessions" / "s1" / "workspace"
    recorded = [p for p in (workspace / "datasets").iterdir() if p.name.startswith("sales@")]
    assert len(recorded) == 1  # written by the CLI process, which is gone now: its record keeps it

    dead_pid = _dead_pid()
    dead, live = f"{dead_pid}-1", owner_token()
    stale = time.time() - ARTIFACT_TEMP_GRACE_S - 5
    planted = {
        "dead_version": workspace / f"datasets/sales@{dead}-0000aaaa.parquet",
        "dead_temp": workspace / f"datasets/.sales@{dead}-0000bbbb.parquet.x1y2.tmp",
        "dead_list": workspace / f"artifacts/.pending-{dead}-0000cccc.txt",
        "dead_chart": workspace / "artifacts/orphan.png",
        "live_version": workspace / f"datasets/sales@{live}-0000dddd.parquet",
        "live_list": workspace / f"artifacts/.pending-{live}-0000eeee.txt",
        "live_chart": workspace / "artifacts/coming.png",
        "old_home_temp": nini_home / ".settings.json.k3j4h5.tmp",
        "old_db_temp": nini_home / f".nini.db.{'ab' * 16}.new",
        "young_home_temp": nini_home / ".skills_state.json.z9y8x7.tmp",
    }
    for path in planted.values():
        path.write_bytes(b"left behind")
    planted["dead_list"].write_text("orphan.png\n")
    planted["live_list"].write_text("coming.png\n")
    for key in ("old_home_temp", "old_db_temp"):
        os.utime(planted[key], (stale, stale))
    folders = {
        "dead_kernel": _runtime_dir(sandbox.runtime_base(), "nini-kernel-", dead_pid, "1"),
        "dead_r": _runtime_dir(R_RUNTIME_BASE, "nini-r-", dead_pid, "1"),
        "live_kernel": _runtime_dir(sandbox.runtime_base(), "nini-kernel-", os.getpid(), process_start(os.getpid())),
        "live_r": _runtime_dir(R_RUNTIME_BASE, "nini-r-", os.getpid(), process_start(os.getpid())),
    }
    gone = [
        planted[k] for k in ("dead_version", "dead_temp", "dead_list", "dead_chart", "old_home_temp", "old_db_temp")
    ]
    gone += [folders["dead_kernel"], folders["dead_r"]]
    try:
        root = tmp_path / "root"
        root.mkdir()
        server = ServerProcess.start(root_dir=root, env=env)
        try:
            _wait_until_gone(gone)
            kept = [p for key, p in planted.items() if key.startswith(("live_", "young_"))]
            kept += [folders["live_kernel"], folders["live_r"], *recorded]
            assert [p for p in kept if not p.exists()] == []
        finally:
            assert server.stop() is not None
    finally:
        for folder in folders.values():
            subprocess.run(["rm", "-rf", str(folder)], check=False)


@pytest.mark.slow
def test_a_runs_new_dataset_version_goes_when_the_database_fails_after_the_run(
    project_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run saved ``output_df`` as a new version, then PostgreSQL went down before the call's end:
    no record will name that file, and this process (alive: the sweep keeps its files) removes it."""
    import asyncio

    from nini.config import load_settings
    from nini.runtime import Runtime
    from nini.skills.invoke import invoke
    from tests import pg_cluster

    if (reason := pg_cluster.unavailable()) is not None:
        pytest.skip(reason)
    cluster = pg_cluster.start()  # its own: halting the suite's shared cluster would fail other tests
    try:
        monkeypatch.setenv("NINI_DATABASE_URL", cluster.create_database())
        monkeypatch.setenv("NINI_EXECUTION__PYTHON_POLICY", "off")  # the code waits on a file with os
        code = (
            "import os, time\nimport pandas as pd\nopen('ready', 'w').close()\n"
            "while not os.path.exists('go'):\n    time.sleep(0.02)\noutput_df = pd.DataFrame({'a': [1, 2]})\n"
        )

        async def scenario() -> tuple[list[str], list[str]]:
            async with Runtime(load_settings(), project_dir=project_dir) as runtime:
                session = runtime.create_session()
                root = session.workspace.root
                call = asyncio.create_task(invoke(session, "run_code", {"code": code, "save_as": "sales"}))
                while not (root / "ready").exists():
                    assert not call.done(), call.result()
                    await asyncio.sleep(0.05)
                await asyncio.to_thread(cluster.halt)
                (root / "go").touch()
                await asyncio.gather(call, return_exceptions=True)
                left = sorted(p.name for p in (root / "datasets").iterdir())
                await asyncio.to_thread(cluster.resume)
                return left, [row["path"] for row in runtime.store.list_datasets(session.id)]

        left, recorded = asyncio.run(scenario())
        assert recorded == [] and left == []  # nothing recorded, nothing left behind
    finally:
        cluster.stop()


def test_nini_mcp_sweeps_a_dead_servers_leftovers_when_it_starts(nini_home: Path) -> None:
    """``nini mcp`` is a server too: it sweeps at its start, in the background, while it serves."""
    dead, live = f"{_dead_pid()}-1", owner_token()
    datasets = nini_home / "sessions" / "old" / "workspace" / "datasets"
    datasets.mkdir(parents=True)
    gone, kept = datasets / f"t@{dead}-0000aaaa.parquet", datasets / f"t@{live}-0000bbbb.parquet"
    for path in (gone, kept):
        path.write_bytes(b"left behind")
    env = {**os.environ, "NINI_HOME": str(nini_home)}
    server = subprocess.Popen(
        [str(NINI), "mcp"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env
    )
    try:
        _wait_until_gone([gone])
        assert kept.exists()
    finally:
        assert server.stdin is not None
        server.stdin.close()  # the client goes away: the server ends
        try:
            server.wait(timeout=timeouts.timeout(60))
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
