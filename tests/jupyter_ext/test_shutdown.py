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
from tests.jupyter_ext.conftest import nini_env, r_usable


def call(server: ServerProcess, method: str, path: str, body: Any = None) -> Any:
    data = json.dumps(body).encode() if body is not None else (b"" if method == "POST" else None)
    request = urllib.request.Request(server.url + path, data=data, method=method, headers=server.headers)
    with urllib.request.urlopen(request, timeout=120) as response:
        return json.loads(response.read())


@pytest.mark.slow
def test_sigterm_stops_every_kernel_and_worker(tmp_path: Path, nini_home: Path) -> None:
    # kernels' runtime folders (sockets, connection files) go to TMPDIR when it is not below
    # /tmp (see sandbox.runtime_base); a short one, as unix socket paths must fit in 108 bytes
    kernel_tmp = Path(tempfile.mkdtemp(prefix="nt-", dir="/var/tmp"))
    env = nini_env(nini_home, tmp_path) | {"TMPDIR": str(kernel_tmp)}
    server = ServerProcess.start(root_dir=tmp_path, env=env, output=(tmp_path / "server.log").open("wb"))
    try:
        session_id = call(server, "POST", "nini/api/sessions", {"title": "shutdown"})["data"]["id"]
        own = call(server, "POST", f"nini/api/sessions/{session_id}/run-code", {"code": "x = 1"})
        assert own["data"]["success"], own
        kernel_id = call(server, "POST", "api/kernels", {"name": "python3"})["id"]
        borrowed = call(server, "POST", f"nini/api/sessions/{session_id}/run-code", {"code": "y = 2", "kernel_id": kernel_id})
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
    gone, alive = psutil.wait_procs(children, timeout=15)
    assert alive == [], [(p.pid, p.name()) for p in alive]
    assert "Shutting down" in (tmp_path / "server.log").read_text()
    # nini shut its kernels down itself (each removes its runtime folder) ...
    assert list(kernel_tmp.glob("nini-kernel-*")) == []
    shutil.rmtree(kernel_tmp, ignore_errors=True)
    # ... and closed the store: SQLite folds the WAL back into the database on the last close
    assert not (nini_home / "nini.db-wal").exists() or (nini_home / "nini.db-wal").stat().st_size == 0
