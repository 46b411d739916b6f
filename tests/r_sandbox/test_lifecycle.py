"""Workers that time out, run out of memory, crash or fail to start; sessions side by side."""

from __future__ import annotations

import asyncio
import gc
import os
import signal
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from r_sandbox.client import RWorkerPool
from r_sandbox.errors import RSandboxError
from tests.r_sandbox.conftest import Workers, default_wrap, needs_r, new_session
from tests.timeouts import timeout

pytestmark = needs_r
SLEEPS = "invisible(file.create('here')); Sys.sleep(30)"  # says it is running, then sleeps


async def started(marker: Path, run: asyncio.Future[Any]) -> None:
    """Until the run's code has written ``marker`` (it is running in the worker then)."""
    deadline = time.monotonic() + timeout(60)
    while not marker.exists():  # a poll of the file the code writes
        assert not run.done(), run.result()
        assert time.monotonic() < deadline, f"{marker.name} never appeared"
        await asyncio.sleep(0.05)


def gone(pid: int, *, reaped: bool = False) -> None:
    """Until ``pid`` has exited (a zombie not yet reaped counts as exited, unless ``reaped``)."""
    deadline = time.monotonic() + timeout(30)
    while True:
        try:
            if reaped or psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                os.kill(pid, 0)
            else:
                return
        except (ProcessLookupError, psutil.NoSuchProcess):
            return
        assert time.monotonic() < deadline, f"process {pid} still runs"
        time.sleep(0.05)  # a poll of the process table


def assert_state_lost_message(out: dict[str, Any], code: str) -> None:
    assert not out["success"] and out["error"]["code"] == code
    message = out["error"]["message"]
    assert "R session state" in message and "was lost" in message
    assert "datasets and artifacts saved in the workspace are kept" in message


@pytest.mark.slow
def test_timeout_restarts_the_worker_and_the_session_goes_on(workers: Workers) -> None:
    session = new_session()
    workers.run("x <- 1", session)
    before = workers.pool.worker_info(session)
    out = workers.run("repeat {}", session, timeout_s=2)
    assert_state_lost_message(out, "TIMEOUT")
    assert "after 2 s" in out["error"]["message"]
    after = workers.pool.worker_info(session)
    assert after["pid"] != before["pid"] and after["restarts"] == 1
    again = workers.run("exists('x')\n1 + 1", session)
    assert again["success"] and again["stdout"] == "[1] FALSE\n[1] 2\n"


def test_an_impossible_allocation_is_an_r_error(workers: Workers) -> None:
    session = new_session()
    out = workers.run("y <- 1\nx <- numeric(1e10)", session)
    assert out["error"]["code"] == "CODE_ERROR" and out["error"]["line"] == 2
    assert "cannot allocate vector of size" in out["error"]["message"]
    assert workers.run("y", session)["stdout"] == "[1] 1\n"  # nothing lost


def test_memory_limit_is_the_workers_address_space(workers: Workers) -> None:
    session = new_session()
    out = workers.run("x <- numeric(2e8)", session)  # 1.6 GB: more than the 1024 MB limit, far less than the host
    assert out["error"]["code"] == "CODE_ERROR" and "cannot allocate" in out["error"]["message"]
    assert workers.run("x <- numeric(1e7); length(x)", session)["stdout"] == "[1] 10000000\n"


def test_deep_recursion_is_an_error_not_a_crash(workers: Workers) -> None:
    session = new_session()
    out = workers.run("options(expressions = 500000)\nf <- function(n) if (n > 0) f(n - 1) else 0\nf(1e5)", session)
    assert out["error"]["code"] == "CODE_ERROR" and "C stack" in out["error"]["message"]
    assert workers.run("1", session)["success"]


@pytest.mark.slow
def test_a_killed_worker_is_worker_died_and_the_next_call_works(workers: Workers) -> None:
    session = new_session()
    workers.run("x <- 1", session)
    pid = workers.pool.worker_info(session)["pid"]

    async def run_and_kill() -> dict[str, Any]:
        task = asyncio.ensure_future(workers.pool.run(session, workers.workspace(session), {"code": SLEEPS}))
        await started(workers.workspace(session) / "here", task)
        os.kill(pid, signal.SIGKILL)
        return await asyncio.wait_for(task, timeout(30))

    out = workers.wait(run_and_kill())
    assert_state_lost_message(out, "WORKER_DIED")
    assert "died while running this code" in out["error"]["message"]
    assert workers.run("exists('x')", session)["stdout"] == "[1] FALSE\n"
    # killed while idle: the next call says so, without running the code
    idle_pid = workers.pool.worker_info(session)["pid"]
    os.kill(idle_pid, signal.SIGKILL)
    gone(idle_pid)
    idle = workers.run("cat('ran\\n')", session)
    assert idle["error"]["code"] == "WORKER_DIED" and idle["stdout"] == ""
    assert workers.run("cat('ran\\n')", session)["stdout"] == "ran\n"
    assert workers.pool.worker_info(session)["restarts"] == 2


@pytest.mark.slow
def test_sessions_run_concurrently_without_mixing_state(workers: Workers) -> None:
    first, second = new_session(), new_session()
    workers.run("1", first), workers.run("1", second)  # both workers started

    # each run says it is here and waits for the test's go: run one after the other, the second would
    # never be here while the first waits, and the test would fail waiting for it
    wait_for_go = "invisible(file.create('here')); while (!file.exists('go')) Sys.sleep(0.05); x"

    async def both() -> list[dict[str, Any]]:
        runs = [
            asyncio.ensure_future(
                workers.pool.run(name, workers.workspace(name), {"code": f"x <- '{x}'; {wait_for_go}"})
            )
            for name, x in ((first, "first"), (second, "second"))
        ]
        for name, run in zip((first, second), runs, strict=True):
            await started(workers.workspace(name) / "here", run)
        for name in (first, second):
            (workers.workspace(name) / "go").touch()
        return await asyncio.gather(*runs)

    one, two = workers.wait(both())
    assert one["stdout"] == '[1] "first"\n' and two["stdout"] == '[1] "second"\n'


def test_runs_of_one_session_are_serialised(workers: Workers) -> None:
    session = new_session()

    async def three() -> list[dict[str, Any]]:
        root = workers.workspace(session)
        return await asyncio.gather(
            *(
                workers.pool.run(session, root, {"code": "n <- if (exists('n')) n + 1 else 1; Sys.sleep(0.1); n"})
                for _ in range(3)
            )
        )

    outs = workers.wait(three())
    assert sorted(o["stdout"] for o in outs) == ["[1] 1\n", "[1] 2\n", "[1] 3\n"]


def test_a_cancelled_run_discards_its_worker(workers: Workers) -> None:
    session = new_session()
    workers.run("x <- 1", session)
    pid = workers.pool.worker_info(session)["pid"]

    async def cancel() -> None:
        task = asyncio.ensure_future(workers.pool.run(session, workers.workspace(session), {"code": SLEEPS}))
        await started(workers.workspace(session) / "here", task)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    workers.wait(cancel())
    assert workers.pool.worker_info(session) is None
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert workers.run("exists('x')", session)["stdout"] == "[1] FALSE\n"


def test_worker_info_restart_and_shutdown(workers: Workers) -> None:
    session = new_session()
    assert workers.pool.worker_info(session) is None
    workers.run("x <- 1", session)
    info = workers.pool.worker_info(session)
    assert set(info) == {"pid", "started_at", "restarts", "r_version", "startup_ms"}
    assert info["r_version"].startswith("R version 4.") and info["restarts"] == 0 and info["startup_ms"] > 0
    workers.wait(workers.pool.restart(session))
    assert workers.run("exists('x')", session)["stdout"] == "[1] FALSE\n"
    assert workers.pool.worker_info(session)["restarts"] == 1
    runtime = workers.pool._workers[session].runtime_dir
    workers.wait(workers.pool.shutdown_session(session))
    assert workers.pool.worker_info(session) is None and not runtime.exists()
    with pytest.raises(ProcessLookupError):
        os.kill(info["pid"], 0)


def test_aclose_kills_everything_and_is_safe_twice(tmp_path: Path) -> None:
    async def scenario() -> tuple[dict[str, Any], list[int], list[Path]]:
        pool = RWorkerPool(wrap_command=default_wrap())
        for name in ("a", "b"):
            await pool.run(name, tmp_path / name, {"code": "1"})
        pids = [pool.worker_info(n)["pid"] for n in ("a", "b")]
        runtimes = [w.runtime_dir for w in pool._workers.values()]
        busy = asyncio.ensure_future(pool.run("a", tmp_path / "a", {"code": SLEEPS}))
        await started(tmp_path / "a" / "here", busy)
        await pool.aclose()
        await pool.aclose()
        out = await asyncio.wait_for(busy, timeout(30))
        with pytest.raises(RSandboxError) as caught:
            await pool.run("a", tmp_path / "a", {"code": "1"})
        assert caught.value.code == "WORKER_DIED"
        return out, pids, runtimes

    out, pids, runtimes = asyncio.run(scenario())
    assert out["error"]["code"] == "WORKER_DIED"
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    assert not any(path.exists() for path in runtimes)


def test_allowed_packages_add_to_the_default_list(workers: Workers, tmp_path: Path) -> None:
    refused = workers.run("library(httr)")
    assert refused["error"]["code"] == "POLICY_VIOLATION"
    assert refused["error"]["message"] == "不允许使用 R 包: httr (第 1 行)"

    async def with_survival() -> dict[str, Any]:
        pool = RWorkerPool(wrap_command=default_wrap(), allowed_packages=["httr"])
        try:
            code = "suppressWarnings(requireNamespace('httr', quietly = TRUE))"
            return await pool.run("s", tmp_path, {"code": code})
        finally:
            await pool.aclose()

    out = asyncio.run(with_survival())
    assert out["success"], out["error"]  # TRUE or FALSE: whether R has it installed is not the policy's business


# asyncio complains about the forgotten pipes of a loop that is gone: that is the misuse under test
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_pool_dropped_without_aclose_leaves_nothing_behind(tmp_path: Path) -> None:
    async def forgotten() -> tuple[int, Path]:
        pool = RWorkerPool(wrap_command=default_wrap())
        await pool.run("s", tmp_path, {"code": "1"})
        return pool.worker_info("s")["pid"], pool._workers["s"].runtime_dir

    pid, runtime = asyncio.run(forgotten())  # the pool is garbage once the loop is gone
    gc.collect()
    assert not runtime.exists()
    gone(pid, reaped=True)


def test_a_worker_that_cannot_start_raises_with_its_output(tmp_path: Path) -> None:
    def broken(cmd: list[str], workspace: Path, runtime: Path) -> list[str]:
        return ["sh", "-c", "echo 'no sandbox for you' >&2; exit 3"]

    def no_r(cmd: list[str], workspace: Path, runtime: Path) -> list[str]:
        return ["env", "R_HOME=/nonexistent/R", *cmd]

    async def start(wrap: Any) -> RSandboxError:
        pool = RWorkerPool(wrap_command=wrap, start_timeout_s=30)
        try:
            with pytest.raises(RSandboxError) as caught:
                await pool.run("s", tmp_path, {"code": "1"})
            return caught.value
        finally:
            await pool.aclose()

    def missing(cmd: list[str], workspace: Path, runtime: Path) -> list[str]:
        return ["/nonexistent/bwrap", *cmd]

    died = asyncio.run(start(broken))
    assert died.code == "WORKER_DIED" and "no sandbox for you" in died.message
    not_there = asyncio.run(start(missing))
    assert not_there.code == "WORKER_DIED" and "could not be started" in not_there.message
    unavailable = asyncio.run(start(no_r))
    assert unavailable.code == "R_UNAVAILABLE" and "R cannot be loaded" in unavailable.message
