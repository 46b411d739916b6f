"""``make serve``: a Jupyter server with nini on 127.0.0.1 behind a fresh token, and how to call it.

``ServerProcess`` is also how the benchmark and the shutdown tests run a real server in a child
process: it waits until the server answers, and ``stop()`` ends it the way an admin would (SIGTERM,
which runs the extensions' ``stop_extension``). ``main`` forwards its own SIGTERM and SIGINT that way.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

START_TIMEOUT_S = 60.0


@dataclass
class ServerProcess:
    process: subprocess.Popen[bytes]
    url: str  # http://127.0.0.1:PORT/ (base URL included)
    token: str

    @classmethod
    def start(
        cls,
        *,
        root_dir: Path,
        port: int = 0,
        env: dict[str, str] | None = None,
        args: tuple[str, ...] = (),
        output: IO[bytes] | int | None = subprocess.DEVNULL,
    ) -> ServerProcess:
        """Start ``jupyter server`` (port 0: any free port) and return once it answers.

        The token goes through the environment (JUPYTER_TOKEN), not argv, which other local users
        can read. The server runs in its own process group so that a Ctrl-C meant for the caller
        does not reach it half-way; ``stop()`` ends it.
        """
        token = secrets.token_hex(24)
        env = dict(os.environ if env is None else env)
        runtime_dir = Path(env.setdefault("JUPYTER_RUNTIME_DIR", tempfile.mkdtemp(prefix="nini-jupyter-")))
        env["JUPYTER_TOKEN"] = token
        argv = [
            sys.executable,
            "-m",
            "jupyter_server",
            "--no-browser",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={port}",
            f"--ServerApp.root_dir={root_dir}",
            *args,
        ]
        if os.geteuid() == 0:  # containers and CI run as root; jupyter refuses that unless told
            argv.append("--ServerApp.allow_root=True")
        process = subprocess.Popen(
            argv, env=env, stdin=subprocess.DEVNULL, stdout=output, stderr=output, start_new_session=True
        )
        try:
            url = _wait_until_up(process, runtime_dir / f"jpserver-{process.pid}.json", token)
        except BaseException:
            _end(process)
            raise
        return cls(process, url, token)

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"token {self.token}"}

    def stop(self, timeout: float = 30) -> int:
        """SIGTERM (the server shuts its extensions and kernels down), SIGKILL if that hangs."""
        return _end(self.process, timeout)


def _wait_until_up(process: subprocess.Popen[bytes], info_file: Path, token: str) -> str:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"jupyter server exited with status {process.returncode} while starting")
        if info_file.is_file():
            try:
                info: dict[str, Any] = json.loads(info_file.read_text())
            except (OSError, ValueError):  # written while we read it
                info = {}
            if info.get("port") and _answers(f"http://127.0.0.1:{info['port']}{info.get('base_url', '/')}", token):
                return f"http://127.0.0.1:{info['port']}{info.get('base_url', '/')}"
        time.sleep(0.1)
    raise TimeoutError(f"jupyter server did not answer within {START_TIMEOUT_S:.0f} s")


def _answers(url: str, token: str) -> bool:
    request = urllib.request.Request(url + "api/status", headers={"Authorization": f"token {token}"})
    try:
        with urllib.request.urlopen(request, timeout=2) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


def _end(process: subprocess.Popen[bytes], timeout: float = 30) -> int:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            return process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
    return process.wait()


def main(argv: list[str] | None = None) -> int:
    """Run the server until it exits, or until SIGTERM or SIGINT (Ctrl-C) to this wrapper stops it
    cleanly; return its exit status. The server runs in its own session, so a signal to the wrapper
    alone (a service manager's SIGTERM) would otherwise leave it serving, its kernels orphaned."""
    parser = argparse.ArgumentParser(prog="python -m jupyter_ext.serve", description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8888, help="port to listen on (0: any free port)")
    parser.add_argument("--root-dir", type=Path, default=Path.cwd(), help="the Jupyter root and nini's project dir")
    options = parser.parse_args(argv)
    stopping = threading.Event()
    previous = {signum: signal.signal(signum, lambda *_: stopping.set()) for signum in (signal.SIGTERM, signal.SIGINT)}
    try:  # the handlers come first: a signal while the server starts stops it once it is up
        server = ServerProcess.start(
            root_dir=options.root_dir.resolve(), port=options.port, output=None, args=("--ServerApp.port_retries=50",)
        )
        print(
            f"\nnini is running in Jupyter at {server.url}?token={server.token}\n\n"
            f"  TOKEN={server.token}\n"
            f'  curl -H "Authorization: token $TOKEN" {server.url}nini/api/skills\n\n'
            "Ctrl-C stops the server.\n",
            flush=True,
        )
        while server.process.poll() is None and not stopping.wait(0.2):
            pass
        return server.stop() if stopping.is_set() else server.process.wait()
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


if __name__ == "__main__":
    sys.exit(main())
