"""Fixtures for kernel tests: real ipykernels in a KernelPool, one event loop and pool per module.

Starting a kernel costs about half a second, so a test module shares one pool (and its own event
loop, which the pool's zmq sockets are bound to); tests that need a clean namespace use their own
session id, which gives them their own kernel.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nini.config import ExecutionSettings
from nini.execution.kernels import KernelPool
from nini.execution.outcome import CodeOutcome, CodeRequest
from nini.execution.sandbox import probe_bwrap, runs_as_session_uid
from nini.execution.workspace import Workspace
from tests.conftest import sandbox_uid
from tests.timeouts import timeout

needs_bwrap = pytest.mark.skipif(not probe_bwrap()[0], reason=f"no working bubblewrap: {probe_bwrap()[1]}")


class Kernels:
    """A pool plus the loop it lives on; ``run`` is the synchronous face tests use."""

    def __init__(self, loop: asyncio.AbstractEventLoop, pool: KernelPool, sessions_dir: Path) -> None:
        self.loop, self.pool, self.sessions_dir = loop, pool, sessions_dir

    def workspace(self, session_id: str) -> Workspace:
        """The session's workspace; under a root nini's sandbox owned by a uid of the session's own
        (a Runtime's store allocates it, this pool has none: ``tests.conftest.sandbox_uid``)."""
        root = Workspace.for_session(self.sessions_dir, session_id).root
        owned = self.pool.backend == "local" and runs_as_session_uid(self.pool.sandbox_mode)
        return Workspace(root, (sandbox_uid(root), sandbox_uid(root)) if owned else None).ensure()

    def run(self, code: str, session: str = "shared", *, kernel_id: str | None = None, **request: Any) -> CodeOutcome:
        return self.wait(
            self.pool.run(session, self.workspace(session), CodeRequest(code, **request), kernel_id=kernel_id)
        )

    def wait(self, awaitable: Any) -> Any:
        return self.loop.run_until_complete(awaitable)


def assert_cancel_interrupts(kernels: Kernels, session: str, kernel_id: str | None) -> None:
    """Cancel a run of ``time.sleep(30)`` once it runs: the kernel stops it at once and keeps its state."""
    workspace = kernels.workspace(session)

    here = workspace.root / "sleeping"  # the code writes it as its sleep starts
    here.unlink(missing_ok=True)

    async def cancel_when_sleeping() -> None:
        code = f"import time\nopen({str(here)!r}, 'w').close()\ntime.sleep(30)\nlate = 1"
        task = asyncio.ensure_future(kernels.pool.run(session, workspace, CodeRequest(code), kernel_id=kernel_id))
        deadline = time.monotonic() + timeout(60)
        while not here.exists():  # a poll of the file the code writes
            assert not task.done() and time.monotonic() < deadline, "the code never started"
            await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    kernels.wait(cancel_when_sleeping())
    # not killed: the same kernel answers (not after the 30 s sleep), with its state and without `late`
    after = kernels.run("result = [before, 'late' in dir()]", session, kernel_id=kernel_id)
    assert after.success, after.error
    assert after.result == ["kept", False]


def new_session() -> str:
    return "t" + uuid.uuid4().hex[:10]


@pytest.fixture(scope="module")
def event_loop_for_module() -> Iterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


def make_kernels(loop: asyncio.AbstractEventLoop, tmp: Path, **settings: Any) -> Iterator[Kernels]:
    pool = KernelPool(ExecutionSettings(**settings))
    try:
        yield Kernels(loop, pool, tmp / "sessions")
    finally:
        loop.run_until_complete(pool.aclose())


@pytest.fixture(scope="module")
def kernels(
    event_loop_for_module: asyncio.AbstractEventLoop, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Kernels]:
    """A pool with the default settings (sandbox "auto", 2048 MiB)."""
    yield from make_kernels(event_loop_for_module, tmp_path_factory.mktemp("kernels"))
