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
4. The cost of the cgroups (issue 32): kernel start and warm round trip with each kernel in a
   cgroup of its own (``execution.cgroups`` auto) versus none (off), interleaved in the same run.
   Goal: at most 5% more on a start, nothing measurable on a warm call.
5. History store: 10,000 tool calls (see store_throughput.py). Goal: >= 2,000 per second.
"""

from __future__ import annotations

import asyncio
import contextlib
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import store_throughput
from goals import goal
from jupyter_client.manager import AsyncKernelManager

import nini
from nini.config import ExecutionSettings, load_settings
from nini.execution import cgroups, sandbox
from nini.execution.kernels import KernelPool
from nini.execution.outcome import CodeRequest
from nini.execution.sandbox import probe_bwrap
from nini.execution.workspace import Workspace
from nini.history.store import HistoryStore
from nini.history.uids import session_uid
from nini.runtime import Runtime
from nini.session import Session
from nini.skills.invoke import invoke

ROUND_TRIPS = 200
STARTS = 5
GOAL_RATIO = 1.5
HARDENING_GOAL = 1.10
CGROUP_STARTS = 8
CGROUP_START_GOAL = 1.05


def legacy_agent_command(cmd, mode, limits, *, workspace, runtime_dir, shared_dir=None, **_ignored):  # noqa: ANN001, ANN201
    """The kernel command as nini built it before the hardening, for the "before" measurement."""
    wrapper = (
        "import os, resource, sys; limit = int(sys.argv[1]); "
        "resource.setrlimit(resource.RLIMIT_AS, (limit, limit)); os.execvp(sys.argv[3], sys.argv[3:])"
    )
    cmd = [sys.executable, "-c", wrapper, str(limits.memory_bytes), "--", *cmd]
    if mode != "bwrap":
        return cmd
    hidden = [Path("/tmp"), Path.home().resolve(), workspace.parents[2]]
    args = ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    for folder in hidden:
        args += ["--tmpfs", str(folder)]
    # the interpreter and nini's checkout where a hidden folder holds them (a clone in /tmp)
    for path in sorted({Path(p).resolve() for p in (sys.prefix, sys.base_prefix, Path(nini.__file__).parents[1])}):
        if any(h in path.parents for h in hidden):
            args += ["--ro-bind", str(path), str(path)]
    args += ["--bind", str(workspace), str(workspace), "--bind", str(runtime_dir), str(runtime_dir)]
    args += [
        "--unshare-net",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
        "--chdir",
        str(workspace),
        "--unsetenv",
        "JPY_PARENT_PID",
        "--",
        *cmd,
    ]
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


async def run_code_round_trips(home: Path) -> tuple[list[float], list[float], float, str]:
    """Warm round trips through invoke on today's sandbox and on the legacy one, interleaved (the
    two kernels alternate, in alternating order) so that the machine's drift hits both alike; and
    the microseconds per call of the host-side checks the hardening added (quota, path redaction,
    artifact checks), which run the same whatever the sandbox."""
    async with Runtime(load_settings(home=home), project_dir=home) as runtime:
        legacy_session = runtime.create_session(title="legacy")
        with legacy_sandbox():
            assert (await invoke(legacy_session, "run_code", {"code": "x = 1"})).success
        hardened_session = runtime.create_session(title="hardened")
        first = await invoke(hardened_session, "run_code", {"code": "x = 1"})
        assert first.success, first.error
        hardened, legacy = [], []
        for n in range(ROUND_TRIPS):
            pair = [(hardened_session, hardened), (legacy_session, legacy)]
            for session, times in pair if n % 2 else reversed(pair):
                times.append(await _timed(invoke(session, "run_code", {"code": "x = 1"})))
        assert len(runtime.store.list_executions(hardened_session.id)) == ROUND_TRIPS + 1
        return hardened, legacy, await host_checks_us(hardened_session), runtime.kernels.sandbox_mode


async def host_checks_us(session: Session) -> float:
    """The host-side containment work of one call, in microseconds (median of many)."""
    from nini.execution.outcome import CodeOutcome
    from nini.execution.python_runner import checked_artifacts
    from nini.execution.runs import check_quota
    from nini.skills.builtin.run_code import _without_host_paths
    from nini.skills.invoke import _redact
    from nini.skills.output import ToolOutput

    session.workspace.fs.write_bytes("artifacts/c.png", b"png")
    outcome = CodeOutcome(
        success=False,
        stdout="out\n" * 20,
        stderr="Traceback ...\n" * 10,
        error={"code": "CODE_ERROR", "message": f"No such file: '{session.workspace.root}/x.csv'"},
    )
    times = []
    for _ in range(2000):
        start = time.perf_counter()
        await check_quota(session)
        cleaned = _without_host_paths(session, outcome)
        checked_artifacts(session.workspace, [{"name": "c.png", "path": "artifacts/c.png", "format": "png"}])
        _redact(session, ToolOutput(result=None, success=False, error=dict(cleaned.error or {}), summary="s"))
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6


async def pool_starts(
    home: Path, sandbox_setting: str, *, with_legacy: bool = False
) -> tuple[list[float], list[float]]:
    """Kernel starts to a first result through KernelPool; with ``with_legacy``, each start is paired
    with one on the legacy sandbox, in alternating order."""
    pool = KernelPool(ExecutionSettings(sandbox=sandbox_setting))
    try:
        current, legacy = [], []
        for n in range(STARTS):
            runs = [(current, contextlib.nullcontext)] + ([(legacy, legacy_sandbox)] if with_legacy else [])
            for times, context in runs if n % 2 else reversed(runs):
                session_id = f"start-{sandbox_setting}-{len(current)}-{len(legacy)}"
                workspace = owned_workspace(home, session_id, pool.sandbox_mode)
                with context():
                    times.append(await _timed(pool.run(session_id, workspace, CodeRequest("x = 1"))))
                await pool.shutdown_session(session_id)
        return current, legacy
    finally:
        await pool.aclose()


async def cgroup_costs(home: Path) -> dict[str, tuple[list[float], list[float]]]:
    """Kernel starts and then warm round trips of sandboxed kernels in a cgroup of their own and in
    none, interleaved in alternating order: {"cgroup" | "none": (starts, round trips)}."""
    pools = {
        "cgroup": KernelPool(ExecutionSettings(sandbox="bwrap")),
        "none": KernelPool(ExecutionSettings(sandbox="bwrap", cgroups="off")),
    }
    times: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in pools}
    try:
        for n in range(CGROUP_STARTS + 1):  # the first pair warms the machine's caches
            for name in list(pools) if n % 2 else reversed(list(pools)):
                session_id = f"cg-{name}-{n}"
                workspace = owned_workspace(home, session_id, pools[name].sandbox_mode)
                took = await _timed(pools[name].run(session_id, workspace, CodeRequest("x = 1")))
                if n:
                    times[name][0].append(took)
                if n < CGROUP_STARTS:
                    await pools[name].shutdown_session(session_id)
        for n in range(ROUND_TRIPS):
            for name in list(pools) if n % 2 else reversed(list(pools)):
                session_id = f"cg-{name}-{CGROUP_STARTS}"
                workspace = owned_workspace(home, session_id, pools[name].sandbox_mode)
                times[name][1].append(await _timed(pools[name].run(session_id, workspace, CodeRequest("x = 1"))))
        return times
    finally:
        for pool in pools.values():
            await pool.aclose()


def cgroup_setup_ms() -> tuple[float, float]:
    """The cgroup work of one agent start, measured alone (medians of 50, milliseconds): making its
    group and entering it (the /bin/sh prefix running /bin/true, less /bin/true alone), and removing
    it at its stop. What the start comparison measures, without the noise of a whole kernel start."""
    placed, made, entered, alone, released = cgroups.placement(), [], [], [], []
    for n in range(50):
        start = time.perf_counter()
        group = cgroups.new_group(placed, "bench", f"setup-{n}", memory_bytes=2 << 30, max_processes=64)
        made.append(time.perf_counter() - start)
        assert group is not None
        for command, times in ((group.command(["/bin/true"]), entered), (["/bin/true"], alone)):
            start = time.perf_counter()
            subprocess.run(command, check=True)
            times.append(time.perf_counter() - start)
        start = time.perf_counter()
        group.release()
        released.append(time.perf_counter() - start)
    return ms(made) + ms(entered) - ms(alone), ms(released)


def owned_workspace(home: Path, session_id: str, mode: sandbox.SandboxMode) -> Workspace:
    """The session's workspace, owned as a Runtime would give it: by a uid the store allocates,
    under a root nini's sandbox."""
    root = Workspace.for_session(home / "sessions", session_id).root
    if not sandbox.runs_as_session_uid(mode):
        return Workspace(root).ensure()
    store = HistoryStore(f"sqlite:///{home / 'uids.db'}")
    try:
        store.ensure_session(session_id)
        uid = session_uid(store, session_id, sandbox.ROOT_UID_BASE, sandbox.ROOT_UID_BASE + sandbox.ROOT_UID_SPAN)
    finally:
        store.close()
    return Workspace(root, (uid, uid)).ensure()


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


async def main() -> None:
    bwrap_ok, why = probe_bwrap()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        raw = ms(await raw_round_trips())
        hardened_times, legacy_times, host_us, mode = await run_code_round_trips(home / "rt")
        start_none = ms((await pool_starts(home, "none"))[0])
        if bwrap_ok:
            starts, legacy_starts = await pool_starts(home, "bwrap", with_legacy=True)
            start_bwrap, legacy_start = ms(starts), ms(legacy_starts)
        placed = cgroups.placement()
        if bwrap_ok and placed.mechanism != "none":
            costs = await cgroup_costs(home / "cg")
            setup, teardown = cgroup_setup_ms()
        start_raw = ms(await raw_starts())
    nini, legacy = ms(hardened_times), ms(legacy_times)
    ratio = nini / raw
    print(f"bench_run_code: median of {ROUND_TRIPS} round trips of `x = 1` on a warm kernel")
    print(f"  baseline: raw jupyter_client execute_interactive   {raw:8.2f} ms")
    print(
        f"  invoke run_code (sandbox {mode}, recorded)          {nini:8.2f} ms  {ratio:5.2f}x baseline   "
        f"goal <= {GOAL_RATIO}x: {'met' if ratio <= GOAL_RATIO else 'MISSED'}"
    )
    goal("bench_run_code", f"warm run_code <= {GOAL_RATIO}x raw jupyter_client", f"{ratio:.2f}x", ratio <= GOAL_RATIO)
    if mode == "bwrap":
        cost = nini / legacy
        print(
            f"  the same on the legacy sandbox (interleaved)       {legacy:8.2f} ms  hardened/legacy {cost:5.2f}x   "
            f"goal <= {HARDENING_GOAL}x: {'met' if cost <= HARDENING_GOAL else 'MISSED'}"
        )
        goal(
            "bench_run_code",
            f"hardened sandbox <= {HARDENING_GOAL}x legacy, warm",
            f"{cost:.2f}x",
            cost <= HARDENING_GOAL,
        )
        print(
            f"  of which host-side checks (quota, redaction, artifacts) {host_us:6.0f} us per call "
            f"({host_us / 1000 / legacy:.1%} of a call)"
        )
    print(f"kernel start to first result, median of {STARTS}")
    print(f"  baseline: raw AsyncKernelManager, unsandboxed      {start_raw:8.0f} ms")
    print(
        f"  KernelPool, sandbox none                           {start_none:8.0f} ms  "
        f"{start_none / start_raw:5.2f}x baseline"
    )
    if not bwrap_ok:
        print(f"  KernelPool, sandbox bwrap                          skipped: {why}")
    else:
        print(
            f"  KernelPool, sandbox bwrap                          {start_bwrap:8.0f} ms  "
            f"{start_bwrap / start_raw:5.2f}x baseline, "
            f"{start_bwrap / start_none:5.2f}x unsandboxed"
        )
        print(
            f"  KernelPool, legacy sandbox (interleaved)           {legacy_start:8.0f} ms  "
            f"hardened/legacy {start_bwrap / legacy_start:5.2f}x"
        )
    print(f"cgroups ({placed.mechanism}): sandboxed kernels in a cgroup of their own vs in none, interleaved")
    if not bwrap_ok or placed.mechanism == "none":
        print(f"  skipped: {why if not bwrap_ok else placed.detail}")
    else:
        start_ratio = ms(costs["cgroup"][0]) / ms(costs["none"][0])
        warm_ratio = ms(costs["cgroup"][1]) / ms(costs["none"][1])
        print(
            f"  kernel start, median of {CGROUP_STARTS}: {ms(costs['cgroup'][0]):8.0f} ms vs "
            f"{ms(costs['none'][0]):8.0f} ms  {start_ratio:5.3f}x   goal <= {CGROUP_START_GOAL}x: "
            f"{'met' if start_ratio <= CGROUP_START_GOAL else 'MISSED'}"
        )
        what = f"kernel start in a cgroup <= {CGROUP_START_GOAL}x none"
        goal("bench_run_code", what, f"{start_ratio:.3f}x", start_ratio <= CGROUP_START_GOAL)
        print(
            f"  warm call, median of {ROUND_TRIPS}:   {ms(costs['cgroup'][1]):8.2f} ms vs "
            f"{ms(costs['none'][1]):8.2f} ms  "
            f"{warm_ratio:5.3f}x"
        )
        print(
            f"  the cgroup work alone: {setup:.2f} ms to make and enter a group "
            f"({setup / ms(costs['none'][0]):.2%} of a "
            f"start), {teardown:.2f} ms to remove it at the kernel's stop; nothing per call"
        )


if __name__ == "__main__":  # run as a script, so store_throughput imports from this folder
    asyncio.run(main())
    sys.exit(store_throughput.main())  # it runs event loops of its own: after this one has closed
