"""run_code overhead, kernel start, and store throughput, each against its baseline in the same run.

1. Median round trip of ``x = 1`` on a warm kernel: through ``invoke(session, "run_code", ...)``
   (policy check, quota check, sandboxed kernel, namespace read-back, store rows, three events)
   versus raw jupyter_client ``execute_interactive`` on a warm unsandboxed kernel. Goal: <= 1.5x.
2. The cost of the hardening (issue 13): the same warm round trip and the kernel start with the
   sandbox as it was before (the whole root bound read-only, home/NINI_HOME hidden by tmpfs, root
   inside, no Landlock or seccomp, limits by an exec'ing wrapper), rebuilt here as ``legacy``,
   versus today's. Goal: at most 10% more on a warm call.
3. Kernel start (start to first result) sandboxed with bubblewrap versus unsandboxed, both through
   nini's KernelPool, with raw ``AsyncKernelManager.start_kernel`` + ``wait_for_ready`` as reference.
4. History store: 10,000 tool calls (see store_throughput.py). Goal: >= 2,000 per second.
"""

from __future__ import annotations

import asyncio
import contextlib
import statistics
import sys
import tempfile
import time
from pathlib import Path

from collections.abc import Iterator

from jupyter_client.manager import AsyncKernelManager

import store_throughput
from nini.config import ExecutionSettings, load_settings
from nini.execution.kernels import KernelPool
from nini.execution.outcome import CodeRequest
from nini.execution import sandbox
from nini.execution.sandbox import probe_bwrap
from nini.execution.workspace import Workspace
from nini.runtime import Runtime
from nini.skills.invoke import invoke

ROUND_TRIPS = 200
STARTS = 5
GOAL_RATIO = 1.5
HARDENING_GOAL = 1.10


def legacy_agent_command(cmd, mode, limits, *, workspace, runtime_dir, shared_dir=None):  # noqa: ANN001, ANN201
    """The kernel command as nini built it before the hardening, for the "before" measurement."""
    wrapper = ("import os, resource, sys; limit = int(sys.argv[1]); "
               "resource.setrlimit(resource.RLIMIT_AS, (limit, limit)); os.execvp(sys.argv[3], sys.argv[3:])")
    cmd = [sys.executable, "-c", wrapper, str(limits.memory_bytes), "--", *cmd]
    if mode != "bwrap":
        return cmd
    hidden = [Path("/tmp"), Path.home().resolve(), workspace.parents[2]]
    args = ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    for folder in hidden:
        args += ["--tmpfs", str(folder)]
    for path in sorted({Path(p).resolve() for p in (sys.prefix, sys.base_prefix)}):
        if any(h in path.parents for h in hidden):
            args += ["--ro-bind", str(path), str(path)]
    args += ["--bind", str(workspace), str(workspace), "--bind", str(runtime_dir), str(runtime_dir)]
    args += ["--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--die-with-parent", "--new-session",
             "--cap-drop", "ALL", "--chdir", str(workspace), "--unsetenv", "JPY_PARENT_PID", "--", *cmd]
    return args


@contextlib.contextmanager
def legacy_sandbox() -> Iterator[None]:
    """Kernels started meanwhile get the sandbox of before the hardening."""
    saved = sandbox.agent_command, sandbox.prepare
    sandbox.agent_command, sandbox.prepare = legacy_agent_command, lambda *args: None
    try:
        yield
    finally:
        sandbox.agent_command, sandbox.prepare = saved


async def raw_round_trips() -> list[float]:
    manager = AsyncKernelManager(kernel_name="python3", transport="ipc")  # as nini's kernels
    await manager.start_kernel()
    client = manager.client()
    client.start_channels()
    try:
        await client.wait_for_ready(timeout=60)
        await client.execute_interactive("x = 1", timeout=30)
        return [await _timed(client.execute_interactive("x = 1", timeout=30)) for _ in range(ROUND_TRIPS)]
    finally:
        client.stop_channels()
        await manager.shutdown_kernel(now=True)


async def run_code_round_trips(home: Path) -> tuple[list[float], str]:
    async with Runtime(load_settings(home=home), project_dir=home) as runtime:
        session = runtime.create_session(title="bench")
        first = await invoke(session, "run_code", {"code": "x = 1"})
        assert first.success, first.error
        times = []
        for _ in range(ROUND_TRIPS):
            times.append(await _timed(invoke(session, "run_code", {"code": "x = 1"})))
        assert len(runtime.store.list_executions(session.id)) == ROUND_TRIPS + 1
        return times, runtime.kernels.sandbox_mode


async def pool_starts(home: Path, sandbox: str) -> list[float]:
    pool = KernelPool(ExecutionSettings(sandbox=sandbox))
    try:
        times = []
        for n in range(STARTS):
            session_id = f"start-{sandbox}-{n}"
            workspace = Workspace.for_session(home / "sessions", session_id).ensure()
            times.append(await _timed(pool.run(session_id, workspace, CodeRequest("x = 1"))))
            await pool.shutdown_session(session_id)
        return times
    finally:
        await pool.aclose()


async def raw_starts() -> list[float]:
    times = []
    for _ in range(STARTS):
        start = time.perf_counter()
        manager = AsyncKernelManager(kernel_name="python3", transport="ipc")  # as nini's kernels
        await manager.start_kernel()
        client = manager.client()
        client.start_channels()
        await client.wait_for_ready(timeout=60)
        await client.execute_interactive("x = 1", timeout=30)
        times.append(time.perf_counter() - start)
        client.stop_channels()
        await manager.shutdown_kernel(now=True)
    return times


async def _timed(awaitable) -> float:  # noqa: ANN001
    start = time.perf_counter()
    await awaitable
    return time.perf_counter() - start


def ms(values: list[float]) -> float:
    return statistics.median(values) * 1000


async def main() -> int:
    bwrap_ok, why = probe_bwrap()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        raw = ms(await raw_round_trips())
        with legacy_sandbox():
            legacy = ms((await run_code_round_trips(home / "legacy"))[0])
            legacy_start = ms(await pool_starts(home, "bwrap")) if bwrap_ok else None
        nini_times, mode = await run_code_round_trips(home / "rt")
        nini = ms(nini_times)
        start_none = ms(await pool_starts(home, "none"))
        start_bwrap = ms(await pool_starts(home, "bwrap")) if bwrap_ok else None
        start_raw = ms(await raw_starts())
    ratio = nini / raw
    print(f"bench_run_code: median of {ROUND_TRIPS} round trips of `x = 1` on a warm kernel")
    print(f"  baseline: raw jupyter_client execute_interactive   {raw:8.2f} ms")
    print(f"  invoke run_code (sandbox {mode}, recorded)          {nini:8.2f} ms  {ratio:5.2f}x baseline   "
          f"goal <= {GOAL_RATIO}x: {'met' if ratio <= GOAL_RATIO else 'MISSED'}")
    cost = nini / legacy
    print(f"  the same before the hardening (legacy sandbox)     {legacy:8.2f} ms  hardened/legacy {cost:5.2f}x   "
          f"goal <= {HARDENING_GOAL}x: {'met' if cost <= HARDENING_GOAL else 'MISSED'}")
    print(f"kernel start to first result, median of {STARTS}")
    print(f"  baseline: raw AsyncKernelManager, unsandboxed      {start_raw:8.0f} ms")
    print(f"  KernelPool, sandbox none                           {start_none:8.0f} ms  {start_none / start_raw:5.2f}x baseline")
    if start_bwrap is None:
        print(f"  KernelPool, sandbox bwrap                          skipped: {why}")
    else:
        print(f"  KernelPool, sandbox bwrap                          {start_bwrap:8.0f} ms  {start_bwrap / start_raw:5.2f}x baseline, "
              f"{start_bwrap / start_none:5.2f}x unsandboxed")
        print(f"  KernelPool, legacy sandbox (before the hardening)  {legacy_start:8.0f} ms  "
              f"hardened/legacy {start_bwrap / legacy_start:5.2f}x")
    return store_throughput.main()


if __name__ == "__main__":  # run as a script, so store_throughput imports from this folder
    sys.exit(asyncio.run(main()))
