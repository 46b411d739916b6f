"""Fixtures for R worker tests: real workers in an RWorkerPool, one event loop and pool per module.

A worker starts in about half a second, so a test module shares one pool (sandboxed with bwrap
where bwrap works, as nini runs it); tests that need a clean R state use their own session id,
which gives them their own worker.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nini.config import Settings
from nini.execution.r_workers import worker_wrap
from r_sandbox.client import RWorkerPool
from tests.conftest import sandbox_uid
from tests.execution.conftest import event_loop_for_module  # noqa: F401  (a fixture: one loop per module)


def _r_problem() -> str | None:
    if importlib.util.find_spec("rpy2") is None:
        return "rpy2 is not installed (pip install 'nini[r]')"
    if not os.environ.get("R_HOME") and shutil.which("R") is None:
        return "R is not installed (apt-get install r-base-core)"
    return None


needs_r = pytest.mark.skipif(_r_problem() is not None, reason=f"R cannot load here: {_r_problem()}")


class Workers:
    """A pool plus the loop it lives on; ``run`` is the synchronous face tests use."""

    def __init__(self, loop: asyncio.AbstractEventLoop, pool: RWorkerPool, root: Path) -> None:
        self.loop, self.pool, self.root = loop, pool, root

    def workspace(self, session_id: str) -> Path:
        path = self.root / "sessions" / session_id / "workspace"
        path.mkdir(parents=True, exist_ok=True)
        return path

    def run(self, code: str, session: str = "shared", **request: Any) -> dict[str, Any]:
        return self.wait(self.pool.run(session, self.workspace(session), {"code": code, **request}))

    def run_unchecked(self, code: str, session: str = "shared", **request: Any) -> dict[str, Any]:
        """Without the static policy check: only the run-time guard stands in the way."""
        request = {"code": code, **request}
        return self.wait(self.pool._run(session, self.workspace(session), request, skip_policy=True))

    def wait(self, awaitable: Any) -> Any:
        return self.loop.run_until_complete(awaitable)

    def close(self) -> None:
        self.wait(self.pool.aclose())


def new_session() -> str:
    return "r" + uuid.uuid4().hex[:10]


def default_wrap() -> Any:
    """What nini passes: its confinement, inside bwrap where it works."""
    return worker_wrap(Settings(), sandbox_uid)


def sandboxed_wrap() -> Any:
    return worker_wrap(Settings(execution={"sandbox": "bwrap"}), sandbox_uid)


@contextlib.contextmanager
def open_workers(loop: asyncio.AbstractEventLoop, root: Path, **options: Any) -> Iterator[Workers]:
    """A pool (nini's defaults unless ``options`` say otherwise) whose workers all go at the end."""
    workers = Workers(loop, RWorkerPool(**{"wrap_command": default_wrap(), **options}), root)
    with contextlib.closing(workers):
        yield workers


@pytest.fixture(scope="module")
def workers(event_loop_for_module: asyncio.AbstractEventLoop, tmp_path_factory: Any) -> Iterator[Workers]:
    """A pool with the default settings (1024 MB, 120 s), sandboxed where bwrap works."""
    with open_workers(event_loop_for_module, tmp_path_factory.mktemp("rworkers")) as found:
        yield found
