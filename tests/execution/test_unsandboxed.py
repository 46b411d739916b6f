"""The same pool without bubblewrap (execution.sandbox = "none"): signal interrupts, same limits."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from .conftest import Kernels, make_kernels, new_session


@pytest.fixture(scope="module")
def plain(
    event_loop_for_module: asyncio.AbstractEventLoop, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Kernels]:
    yield from make_kernels(event_loop_for_module, tmp_path_factory.mktemp("plain"), sandbox="none")


def test_runs_in_the_workspace_without_sandbox(plain: Kernels) -> None:
    session = new_session()
    out = plain.run("import os\nresult = os.getcwd()", session)
    assert out.result == str(plain.workspace(session).root)
    assert plain.pool.kernel_info(session)["sandbox"] == "none"


def test_timeout_interrupts_with_a_signal(plain: Kernels) -> None:
    session = new_session()
    plain.run("kept = 2", session)
    out = plain.run("while True:\n    pass", session, timeout_s=1)
    assert out.error["code"] == "TIMEOUT" and "keeps its variables" in out.error["message"]
    assert plain.run("print(kept)", session).stdout == "2\n"


def test_dead_kernel_is_replaced(plain: Kernels) -> None:
    session = new_session()
    assert plain.run("import os\nos._exit(1)", session).error["code"] == "KERNEL_DIED"
    assert plain.run("print('again')", session).stdout == "again\n"


def test_memory_limit_applies_without_sandbox(plain: Kernels) -> None:
    out = plain.run("block = bytearray(3 * 1024**3)", new_session())
    assert out.error["code"] in ("CODE_ERROR", "KERNEL_DIED")
    assert out.error.get("ename", "MemoryError") == "MemoryError"
