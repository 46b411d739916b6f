"""KernelPool: one Python kernel per session (started, limited, sandboxed and restarted by nini),
or an existing kernel of the Jupyter server, given by id, that nini only borrows.

Where a session's kernel runs is ``execution.kernels``: on this machine in nini's sandbox
("local"), or on the Jupyter server's Kernel/Enterprise Gateway ("gateway", see ``gateway.py``),
where the gateway's own sandbox applies and the workspace is mirrored (``mirror.py``); "auto" is
the gateway when the server has one.

Kernels are jupyter_client ``AsyncKernelManager``s running ``sys.executable -m ipykernel_launcher``,
so the kernel imports the same nini and pandas as the host. Runs of one session are serialised;
different sessions run concurrently. Policy checks happen before this (in the run_code skill).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import queue
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Literal

from jupyter_client.kernelspec import KernelSpec
from jupyter_client.manager import AsyncKernelManager
from jupyter_core.utils import ensure_async

from nini.config import ExecutionSettings
from nini.errors import ErrorCode, NiniError
from nini.execution import cgroups, confine, sandbox
from nini.execution.channel_guard import ChannelGuard, limit_context
from nini.execution.culling import Culler
from nini.execution.gateway import GatewayKernel, gateway_url, host_of
from nini.execution.isolation import Isolation, Sandboxing
from nini.execution.kernel_handle import KernelHandle, evaluate_silently, interrupt, new_client, stop
from nini.execution.mirror import Mirror
from nini.execution.outcome import CodeOutcome, CodeRequest, RunStop
from nini.execution.output_caps import MIB, OutputLimits
from nini.execution.python_runner import run_request
from nini.execution.runtime_dirs import make_runtime_dir, sweep_runtime_dirs
from nini.execution.sandbox import SandboxMode
from nini.execution.workspace import Workspace

__all__ = ["KernelBackend", "KernelPool", "KernelStartListener"]

from nini.language import words_language

KernelBackend = Literal["local", "gateway"]
# Told (session id, {"state": "starting"|"ready"|"failed", "sandbox", "duration_ms"?}) as a session's own
# kernel starts: the runtime publishes ``kernel_start`` events, so a client says "Starting sandbox…".
KernelStartListener = Callable[[str, dict[str, Any]], Awaitable[None]]
log = logging.getLogger("nini.execution.kernels")

START_TIMEOUT_S = 60.0
KERNEL_PREFIX = "nini-kernel-"  # of a kernel's runtime folder (``runtime_dirs.PREFIXES``)
# What a kernel inherits from nini's environment. Nothing else: API keys of the LLM providers live
# there, and agent code must not read them.
_PASSED_ENV = frozenset("PATH PYTHONPATH LANG LANGUAGE TZ OMP_NUM_THREADS OPENBLAS_NUM_THREADS MKL_NUM_THREADS".split())


class _SpecKernelManager(AsyncKernelManager):
    """An AsyncKernelManager whose kernel spec is built in code instead of read from kernel.json.

    The spec carries nini's command (limits wrapper, bwrap) and the interrupt mode, which
    ``interrupt_kernel`` reads from the spec.
    """

    def __init__(self, spec: KernelSpec, **kwargs: Any) -> None:
        self._nini_spec = spec
        super().__init__(**kwargs)

    @property
    def kernel_spec(self) -> KernelSpec:
        return self._nini_spec


class KernelPool:
    """One kernel per session (agent-owned), or an existing kernel of a Jupyter server by id."""

    def __init__(
        self,
        settings: ExecutionSettings,
        *,
        multi_kernel_manager: Any = None,
        language: str = "zh",
        sandboxing: Sandboxing | None = None,
    ) -> None:
        self.settings = settings
        # the runtime's one decision of execution.sandbox (its R workers and data readers use it too)
        self.sandboxing = sandboxing or Sandboxing(settings)
        self.language = language  # ui.language: the messages that name a limit are worded in it, per run
        self.multi_kernel_manager = multi_kernel_manager  # AsyncMultiKernelManager or the server's MappingKernelManager
        self._kernels: dict[str, KernelHandle] = {}
        self._external: dict[str, KernelHandle] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self.gateway_url = gateway_url(multi_kernel_manager)  # the server's --gateway-url, if any
        self.on_start: KernelStartListener | None = None  # set by the runtime
        # idle kernels shut down and a cap on live ones (execution.cull_idle_seconds, max_live_kernels)
        self.culler = Culler(
            self,
            idle_s=settings.cull_idle_seconds,
            interval_s=settings.cull_interval_seconds,
            cap=settings.max_live_kernels,
            kind="python",
        )
        sweep_runtime_dirs([sandbox.runtime_base()])  # the folders of kernels whose nini was killed

    @property
    def backend(self) -> KernelBackend:
        """Where the sessions' own kernels run: ``execution.kernels`` with "auto" resolved.

        Raises NiniError(INTERNAL) when the setting asks for a gateway this server does not have.
        """
        if self.settings.kernels == "local" or (self.settings.kernels == "auto" and self.gateway_url is None):
            return "local"
        if self.gateway_url is None:
            raise NiniError(
                ErrorCode.INTERNAL,
                "execution.kernels is 'gateway' but nini does not run inside a Jupyter server started with a "
                "gateway (--gateway-url); set execution.kernels to 'auto' or 'local' to run kernels here",
            )
        return "gateway"

    @property
    def gateway_host(self) -> str | None:
        """``host:port`` of the gateway the sessions' kernels run on (no credentials), else None."""
        try:
            return host_of(self.gateway_url) if self.gateway_url and self.backend == "gateway" else None
        except NiniError:
            return None

    @property
    def sandbox_mode(self) -> SandboxMode:
        """How kernels are sandboxed here (``Sandboxing.mode``).

        Raises NiniError(INTERNAL) when the setting demands bwrap and bwrap does not work.
        """
        return self.sandboxing.mode

    def isolation(self) -> Isolation:
        """Where the sessions' own kernels run: "gateway" (in the gateway's sandbox), "sandbox" or
        "unsandboxed"."""
        if self.backend == "gateway":
            return "gateway"
        return self.sandboxing.isolation

    async def run(
        self,
        session_id: str,
        workspace: Workspace,
        request: CodeRequest,
        *,
        kernel_id: str | None = None,
        stop: RunStop | None = None,
    ) -> CodeOutcome:
        """Run ``request`` in the session's kernel (started on first use) or in server kernel ``kernel_id``;
        ``stop`` (the workspace's budget watch) can end a run in the session's own kernel early. When
        the session's kernel had been culled since its last run, the run's stderr starts saying so."""
        async with self._lock(f"kernel:{kernel_id}" if kernel_id else session_id):
            kernel = await self._borrow(kernel_id) if kernel_id else await self._own(session_id, workspace)
            external = kernel.sandbox is None
            kernel.last_used = time.monotonic()
            try:
                report = await run_request(
                    kernel.client,
                    kernel.manager,
                    workspace,
                    request,
                    prelude=kernel.needs_prelude or external,  # a server kernel may have been restarted by its user
                    restartable=not external,
                    mirror=kernel.mirror,
                    stop=None if external else stop,
                    guard=kernel.guard,
                )
            except asyncio.CancelledError:
                await interrupt(kernel)
                raise
            finally:
                kernel.last_used = time.monotonic()
            if report.prelude_ran:
                kernel.needs_prelude = False
            # killed by its memory cgroup: the connection goes ("cut") or the process is found dead
            if report.state in ("dead", "cut") and kernel.group is not None and kernel.group.oom_kills():
                report.outcome.error = cgroups.oom_error(
                    "kernel", self.settings.memory_limit_mb, words_language(self.language)
                )
            if report.state in ("stuck", "dead", "cut"):
                if external:
                    await self._forget_external(kernel_id or "")
                else:
                    await self._restart(session_id, kernel)
            notice = "" if external else self.culler.take_notice(session_id, self.language)
            return (
                dataclasses.replace(report.outcome, stderr=notice + report.outcome.stderr) if notice else report.outcome
            )

    async def evaluate(self, kernel_id: str, expression: str, timeout_s: float = 5) -> str | None:
        """The text/plain of ``expression`` evaluated in server kernel ``kernel_id`` (a notebook's),
        or None when it does not answer within ``timeout_s`` (busy with the user's code) or the
        expression fails.

        Silent and without history (the user's execution count does not move), and never an
        interrupt: a late answer is only ignored, the user's own code is never disturbed.
        """
        found = await self.evaluate_in(kernel_id, expression, timeout_s)
        return found[1] if found is not None and found[0] == "ok" else None

    async def evaluate_in(self, kernel_id: str, expression: str, timeout_s: float) -> tuple[str, str] | None:
        """``evaluate``, telling why not: ("ok", text/plain), ("error", "ENAME: evalue") or
        ("timeout", ""); None when the kernel is gone."""
        try:
            manager = self.multi_kernel_manager.get_kernel(kernel_id) if self.multi_kernel_manager else None
        except Exception:  # KeyError, or the server's HTTPError(404): gone since it was checked
            return None
        if manager is None:
            return None
        async with self._lock(f"kernel:{kernel_id}"):
            kernel = await self._borrow(kernel_id)
            return await evaluate_silently(kernel, expression, timeout_s)

    async def evaluate_own(
        self, session_id: str, workspace: Workspace, expression: str, timeout_s: float
    ) -> tuple[str, str]:
        """``expression`` evaluated silently in the session's own kernel (started on first use):
        ("ok", text/plain), ("error", "ENAME: evalue") or ("timeout", "") (the kernel is then
        interrupted, as a run past its deadline is)."""
        async with self._lock(session_id):
            kernel = await self._own(session_id, workspace)
            found = await evaluate_silently(kernel, expression, timeout_s)
            if found[0] == "timeout":
                await interrupt(kernel)
            kernel.last_used = time.monotonic()
            return found

    async def restart(self, session_id: str) -> None:
        """Restart the session's own kernel: its variables and imports are lost, the workspace stays."""
        async with self._lock(session_id):
            kernel = self._kernels.get(session_id)
            if kernel is not None:
                await self._restart(session_id, kernel)

    async def shutdown_session(self, session_id: str, *, now: bool = False) -> None:
        """Stop the session's own kernel (if any); a later run starts a new one. ``now``: kill it at
        once instead of asking it to shut down (it may be busy writing, ``disk_watch``)."""
        async with self._lock(session_id):
            self.culler.forget(session_id)
            kernel = self._kernels.pop(session_id, None)
            if kernel is not None:
                await stop(kernel, now=now)

    def owned(self) -> dict[str, KernelHandle]:
        """The sessions' own live kernels (``culling.Cullable``): borrowed kernels are not the pool's to cull."""
        return self._kernels

    def session_lock(self, session_id: str) -> asyncio.Lock:
        """Held while a step of the session runs in its own kernel (``culling.Cullable``)."""
        return self._lock(session_id)

    async def discard(self, session_id: str) -> None:
        """Shut the session's kernel down (its lock held by the culler): its processes (bwrap, confine,
        ipykernel), sockets, runtime folder and cgroup go, its workspace stays."""
        await stop(self._kernels[session_id], now=True)  # its variables are lost either way: no need to ask
        del self._kernels[session_id]  # once all it held is free: a pool that lists none holds none

    async def aclose(self) -> None:
        """Shut down every kernel this pool started; borrowed server kernels are only disconnected."""
        await self.culler.aclose()
        owned, self._kernels = list(self._kernels.values()), {}
        borrowed, self._external = list(self._external.values()), {}
        for kernel in borrowed:
            kernel.client.stop_channels()
        await asyncio.gather(*(stop(k, now=False) for k in owned), return_exceptions=True)

    def kernel_info(self, session_id: str) -> dict[str, Any] | None:
        """``{pid, sandbox, started_at, restarts}`` of the session's own kernel, None if it has none;
        on a gateway ``sandbox`` is "gateway", ``pid`` None, with ``gateway`` (host:port) and
        ``kernel_id`` (the gateway's).

        In the sandbox ``pid`` is bwrap's; the kernel is its child in a separate pid namespace.
        """
        kernel = self._kernels.get(session_id)
        if kernel is None:
            return None
        provisioner = getattr(kernel.manager, "provisioner", None)
        info = {
            "pid": getattr(provisioner, "pid", None),
            "sandbox": kernel.sandbox,
            "started_at": kernel.started_at,
            "restarts": kernel.restarts,
        }
        if isinstance(kernel.manager, GatewayKernel):
            info.update(gateway=self.gateway_host, kernel_id=kernel.manager.kernel_id)
        return info

    def _lock(self, key: str) -> asyncio.Lock:
        return self._locks.setdefault(key, asyncio.Lock())

    async def _own(self, session_id: str, workspace: Workspace) -> KernelHandle:
        kernel = self._kernels.get(session_id)
        if kernel is None:
            await self.culler.make_room(session_id)
            where = self._where()
            culled = self.culler.culled(session_id)  # the sidebar can say why a kernel starts again
            await self._tell(
                session_id, {"state": "starting", "sandbox": where, **({"culled": culled} if culled else {})}
            )
            started, state = time.monotonic(), "failed"
            try:
                kernel = self._kernels[session_id] = await self._start(workspace)
                state = "ready"
            finally:
                duration_ms = round((time.monotonic() - started) * 1000)
                await asyncio.shield(
                    self._tell(session_id, {"state": state, "sandbox": where, "duration_ms": duration_ms})
                )
        return kernel

    def _where(self) -> str:  # "gateway", "bwrap" or "none"
        try:
            return "gateway" if self.backend == "gateway" else self.sandbox_mode
        except NiniError:  # a gateway or bwrap demanded and missing: _start says so
            return "none"

    async def _tell(self, session_id: str, data: dict[str, Any]) -> None:
        try:  # a failed announcement never stops a kernel from starting
            if self.on_start is not None:
                await self.on_start(session_id, data)
        except Exception:
            log.warning("the kernel start of session %s could not be announced", session_id, exc_info=True)

    async def _restart(self, session_id: str, kernel: KernelHandle) -> None:
        """A fresh kernel in place of ``kernel``: cheaper to reason about than restarting a dead one."""
        del self._kernels[session_id]
        await stop(kernel, now=True)
        assert kernel.workspace is not None
        fresh = await self._start(kernel.workspace)
        fresh.restarts = kernel.restarts + 1
        self._kernels[session_id] = fresh

    async def _start(self, workspace: Workspace) -> KernelHandle:
        if self.backend == "gateway":
            return await self._start_on_gateway(workspace)
        mode = self.sandbox_mode
        workspace.ensure()
        # The runtime folder is nini's (0700, never seen by the kernel): the kernel's log and the
        # sandbox's passwd. Its ipc/ subfolder, bound into the sandbox, holds the connection file
        # and the ipc sockets; it is short because a socket path must fit in 108 bytes.
        runtime_dir = make_runtime_dir(KERNEL_PREFIX, sandbox.runtime_base())
        ipc_dir = runtime_dir / "ipc"
        ipc_dir.mkdir()
        cmd = [
            sys.executable,
            "-m",
            "ipykernel_launcher",
            "-f",
            "{connection_file}",
            "--HistoryManager.hist_file=:memory:",
        ]  # parallel kernels must not share a history file
        limits = sandbox_limits(self.settings)
        group = await asyncio.to_thread(
            cgroups.agent_group,
            self.settings.cgroups,
            self.settings.cgroup_folders,
            workspace.root,
            runtime_dir.name,
            limits.memory_bytes,
            limits.max_processes,
        )
        uid = workspace.owner[0] if workspace.owner and sandbox.runs_as_session_uid(mode) else None
        cmd = sandbox.agent_command(
            cmd,
            mode,
            limits,
            workspace=workspace.root,
            runtime_dir=runtime_dir,
            shared_dir=ipc_dir,
            uid=uid,
            group=group,
        )
        spec = KernelSpec(
            argv=cmd,
            display_name="nini",
            language="python",
            # SIGINT sent to bwrap does not reach the kernel in its own pid namespace and session;
            # an interrupt_request on the control channel does (ipykernel raises KeyboardInterrupt).
            interrupt_mode="message" if mode == "bwrap" else "signal",
        )
        # ipc sockets are files in the runtime folder, bound into the sandbox; TCP on 127.0.0.1
        # would not cross the sandbox's network namespace. Used unsandboxed too: no port races.
        manager = _SpecKernelManager(spec, transport="ipc", connection_file=str(ipc_dir / "kernel.json"))
        manager.shutdown_wait_time = 2.0
        kernel = KernelHandle(manager, None, mode, workspace, runtime_dir, group=group)
        log_path = runtime_dir / "kernel.log"
        try:
            if mode == "bwrap":
                # the connection file is written now (jupyter_client keeps a written file), and the
                # log made, so that a root nini can hand them and the workspace to the session's uid
                manager.write_connection_file()
                log_path.touch()
                await asyncio.to_thread(sandbox.prepare, workspace.root, runtime_dir, uid)
            # The kernel's own stdout/stderr (banners, bwrap and crash messages) go to a log file
            # rather than nini's terminal; a failed start quotes it.
            with open(log_path, "wb") as log:
                await manager.start_kernel(
                    cwd=str(workspace.root), env=_kernel_env(runtime_dir, limits.max_processes), stdout=log, stderr=log
                )
            kernel.client = new_client(manager)
            # agent code owns this kernel: nini reads no message over the output cap from it
            # (channel_guard), and opens only the channels it reads, so none fills up unread
            frame_bytes = OutputLimits(max_bytes=self.settings.output_max_mb * MIB).frame_bytes
            for context in (manager.context, kernel.client.context):
                limit_context(context, frame_bytes)
            kernel.client.start_channels(stdin=False, hb=False, control=False)
            kernel.guard = ChannelGuard(kernel.client)
            await kernel.client.wait_for_ready(timeout=START_TIMEOUT_S)
        except Exception as exc:
            tail = _tail(log_path)
            if group is not None and group.oom_kills():  # a limit too small for the kernel itself
                tail = (
                    f"its memory limit ({self.settings.memory_limit_mb} MiB, "
                    f"execution.memory_limit_mb) was reached; {tail}"
                )
            await stop(kernel, now=True)
            message = f"the Python kernel did not start (sandbox: {mode}): {exc}" + (
                f"; kernel output: {tail}" if tail else ""
            )
            raise NiniError(ErrorCode.KERNEL_DIED, message) from exc
        return kernel

    async def _start_on_gateway(self, workspace: Workspace) -> KernelHandle:
        """A kernel of ``execution.gateway_kernel_name`` on the server's gateway, through the server's
        kernel manager; its workspace is a mirror. No sandbox of nini's: the gateway's applies."""
        workspace.ensure()
        spec = self.settings.gateway_kernel_name
        where = f"on the gateway at {self.gateway_host}"
        try:
            manager = await GatewayKernel.start(self.multi_kernel_manager, spec)
        except Exception as exc:
            raise NiniError(ErrorCode.KERNEL_DIED, f"the Python kernel did not start {where}: {exc}") from exc
        kernel = KernelHandle(
            manager,
            manager.client(),
            "gateway",
            workspace,
            mirror=Mirror(kernel_spec=f"kernel spec {spec!r}" if spec else "the gateway's default kernel spec"),
        )
        try:
            await kernel.client.start_channels()
            await kernel.client.wait_for_ready(timeout=START_TIMEOUT_S)
        except Exception as exc:
            await stop(kernel, now=True)
            reason = (
                exc.message
                if isinstance(exc, NiniError)
                else "it did not answer"
                if isinstance(exc, queue.Empty)
                else exc
            )
            raise NiniError(ErrorCode.KERNEL_DIED, f"the Python kernel {where} is not usable: {reason}") from exc
        return kernel

    async def _borrow(self, kernel_id: str) -> KernelHandle:
        kernel = self._external.get(kernel_id)
        if kernel is not None:
            return kernel
        if self.multi_kernel_manager is None:
            raise NiniError(
                ErrorCode.NOT_FOUND, f"no kernel {kernel_id!r}: nini is not running inside a Jupyter server"
            )
        try:
            manager = self.multi_kernel_manager.get_kernel(kernel_id)
        except Exception as exc:  # KeyError, or the server's HTTPError(404)
            raise NiniError(ErrorCode.NOT_FOUND, f"no kernel {kernel_id!r} on this Jupyter server") from exc
        mirror = None
        if self.gateway_url is not None:  # a notebook's kernel on the gateway: not on this disk either
            manager = GatewayKernel(self.multi_kernel_manager, kernel_id)
            mirror = Mirror(kernel_spec=f"kernel {kernel_id}", own=False)
        client = manager.client() if mirror is not None else new_client(manager)
        try:
            await ensure_async(client.start_channels())
            # also lets the iopub subscription settle, so the first run's output is not missed
            await ensure_async(client.wait_for_ready(timeout=START_TIMEOUT_S))
        except Exception as exc:
            client.stop_channels()
            raise NiniError(ErrorCode.KERNEL_DIED, f"kernel {kernel_id!r} does not answer: {exc}") from exc
        kernel = self._external[kernel_id] = KernelHandle(manager, client, None, mirror=mirror)
        return kernel

    async def _forget_external(self, kernel_id: str) -> None:
        kernel = self._external.pop(kernel_id, None)
        if kernel is not None:
            kernel.client.stop_channels()


def sandbox_limits(settings: ExecutionSettings) -> sandbox.Limits:
    """The sandbox limits of a Python kernel, from the execution settings."""
    return sandbox.Limits(
        memory_bytes=settings.memory_limit_mb * 1024 * 1024,
        max_processes=settings.max_processes,
        file_size_bytes=settings.workspace_quota_mb * 1024 * 1024,
        tmp_bytes=settings.tmp_size_mb * 1024 * 1024,
        read_only_paths=tuple(settings.sandbox_read_only_paths),
    )


def agent_env(runtime_dir: Path, max_processes: int) -> dict[str, str]:
    """The environment of a Python agent process (a kernel, a data reader): locale, PATH and
    PYTHONPATH, no secret of nini's; allocators that do not reserve address space (RLIMIT_AS must
    measure memory, ``confine.KERNEL_ENV``) and thread pools sized to the process limit."""
    env = {k: v for k, v in os.environ.items() if k in _PASSED_ENV or k.startswith("LC_")}
    # Unsandboxed, HOME is the runtime folder's; the sandbox sets its own (in its private /tmp).
    home = runtime_dir / "home"
    home.mkdir()
    env.update(HOME=str(home), PYTHONNOUSERSITE="1", **confine.KERNEL_ENV, **confine.thread_env(max_processes))
    return env


def _kernel_env(runtime_dir: Path, max_processes: int) -> dict[str, str]:
    # jupyter_client's launcher adds JPY_PARENT_PID (nini's pid), so that an unsandboxed kernel exits
    # when nini does; the sandbox unsets it and relies on --die-with-parent (see sandbox.py).
    env = agent_env(runtime_dir, max_processes)
    env.update(
        MPLBACKEND="Agg",  # figures are saved by nini after the run, not shown inline
        PYDEVD_DISABLE_FILE_VALIDATION="1",  # the debugger's frozen-modules warning on every start
    )
    return env


def _tail(path: Path, limit: int = 800) -> str:
    try:
        return path.read_text(errors="replace")[-limit:].strip()
    except OSError:
        return ""
