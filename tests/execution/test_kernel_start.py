"""KernelPool.on_start: a session's own kernel says when it starts and when it is ready or failed (the
runtime turns that into ``kernel_start`` events for the sidebar's status line), once per start; a
listener that fails never stops a kernel from starting."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from .conftest import Kernels, make_kernels, new_session


@pytest.fixture(scope="module")
def kernels(
    event_loop_for_module: asyncio.AbstractEventLoop, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Kernels]:
    yield from make_kernels(event_loop_for_module, tmp_path_factory.mktemp("kernel-start"))


def test_a_kernel_start_is_told_before_and_after_once(kernels: Kernels) -> None:
    told: list[tuple[str, dict[str, Any]]] = []

    async def listen(session_id: str, data: dict[str, Any]) -> None:
        told.append((session_id, data))

    kernels.pool.on_start = listen
    session = new_session()
    assert kernels.run("x = 1", session).success
    assert kernels.run("y = x + 1", session).success  # its kernel runs already: nothing to tell
    assert [(s, d["state"]) for s, d in told] == [(session, "starting"), (session, "ready")]
    where = kernels.pool.sandbox_mode
    assert told[0][1] == {"state": "starting", "sandbox": where}
    assert told[1][1]["sandbox"] == where and told[1][1]["duration_ms"] > 0


def test_a_failing_listener_does_not_stop_the_kernel(kernels: Kernels) -> None:
    async def broken(session_id: str, data: dict[str, Any]) -> None:
        raise RuntimeError("the store is gone")

    kernels.pool.on_start = broken
    assert kernels.run("result = 6 * 7", new_session()).result == 42
