"""A real Jupyter server with nini enabled per test (pytest-jupyter), and helpers to call its API.

pytest-jupyter's fixtures and hooks are imported here instead of named in ``pytest_plugins``:
pytest refuses ``pytest_plugins`` in a conftest below the rootdir when the whole suite runs, and
imported, its autouse fixtures (an event loop, server cleanup) apply to this folder only.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pytest_jupyter.jupyter_server import *  # noqa: F403
from tornado.httpclient import HTTPClientError
from traitlets.config import Config

from nini.skills.builtin.run_r import r_status
from tests import timeouts

JUPYTER = str(Path(sys.executable).with_name("jupyter"))


def r_usable() -> tuple[bool, str]:
    """Whether run_r_code can run here: registered (R and rpy2 found) and its worker exists."""
    from nini.config import load_settings

    usable, why = r_status(load_settings())
    if usable and not (Path(__file__).parents[2] / "r_sandbox" / "client.py").is_file():
        return False, "r_sandbox.client (the R worker) is not there yet"
    return usable, why


needs_r = pytest.mark.skipif(not r_usable()[0], reason=f"run_r_code unavailable: {r_usable()[1]}")


@pytest.fixture
def jp_server_config(nini_home: Path) -> Config:
    return Config(
        {
            "ServerApp": {"jpserver_extensions": {"jupyter_ext": True}},
            "MultiKernelManager": {"default_kernel_name": "python3"},
            "NiniExtensionApp": {"nini_home": str(nini_home)},
        }
    )


@dataclass
class Reply:
    status: int
    body: Any
    headers: Any
    raw: bytes

    @property
    def data(self) -> Any:
        assert self.body["ok"] is True, self.body
        return self.body["data"]

    @property
    def error(self) -> dict[str, Any]:
        assert self.body["ok"] is False, self.body
        assert set(self.body) == {"ok", "error"} and "Traceback" not in self.raw.decode(errors="replace")
        return self.body["error"]


@pytest.fixture
def api(jp_fetch: Any) -> Any:
    """``await api(method, *path, body=..., params=..., headers=...)``: a ``Reply`` whatever the status."""

    async def call(
        method: str,
        *path: str,
        body: Any = None,
        params: dict | None = None,
        headers: dict | None = None,
        **kwargs: Any,
    ) -> Reply:
        if body is None and method in ("POST", "PUT", "PATCH"):
            body = b""
        elif body is not None and not isinstance(body, str | bytes):
            body = json.dumps(body)
        try:
            response = await jp_fetch(
                "nini",
                "api",
                *path,
                method=method,
                body=body,
                params=params,
                headers=headers,
                request_timeout=120,
                **kwargs,
            )
        except HTTPClientError as exc:
            response = exc.response
            assert response is not None, exc
        raw = response.body or b""
        parsed = json.loads(raw) if "json" in response.headers.get("Content-Type", "") and raw else None
        return Reply(response.code, parsed, response.headers, raw)

    return call


@pytest.fixture
def notebook_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The working folder of the notebook kernels a test starts (the server starts them in its own)."""
    folder = tmp_path / "notebook-folder"
    folder.mkdir()
    monkeypatch.chdir(folder)
    return folder


async def new_session(api: Any, title: str = "test") -> str:
    return (await api("POST", "sessions", body={"title": title})).data["id"]


def nini_env(home: Path, tmp: Path) -> dict[str, str]:
    """Environment of a child process (server, kernel): our NINI_HOME, Jupyter dirs in ``tmp``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NINI_", "JUPYTER_"))}
    env.update(
        NINI_HOME=str(home),
        JUPYTER_CONFIG_DIR=str(tmp / "jupyter-config"),
        JUPYTER_RUNTIME_DIR=str(tmp / "jupyter-runtime"),
        PYTHONPATH=str(Path(__file__).parents[2]),
    )
    return env


def jupyter(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """A ``jupyter`` command; its limit is generous: one imports Jupyter Server and nini, ~4 s of CPU
    (half of it jsonschema's rfc3987_syntax building its grammar), over a minute on a loaded machine."""
    return subprocess.run([JUPYTER, *args], env=env, capture_output=True, text=True, timeout=timeouts.timeout(180))


async def read_events(ws: Any, count: int, timeout: float = 30) -> list[dict[str, Any]]:
    """The next ``count`` events of an events WebSocket, as dicts."""
    import asyncio

    events = []
    for _ in range(count):
        message = await asyncio.wait_for(ws.read_message(), timeouts.timeout(timeout))
        assert message is not None, f"socket closed after {len(events)} events"
        events.append(json.loads(message))
    return events


async def waiting(api: Any, session_id: str, count: int = 1) -> list[dict[str, Any]]:
    """The session's steps waiting for a person's approval, once ``count`` of them wait (polled
    until they do, for a minute at most)."""
    import asyncio

    for _ in range(1200):
        pending = (await api("GET", "sessions", session_id, "approvals")).data["waiting"]
        if len(pending) >= count:
            return pending
        await asyncio.sleep(0.05)
    raise AssertionError("no step came to wait for approval")


def workspace(home: Path, session_id: str) -> Path:
    return home / "sessions" / session_id / "workspace"
