"""A real `jupyter server` process: SIGTERM leaves no kernel, R worker or open store behind."""

from __future__ import annotations

import json
import shutil
import tempfile
import urllib.request
from pathlib import Path
from typing import Any

import psutil
import pytest

from jupyter_ext.serve import ServerProcess
from tests.conftest import without_approval, write_settings
from tests.jupyter_ext.conftest import nini_env, r_usable
from tests.timeouts import timeout


def call(server: ServerProcess, method: str, path: str, body: Any = None) -> Any:
    data = json.dumps(body).encode() if body is not None else (b"" if method == "POST" else None)
    request = urllib.request.Request(server.url + path, data=data, method=method, headers=server.headers)
    with urllib.request.urlopen(request, timeout=timeout(120)) as response:
        return json.loads(response.read())


@pytest.mark.slow
def test_sigterm_stops_every_kernel_and_worker(tmp_path: Path, nini_home: Path) -> None:
    # kernels' runtime folders (sockets, connection files) go to TMPDIR when it is not below
    # /tmp (see sandbox.runtime_base); a short one, as unix socket paths must fit in 108 bytes
    kernel_tmp = Path(tempfile.mkdtemp(prefix="nt-", dir="/var/tmp"))
    write_settings(nini_home, without_approval({}))  # the notebook kernel's step runs unasked: this is about shutdown
    env = nini_env(nini_home, tmp_path) | {"TMPDIR": str(kernel_tmp)}
    server = ServerProcess.start(root_dir=tmp_path, env=env, output=(tmp_path / "server.log").open("wb"))
    try:
        session_id = call(server, "POST", "nini/api/sessions", {"title": "shutdown"})["data"]["id"]
        own = call(server, "POST", f"nini/api/sessions/{session_id}/run-code", {"code": "x = 1"})
        assert own["data"]["success"], own
        kernel_id = call(server, "POST", "api/kernels", {"name": "python3"})["id"]
        borrowed = call(
            server, "POST", f"nini/api/sessions/{session_id}/run-code", {"code": "y = 2", "kernel_id": kernel_id}
        )
        assert borrowed["data"]["success"], borrowed
        if r_usable()[0]:
            r_run = call(server, "POST", f"nini/api/sessions/{session_id}/run-r-code", {"code": "z <- 3"})
            assert r_run["data"]["success"], r_run
        children = psutil.Process(server.process.pid).children(recursive=True)
        assert len(children) >= 2  # nini's sandboxed kernel and the notebook kernel, at least
        assert list(kernel_tmp.glob("nini-kernel-*"))
    finally:
        status = server.stop()
    assert status == 0, (tmp_path / "server.log").read_text()[-3000:]
    gone, alive = psutil.wait_procs(children, timeout=timeout(15))
    assert alive == [], [(p.pid, p.name()) for p in alive]
    assert "Shutting down" in (tmp_path / "server.log").read_text()
    # nini shut its kernels down itself (each removes its runtime folder) ...
    assert list(kernel_tmp.glob("nini-kernel-*")) == []
    shutil.rmtree(kernel_tmp, ignore_errors=True)
    # ... and closed the store: SQLite folds the WAL back into the database on the last close
    assert not (nini_home / "nini.db-wal").exists() or (nini_home / "nini.db-wal").stat().st_size == 0


@pytest.mark.slow
def test_sigterm_to_serve_stops_the_server_and_cancels_the_call_in_flight(tmp_path: Path, nini_home: Path) -> None:
    import signal
    import subprocess
    import sys
    import threading
    import time
    import urllib.error

    from nini.history.store import HistoryStore

    wrapper = subprocess.Popen(
        [sys.executable, "-m", "jupyter_ext.serve", "--port", "0", "--root-dir", str(tmp_path)],
        env=nini_env(nini_home, tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        lines = iter(wrapper.stdout.readline, "")
        url = next(line for line in lines if "nini is running in Jupyter at" in line).split(" at ")[1].split("?")[0]
        token = next(line for line in lines if "TOKEN=" in line).split("=", 1)[1].strip()
        server = ServerProcess(wrapper, url, token)  # to call it; the wrapper is what gets the signal
        session_id = call(server, "POST", "nini/api/sessions", {"title": "in flight"})["data"]["id"]
        replies: list[Any] = []

        def run_long() -> None:
            try:
                replies.append(
                    call(
                        server,
                        "POST",
                        f"nini/api/sessions/{session_id}/run-code",
                        {"code": "import time\nopen('started', 'w').close()\ntime.sleep(120)"},
                    )
                )
            except urllib.error.HTTPError as exc:
                replies.append((exc.code, json.loads(exc.read())))

        runner = threading.Thread(target=run_long)
        runner.start()
        store = HistoryStore(f"sqlite:///{nini_home / 'nini.db'}")
        try:
            started = nini_home / "sessions" / session_id / "workspace" / "started"  # the kernel is in time.sleep then
            deadline = time.monotonic() + timeout(120)
            while not started.exists():  # a poll of the file the code writes
                assert time.monotonic() < deadline and runner.is_alive(), replies
                time.sleep(0.1)
            family = psutil.Process(wrapper.pid).children(recursive=True)
            assert len(family) >= 2, family  # the Jupyter server and nini's kernel, at least

            wrapper.send_signal(signal.SIGTERM)
            status = wrapper.wait(timeout=timeout(60))
            runner.join(timeout=timeout(60))
            calls = store.list_tool_calls(session_id)
        finally:
            store.close()
    finally:
        if wrapper.poll() is None:
            wrapper.kill()
    assert status == 0
    _gone, alive = psutil.wait_procs(family, timeout=timeout(15))
    assert alive == [], [(p.pid, p.name()) for p in alive]
    assert replies and replies[0][0] == 499 and replies[0][1]["error"]["code"] == "CANCELED", replies
    assert [(c["tool_name"], c["status"], c["error_code"]) for c in calls] == [("run_code", "failed", "CANCELED")], (
        calls
    )
