"""Idle kernels and R workers culled, a cap on live ones (issue 36, item 3), with real sandboxed kernels
(bwrap where it works, else the unsandboxed mode) and real R workers: the process and all it held go,
the session's next step starts a new one and says its variables are gone, the workspace stays; a busy
one is never culled. Every wait is on a condition, with a generous deadline."""

from __future__ import annotations

import asyncio
import os
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from nini.config import ExecutionSettings, Settings
from nini.execution.kernels import KernelPool
from nini.execution.outcome import CodeOutcome, CodeRequest
from nini.execution.r_workers import new_worker_pool
from tests.conftest import sandbox_uid
from tests.r_sandbox.conftest import needs_r

from .conftest import Kernels, new_session

DEADLINE_S = 90.0  # a loaded 2-core machine starts a sandboxed kernel in seconds, not minutes
IDLE_NOTICE = "idle for more than 1 s (execution.cull_idle_seconds)"
LOST = "variables and imports of earlier steps are gone"


@pytest.fixture
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


def make_pool(loop: asyncio.AbstractEventLoop, tmp_path: Path, **settings: Any) -> Iterator[Kernels]:
    pool = KernelPool(ExecutionSettings(cull_interval_seconds=0.2, **settings), language="en")
    try:
        yield Kernels(loop, pool, tmp_path / "sessions")
    finally:
        loop.run_until_complete(pool.aclose())


@pytest.fixture
def idle_pool(loop: asyncio.AbstractEventLoop, tmp_path: Path) -> Iterator[Kernels]:
    yield from make_pool(loop, tmp_path, cull_idle_seconds=1, max_live_kernels=0)


@pytest.fixture
def capped_pool(loop: asyncio.AbstractEventLoop, tmp_path: Path) -> Iterator[Kernels]:
    yield from make_pool(loop, tmp_path, cull_idle_seconds=0, max_live_kernels=2)


@pytest.fixture
def busy_pool(loop: asyncio.AbstractEventLoop, tmp_path: Path) -> Iterator[Kernels]:
    yield from make_pool(loop, tmp_path, cull_idle_seconds=1, max_live_kernels=2)


async def until(condition: Callable[[], bool], what: str | Callable[[], str]) -> None:
    """Poll ``condition`` while the loop (and the culler on it) runs; fail after ``DEADLINE_S``
    saying ``what`` (or what it returns then)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + DEADLINE_S
    while not condition():
        assert loop.time() < deadline, f"not within {DEADLINE_S:g} s: {what if isinstance(what, str) else what()}"
        await asyncio.sleep(0.05)


def processes_of(pid: int) -> list[psutil.Process]:
    """``pid`` and its descendants (bwrap, confine, the kernel in its pid namespace)."""
    root = psutil.Process(pid)
    return [root, *root.children(recursive=True)]


def all_gone(processes: list[psutil.Process]) -> bool:
    """The first (nini's child, which nini reaps) no longer exists; its descendants have ended (a
    zombie left for this machine's init to reap has ended too)."""

    def ended(process: psutil.Process) -> bool:
        try:
            return not process.is_running() or process.status() == psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return True

    return not psutil.pid_exists(processes[0].pid) and all(ended(p) for p in processes[1:])


def open_descriptors() -> list[str]:
    """What this process's open descriptors point at (sockets, pipes, files), sorted."""
    found = []
    for fd in Path("/proc/self/fd").iterdir():
        try:
            found.append(os.readlink(fd))
        except OSError:  # the listing's own descriptor, closed by now
            pass
    return sorted(found)


def test_an_idle_kernel_goes_and_the_next_run_starts_a_new_one_that_says_so(idle_pool: Kernels) -> None:
    kernels, pool, session = idle_pool, idle_pool.pool, new_session()
    told: list[dict[str, Any]] = []

    async def listen(session_id: str, data: dict[str, Any]) -> None:
        told.append(data)

    pool.on_start = listen
    first = kernels.run("x = 1\nwith open('kept.txt', 'w') as f:\n    f.write('still here')", session)
    assert first.success, first.error
    pid = pool.kernel_info(session)["pid"]
    processes = processes_of(pid)
    assert len(processes) >= 2 if pool.sandbox_mode == "bwrap" else processes
    runtime_dir, group = pool._kernels[session].runtime_dir, pool._kernels[session].group
    assert runtime_dir is not None and runtime_dir.is_dir()

    kernels.wait(until(lambda: pool.kernel_info(session) is None and all_gone(processes), "the idle kernel culled"))
    assert not runtime_dir.exists()  # its connection file, ipc sockets and log went with it
    assert group is None or not any(path.exists() for path in group.paths)  # its cgroup, where it had one
    assert pool.culler.live_count() == 0
    descriptors = open_descriptors()

    after = kernels.run("print(x)", session)
    assert not after.success and after.error["ename"] == "NameError"
    assert after.stderr.startswith("nini: the session's Python kernel had been " + IDLE_NOTICE)
    assert LOST in after.stderr and "load datasets again by name" in after.stderr
    assert [d["state"] for d in told] == ["starting", "ready", "starting", "ready"]
    assert "culled" not in told[0] and told[2]["culled"] == "idle"
    assert pool.kernel_info(session)["pid"] != pid
    again = kernels.run("print(open('kept.txt').read())", session)  # the workspace stayed; said once only
    assert again.success and again.stdout == "still here\n" and "nini:" not in again.stderr
    # a second kernel started and culled leaves this process holding what it held after the first:
    # its sockets (zmq contexts included) and files are closed, not leaked one set per kernel
    kernels.wait(until(lambda: pool.kernel_info(session) is None, "the second kernel culled"))
    # none beyond those held after the first kernel; waited for, not read once: this worker process
    # may hold a short-lived descriptor of its own (a temporary file, a socket of an earlier test's
    # server closing), and one held then may have closed since; a leak never goes
    extra: Counter[str] = Counter()

    def no_extra() -> bool:
        extra.clear()
        extra.update(Counter(open_descriptors()) - Counter(descriptors))
        return not extra

    kernels.wait(until(no_extra, lambda: f"no descriptors beyond those after the first kernel: {dict(extra)}"))


def test_the_cap_shuts_the_least_recently_used_kernel_down_first(capped_pool: Kernels) -> None:
    kernels, pool = capped_pool, capped_pool.pool
    a, b, c = new_session(), new_session(), new_session()
    for session in (a, b):
        assert kernels.run(f"name = {session!r}", session).success
    pid_a = pool.kernel_info(a)["pid"]
    processes_a = processes_of(pid_a)
    assert kernels.run("result = name", b).result == b  # b used after a: a is the least recently used
    assert kernels.run(f"name = {c!r}", c).success  # a third kernel: a goes first
    assert pool.kernel_info(a) is None and pool.kernel_info(b) is not None and pool.kernel_info(c) is not None
    assert pool.culler.live_count() == 2
    kernels.wait(until(lambda: all_gone(processes_a), "a's processes gone"))

    back = kernels.run("result = 'name' in dir()", a)  # a again: b is now the least recently used
    assert back.result is False
    assert back.stderr.startswith(
        "nini: the session's Python kernel was shut down to make room for another "
        "session's (at most 2 run at once on this server, execution.max_live_kernels)"
    )
    assert LOST in back.stderr
    assert pool.kernel_info(b) is None and kernels.run("result = name", c).result == c


def test_a_busy_kernel_is_never_culled(busy_pool: Kernels) -> None:
    kernels, pool = busy_pool, busy_pool.pool
    busy, idle, third = new_session(), new_session(), new_session()
    assert kernels.run("x = 'kept'", busy).success
    pid = pool.kernel_info(busy)["pid"]
    workspace = kernels.workspace(busy)
    # runs until the test lets it end (a file appears): busy for as long as the test needs
    wait_for_go = "import os, time\nwhile not os.path.exists('go'):\n    time.sleep(0.05)\nresult = x"

    async def scenario() -> CodeOutcome:
        long_run = asyncio.ensure_future(pool.run(busy, workspace, CodeRequest(wait_for_go, timeout_s=DEADLINE_S * 2)))
        await until(lambda: busy not in pool.culler.idle_sessions(), "the long run started")
        await run_in(idle)
        await run_in(third)  # over the cap of 2: the idle one goes, never the busy one
        assert pool.kernel_info(idle) is None and pool.kernel_info(busy)["pid"] == pid
        # third was used after the long run started: once it is culled as idle, the busy kernel had
        # been past the idle timeout in that sweep too, and stayed
        await until(lambda: pool.kernel_info(third) is None, "the idle kernel culled")
        assert pool.kernel_info(busy)["pid"] == pid
        (workspace.root / "go").touch()
        return await long_run

    async def run_in(session: str) -> None:
        outcome = await pool.run(session, kernels.workspace(session), CodeRequest("y = 1"))
        assert outcome.success, outcome.error

    outcome = kernels.wait(scenario())
    assert outcome.success, outcome.error
    assert outcome.result == "kept" and "nini:" not in outcome.stderr
    assert pool.kernel_info(busy)["pid"] == pid and pool.kernel_info(busy)["restarts"] == 0


@pytest.fixture
def one_kernel_pool(loop: asyncio.AbstractEventLoop, tmp_path: Path) -> Iterator[Kernels]:
    yield from make_pool(loop, tmp_path, cull_idle_seconds=0, max_live_kernels=1)


def test_over_the_cap_while_all_are_busy_a_kernel_starts_anyway_and_the_cap_comes_back(
    one_kernel_pool: Kernels,
) -> None:
    kernels, pool = one_kernel_pool, one_kernel_pool.pool
    busy, other = new_session(), new_session()
    workspace = kernels.workspace(busy)

    async def scenario() -> None:
        wait_for_go = "import os, time\nwhile not os.path.exists('go'):\n    time.sleep(0.05)\nresult = 1"
        long_run = asyncio.ensure_future(pool.run(busy, workspace, CodeRequest(wait_for_go, timeout_s=DEADLINE_S * 2)))
        await until(
            lambda: pool.culler.live_count() == 1 and busy not in pool.culler.idle_sessions(), "the long run started"
        )
        outcome = await pool.run(other, kernels.workspace(other), CodeRequest("y = 1"))  # the cap's one is busy
        assert outcome.success and pool.culler.live_count() == 2
        (workspace.root / "go").touch()
        assert (await long_run).success
        # both idle now: the periodic sweep brings the pool back under its cap, the least recently used first
        await until(lambda: pool.culler.live_count() == 1, "the cap restored")
        assert pool.kernel_info(other) is None and pool.kernel_info(busy) is not None

    kernels.wait(scenario())


def test_the_notice_is_worded_in_the_language_of_nini(one_kernel_pool: Kernels) -> None:
    kernels, pool = one_kernel_pool, one_kernel_pool.pool
    first, second = new_session(), new_session()
    assert kernels.run("x = 1", first).success and kernels.run("y = 1", second).success  # the cap of 1: first goes
    pool.language = "zh"  # ui.language
    back = kernels.run("result = 'x' in dir()", first)
    assert back.result is False
    assert back.stderr.startswith(
        "nini: 本会话的 Python 内核为给其他会话腾出位置已被关闭（本服务器最多同时运行 1 个，"
        "execution.max_live_kernels）；已为这一步启动新的进程，之前步骤的变量和导入已丢失"
    )


@needs_r
def test_an_idle_r_worker_goes_and_the_next_run_says_so(loop: asyncio.AbstractEventLoop, tmp_path: Path) -> None:
    settings = Settings(
        execution={"cull_idle_seconds": 1, "cull_interval_seconds": 0.2},
        r={"max_live_workers": 0},
        ui={"language": "en"},
    )
    pool = new_worker_pool(settings, sandbox_uid)
    session = new_session()
    workspace = tmp_path / "sessions" / session / "workspace"
    workspace.mkdir(parents=True)

    def run(code: str) -> dict[str, Any]:
        return loop.run_until_complete(pool.run(session, workspace, {"code": code, "language": "en"}))

    try:
        first = run("x <- 1\nwriteLines('still here', 'kept.txt')")
        assert first["success"], first["error"]
        pid = pool.worker_info(session)["pid"]
        processes = processes_of(pid)
        loop.run_until_complete(
            until(lambda: pool.worker_info(session) is None and all_gone(processes), "the R worker culled")
        )
        after = run("print(x)")
        assert not after["success"] and "'x' not found" in after["error"]["message"]
        assert after["stderr"].startswith("nini: the session's R worker had been " + IDLE_NOTICE)
        assert LOST in after["stderr"]
        assert run("cat(readLines('kept.txt'))")["stdout"] == "still here"
    finally:
        loop.run_until_complete(pool.aclose())


@needs_r
def test_the_r_cap_shuts_the_least_recently_used_worker_down(loop: asyncio.AbstractEventLoop, tmp_path: Path) -> None:
    settings = Settings(execution={"cull_idle_seconds": 0}, r={"max_live_workers": 1}, ui={"language": "en"})
    pool = new_worker_pool(settings, sandbox_uid)
    first, second = new_session(), new_session()

    def run(session: str, code: str) -> dict[str, Any]:
        workspace = tmp_path / "sessions" / session / "workspace"
        workspace.mkdir(parents=True, exist_ok=True)
        return loop.run_until_complete(pool.run(session, workspace, {"code": code, "language": "en"}))

    try:
        assert run(first, "x <- 1")["success"]
        assert run(second, "y <- 2")["success"]
        assert pool.worker_info(first) is None and pool.worker_info(second) is not None
        back = run(first, "result <- exists('x')")
        assert back["result"] is False
        assert back["stderr"].startswith(
            "nini: the session's R worker was shut down to make room for another "
            "session's (at most 1 run at once on this server, r.max_live_workers)"
        )
    finally:
        loop.run_until_complete(pool.aclose())


@needs_r
def test_a_busy_r_worker_is_never_culled(loop: asyncio.AbstractEventLoop, tmp_path: Path) -> None:
    settings = Settings(
        execution={"cull_idle_seconds": 1, "cull_interval_seconds": 0.2},
        r={"max_live_workers": 0},
        ui={"language": "en"},
    )
    pool = new_worker_pool(settings, sandbox_uid)
    busy, other = new_session(), new_session()

    def workspace(session: str) -> Path:
        folder = tmp_path / "sessions" / session / "workspace"
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    async def scenario() -> dict[str, Any]:
        assert (await pool.run(busy, workspace(busy), {"code": "x <- 'kept'"}))["success"]
        pid = pool.worker_info(busy)["pid"]
        waiting = "while (!file.exists('go')) Sys.sleep(0.05)\nresult <- x"
        long_run = asyncio.ensure_future(
            pool.run(busy, workspace(busy), {"code": waiting, "timeout_s": DEADLINE_S * 2})
        )
        await until(lambda: busy not in pool.keeper.idle_sessions(), "the long run started")
        assert (await pool.run(other, workspace(other), {"code": "y <- 1"}))["success"]
        # other was used after the long run started: once it is culled, the busy worker was past the
        # idle timeout in that sweep too, and stayed
        await until(lambda: pool.worker_info(other) is None, "the idle worker culled")
        assert pool.worker_info(busy)["pid"] == pid
        (workspace(busy) / "go").touch()
        result = await long_run
        assert pool.worker_info(busy)["pid"] == pid
        return result

    try:
        result = loop.run_until_complete(scenario())
        assert result["success"], result["error"]
        assert result["result"] == "kept" and "nini:" not in result["stderr"]
    finally:
        loop.run_until_complete(pool.aclose())
