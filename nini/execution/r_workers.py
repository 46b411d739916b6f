"""The sessions' R workers of one runtime: ``r_sandbox``'s ``RWorkerPool``, confined, sandboxed and culled as
the kernels are.

``r_sandbox`` runs R (the policy check, the rpy2 worker process, the pool of them) and knows nothing of
nini; what makes a worker nini's is decided here, as ``kernels`` does for Python: the sandbox mode the
runtime resolved (``isolation.Sandboxing``), the kernels' limits with R's memory limit, a cgroup per
worker released when it ends (its memory kills told as TOO_LARGE), runtime folders nini can sweep after
a crash (``R_RUNTIME_BASE``), and the ``Culler`` that shuts idle workers down under ``r.max_live_workers``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nini.config import Settings
from nini.execution import cgroups, sandbox
from nini.execution.culling import Culler
from nini.execution.isolation import Sandboxing
from nini.execution.kernels import sandbox_limits
from nini.execution.runtime_dirs import make_runtime_dir, sweep_runtime_dirs

if TYPE_CHECKING:
    from r_sandbox.client import RWorkerPool

__all__ = ["R_RUNTIME_BASE", "new_worker_pool", "worker_wrap"]

R_RUNTIME_BASE = Path("/tmp")  # R workers' runtime folders: short paths, mounted into the sandbox
UidOf = Callable[[Path], int | None]  # the sandbox uid of a session's workspace (a root nini's)


def new_worker_pool(
    settings: Settings, uid_of: UidOf = lambda root: None, sandboxing: Sandboxing | None = None
) -> RWorkerPool:
    """The session R workers of one Runtime, confined and sandboxed like its kernels (``sandboxing``:
    the runtime's decision, else one of ``settings``); ``uid_of`` gives the sandbox uid of a session's
    workspace (a root nini's, see ``Runtime.workspace``)."""
    from r_sandbox.client import RWorkerPool

    sweep_runtime_dirs([R_RUNTIME_BASE])  # the folders of workers whose nini was killed
    pool = RWorkerPool(
        memory_limit_mb=settings.r.memory_limit_mb,
        timeout_s=settings.r.timeout_s,
        allowed_packages=settings.r.extra_packages,
        **worker_launch(settings, uid_of, sandboxing),
        language=settings.ui.current_language,
        make_runtime_dir=lambda: make_runtime_dir("nini-r-", R_RUNTIME_BASE),
        output_max_bytes=settings.execution.output_max_mb * 1024 * 1024,
    )
    # idle workers shut down as kernels are (execution.cull_idle_seconds), under a cap of their own
    pool.keeper = Culler(
        pool,
        idle_s=settings.execution.cull_idle_seconds,
        interval_s=settings.execution.cull_interval_seconds,
        cap=settings.r.max_live_workers,
        kind="r",
    )
    return pool


def worker_launch(settings: Settings, uid_of: UidOf, sandboxing: Sandboxing | None = None) -> dict[str, Any]:
    """``RWorkerPool``'s ``wrap_command`` (see ``worker_wrap``) and ``on_exit``: a worker's cgroup is
    released when it ends, and a worker the memory cgroup killed fails with TOO_LARGE naming the limit."""
    groups: dict[Path, Any] = {}

    def on_exit(runtime_dir: Path) -> dict[str, Any] | None:
        group = groups.pop(runtime_dir, None)
        if group is None:
            return None
        killed = group.oom_kills()
        group.release()
        return cgroups.oom_error("r", settings.r.memory_limit_mb, settings.ui.current_language) if killed else None

    return {"wrap_command": worker_wrap(settings, uid_of, groups, sandboxing), "on_exit": on_exit}


def worker_wrap(
    settings: Settings,
    uid_of: UidOf = lambda root: None,
    groups: dict[Path, Any] | None = None,
    sandboxing: Sandboxing | None = None,
) -> Callable[[list[str], Path, Path], list[str]]:
    """How an R worker command becomes the agent process of ``settings``: ``confine`` always (the
    memory limit), inside bubblewrap with the kernels' limits when the sandbox is on, in a cgroup of
    its own where one can be made, kept in ``groups`` by runtime folder for ``on_exit`` to release
    (without ``groups`` nothing would release it: no cgroup, the RLIMITs only). The sandbox mode is
    decided now, once (a bwrap demanded and missing fails here, as the pool is built)."""
    from r_sandbox.client import r_home

    mode = (sandboxing or Sandboxing(settings.execution)).mode
    home = r_home()
    limits = dataclasses.replace(
        sandbox_limits(settings.execution),
        memory_bytes=settings.r.memory_limit_mb * 1024 * 1024,
        read_only_paths=(*settings.execution.sandbox_read_only_paths, *([Path(home)] if home else [])),
    )

    def wrap(cmd: list[str], workspace: Path, runtime_dir: Path) -> list[str]:
        uid = uid_of(workspace) if sandbox.runs_as_session_uid(mode) else None
        if mode == "bwrap":
            sandbox.prepare(workspace, runtime_dir, uid)
        group = None
        if groups is not None:
            group = groups[runtime_dir] = cgroups.agent_group(
                settings.execution.cgroups,
                settings.execution.cgroup_folders,
                workspace,
                runtime_dir.name,
                limits.memory_bytes,
                limits.max_processes,
            )
        return sandbox.agent_command(
            cmd, mode, limits, workspace=workspace, runtime_dir=runtime_dir, uid=uid, group=group
        )

    return wrap
