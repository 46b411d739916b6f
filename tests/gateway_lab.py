"""A Jupyter Kernel Gateway and a Jupyter server with nini that runs its kernels there, as real
child processes on 127.0.0.1; shared by tests/jupyter_ext/test_gateway.py and benchmarks/bench_gateway.py.

The gateway wants a token (KG_AUTH_TOKEN) and the server sends it (JUPYTER_GATEWAY_AUTH_TOKEN),
both through the environment, as an admin would deploy them. The gateway's kernels run
``python`` from PATH, which is this interpreter's folder: nini is installed there.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jupyter_ext.serve import ServerProcess
from tests import timeouts

START_TIMEOUT_S = timeouts.timeout(60)


@dataclass
class GatewayLab:
    gateway: subprocess.Popen[bytes]
    gateway_url: str
    gateway_token: str
    server: ServerProcess
    home: Path  # the server's NINI_HOME

    @property
    def gateway_host(self) -> str:
        return self.gateway_url.removeprefix("http://")

    def gateway_kernels(self) -> list[dict[str, Any]]:
        """The gateway's own list of its kernels (GET /api/kernels with its token)."""
        return _get_json(f"{self.gateway_url}/api/kernels", self.gateway_token)

    def call(self, method: str, path: str, body: Any = None, timeout: float = 120) -> tuple[int, dict[str, Any]]:
        return api_call(self.server, method, path, body, timeout)

    def new_session(self) -> str:
        return new_session(self.server)

    def run_code(self, session_id: str, code: str, **arguments: Any) -> dict[str, Any]:
        return run_code(self.server, session_id, code, **arguments)


def api_call(server: ServerProcess, method: str, path: str, body: Any = None, timeout: float = 120) -> tuple[int, Any]:
    """``(status, envelope)`` of nini's REST API at ``/nini/api/<path>``."""
    data = json.dumps(body).encode() if body is not None else (b"" if method == "POST" else None)
    request = urllib.request.Request(
        f"{server.url}nini/api/{path}",
        data=data,
        method=method,
        headers={**server.headers, "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=timeouts.timeout(timeout)) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null")


def new_session(server: ServerProcess) -> str:
    status, body = api_call(server, "POST", "sessions", {"title": "gateway"})
    assert status in (200, 201) and body["ok"], body
    return body["data"]["id"]


def run_code(server: ServerProcess, session_id: str, code: str, **arguments: Any) -> dict[str, Any]:
    """The ToolResult of run-code (a run that failed is still a 200 with ``success`` false)."""
    status, body = api_call(server, "POST", f"sessions/{session_id}/run-code", {"code": code, **arguments})
    assert status == 200 and body["ok"], body
    return body["data"]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def gateway_lab(*, server_env: dict[str, str] | None = None, output: Any = subprocess.DEVNULL) -> Iterator[GatewayLab]:
    """Start the gateway, then the server with ``--gateway-url``; stop both at the end.

    ``server_env`` is added to the server's environment (NINI_* settings). The server's PATH is only
    this interpreter's folder: R (in /usr/bin) is not on it, as on a server without R.
    """
    with tempfile.TemporaryDirectory(prefix="nini-gateway-") as tmp:
        root = Path(tmp)
        base = {k: v for k, v in os.environ.items() if not k.startswith(("NINI_", "JUPYTER_", "KG_", "R_"))}
        base["PATH"] = str(Path(sys.executable).parent)
        token, port = secrets.token_hex(16), free_port()
        gateway_env = {
            **base,
            "KG_AUTH_TOKEN": token,
            "KG_LIST_KERNELS": "True",
            "JUPYTER_RUNTIME_DIR": str(root / "gw-runtime"),
            "JUPYTER_DATA_DIR": str(root / "gw-data"),
            "JUPYTER_CONFIG_DIR": str(root / "gw-config"),
        }
        argv = [
            sys.executable,
            "-m",
            "kernel_gateway",
            "--KernelGatewayApp.ip=127.0.0.1",
            f"--KernelGatewayApp.port={port}",
            "--KernelGatewayApp.port_retries=0",
        ]
        if os.geteuid() == 0:
            argv.append("--KernelGatewayApp.allow_root=True")
        gateway = subprocess.Popen(
            argv, env=gateway_env, stdin=subprocess.DEVNULL, stdout=output, stderr=output, start_new_session=True
        )
        url = f"http://127.0.0.1:{port}"
        try:
            _wait_for_gateway(gateway, url, token)
            (root / "home").mkdir()
            env = {
                **base,
                "NINI_HOME": str(root / "home"),
                "JUPYTER_CONFIG_DIR": str(root / "config"),
                "JUPYTER_RUNTIME_DIR": str(root / "runtime"),
                "JUPYTER_GATEWAY_AUTH_TOKEN": token,
                **(server_env or {}),
            }
            server = ServerProcess.start(root_dir=root, env=env, args=(f"--gateway-url={url}",), output=output)
            try:
                yield GatewayLab(gateway, url, token, server, root / "home")
            finally:
                server.stop()
        finally:
            gateway.terminate()
            try:
                gateway.wait(30)
            except subprocess.TimeoutExpired:
                gateway.kill()
                gateway.wait()


def _wait_for_gateway(process: subprocess.Popen[bytes], url: str, token: str) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"jupyter kernelgateway exited with status {process.returncode} while starting")
        try:
            _get_json(f"{url}/api/kernelspecs", token)
            return
        except (urllib.error.URLError, OSError):
            time.sleep(0.1)
    raise TimeoutError(f"jupyter kernelgateway did not answer within {START_TIMEOUT_S:.0f} s")


def _get_json(url: str, token: str) -> Any:
    request = urllib.request.Request(url, headers={"Authorization": f"token {token}"})
    with urllib.request.urlopen(request, timeout=timeouts.timeout(10)) as response:
        return json.loads(response.read())
