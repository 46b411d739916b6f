"""Borrowed kernels: an existing kernel of a (jupyter_client) multi-kernel manager, given by id."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from jupyter_client.multikernelmanager import AsyncMultiKernelManager

from nini.config import ExecutionSettings
from nini.errors import ErrorCode, NiniError
from nini.execution.kernels import KernelPool
from nini.execution.outcome import CodeRequest

from .conftest import Kernels, assert_cancel_interrupts


@pytest.fixture(scope="module")
def server(
    event_loop_for_module: asyncio.AbstractEventLoop, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Kernels, AsyncMultiKernelManager, str]]:
    loop = event_loop_for_module
    manager = AsyncMultiKernelManager()
    kernel_id = loop.run_until_complete(manager.start_kernel(kernel_name="python3"))
    pool = KernelPool(ExecutionSettings(), multi_kernel_manager=manager)
    try:
        yield Kernels(loop, pool, Path(tmp_path_factory.mktemp("external")) / "sessions"), manager, kernel_id
    finally:
        loop.run_until_complete(pool.aclose())
        loop.run_until_complete(manager.shutdown_all(now=True))


def test_runs_in_the_server_kernel_and_keeps_state(server: tuple[Kernels, AsyncMultiKernelManager, str]) -> None:
    kernels, manager, kernel_id = server
    assert kernels.run("shared_value = 6", "notebook", kernel_id=kernel_id).success
    out = kernels.run(
        "import pandas as pd\nresult = shared_value * 7\noutput_df = pd.DataFrame({'a': [1]})",
        "notebook",
        kernel_id=kernel_id,
        save_as="ext",
    )
    assert out.success, out.error
    assert out.result == 42 and out.datasets_saved == ["ext"]
    assert kernels.run("result = int(df['a'][0])", "notebook", kernel_id=kernel_id, dataset_name="ext").result == 1
    assert kernels.pool.kernel_info("notebook") is None  # not a kernel nini owns


def test_unknown_kernel_id_is_not_found(server: tuple[Kernels, AsyncMultiKernelManager, str]) -> None:
    kernels, _manager, _kernel_id = server
    with pytest.raises(NiniError) as caught:
        kernels.run("1", "notebook", kernel_id="no-such-kernel")
    assert caught.value.code is ErrorCode.NOT_FOUND


def test_kernel_id_without_a_server_is_not_found(kernels: Kernels) -> None:
    with pytest.raises(NiniError) as caught:
        kernels.run("1", kernel_id="anything")
    assert caught.value.code is ErrorCode.NOT_FOUND


def test_timeout_in_a_server_kernel_only_interrupts(server: tuple[Kernels, AsyncMultiKernelManager, str]) -> None:
    kernels, manager, kernel_id = server
    kernels.run("before = 1", "notebook", kernel_id=kernel_id)
    out = kernels.run("while True:\n    pass", "notebook", kernel_id=kernel_id, timeout_s=1)
    assert out.error["code"] == "TIMEOUT"
    assert kernels.run("print(before)", "notebook", kernel_id=kernel_id).stdout == "1\n"


def test_closing_the_pool_leaves_server_kernels_running(server: tuple[Kernels, AsyncMultiKernelManager, str]) -> None:
    kernels, manager, kernel_id = server
    other = KernelPool(ExecutionSettings(), multi_kernel_manager=manager)
    workspace = kernels.workspace("borrower")
    assert kernels.wait(other.run("borrower", workspace, CodeRequest("z = 1"), kernel_id=kernel_id)).success
    kernels.wait(other.aclose())
    assert kernel_id in manager.list_kernel_ids()
    assert kernels.wait(manager.get_kernel(kernel_id).is_alive())
    assert kernels.run("print(z)", "notebook", kernel_id=kernel_id).stdout == "1\n"


def test_a_dead_server_kernel_is_reported_not_restarted(server: tuple[Kernels, AsyncMultiKernelManager, str]) -> None:
    kernels, manager, _kernel_id = server
    doomed = kernels.wait(manager.start_kernel(kernel_name="python3"))
    out = kernels.run("import os\nos._exit(1)", "doomed", kernel_id=doomed)
    assert out.error["code"] == "KERNEL_DIED"
    assert "does not own" in out.error["message"]
    assert not kernels.wait(manager.get_kernel(doomed).is_alive())  # nini left it to its owner


def test_cancelling_a_run_interrupts_the_server_kernel(server: tuple[Kernels, AsyncMultiKernelManager, str]) -> None:
    kernels, _manager, kernel_id = server
    kernels.run("before = 'kept'", "notebook", kernel_id=kernel_id)
    assert_cancel_interrupts(kernels, "notebook", kernel_id)
