"""The ``run_r_code`` skill: agent R in the session's R worker, policy-checked, limited and recorded.

Same parameters, result contract, store rows and events as ``run_code``; the work is done by
``r_sandbox`` (the policy check with R's own parser and the rpy2 worker process). The skill is
registered only where R can work (``r_status``), so a machine without R offers no R tool at all.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from nini.errors import ErrorCode, NiniError
from nini.execution.outcome import CONTRACT_KEYS, CodeOutcome, CodeRequest
from nini.execution.python_runner import checked_artifacts
from nini.skills.builtin.run_code import (
    build_request,
    check_quota,
    finish_run,
    output_limits,
    prepare_request,
    watch_run,
)
from nini.skills.function import skill
from nini.skills.output import ToolOutput

if TYPE_CHECKING:
    from nini.config import Settings
    from nini.session import Session


R_RUNTIME_BASE = Path("/tmp")  # R workers' runtime folders: short paths, mounted into the sandbox


@skill("run_r_code", category="statistics")
async def run_r_code(
    session: Session,
    code: str,
    dataset_name: str | None = None,
    save_as: str | None = None,
    purpose: Literal["exploration", "visualization", "export", "transformation"] = "exploration",
    label: str | None = None,
    timeout_s: float | None = None,
) -> ToolOutput:
    """Run R code in the session's R worker; variables persist between calls.

    Set `result` to a value (returned as JSON through jsonlite) and `output_df` to a data.frame to
    return it. Base graphics and ggplot plots become PNG and SVG artifacts (add PDF with
    `options(nini.plot_formats = c("png", "svg", "pdf"))`). The working directory
    is the session workspace; session datasets are `datasets$name` (shared with Python). Packages:
    base R, stats, jsonlite, ggplot2, dplyr, tidyr, readr, data.table and a few more. No shell,
    network, eval/parse or file deletion.

    Args:
        code: R source to run.
        dataset_name: A session dataset to load as `df` before the code runs.
        save_as: Store `output_df` as a session dataset under this name (usable from Python and R).
        purpose: Why this code runs: exploration, visualization, export or transformation.
        label: A short name for this step; charts are named after it and reports group by it.
        timeout_s: Stop the run after this many seconds (default from settings, 120).
    """
    request = build_request(
        code,
        dataset_name,
        save_as,
        purpose,
        label,
        timeout_s,
        session.settings.r.timeout_s,
        max_figures=session.settings.execution.max_artifacts_per_run,
        limits=output_limits(session.settings),
    )
    await check_quota(session)
    request = await prepare_request(session, request)
    reply = await _run_in_worker(session, request)
    outcome = CodeOutcome(**{key: reply[key] for key in CONTRACT_KEYS})
    outcome.artifacts = checked_artifacts(session.workspace, outcome.artifacts)
    output = await finish_run(session, request, outcome, language="r", tool_name="run_r_code")
    output.isolation = session.code_isolation("run_r_code")
    return output


async def _run_in_worker(session: Session, request: CodeRequest) -> dict[str, Any]:
    from r_sandbox.errors import RSandboxError

    if request.dataset_name:
        session.workspace.recorded_dataset(request.datasets or {}, request.dataset_name)
    try:
        async with watch_run(session) as watch:
            return await session.r_workers.run(
                session.id,
                session.workspace.root,
                {
                    "code": request.code,
                    "dataset_name": request.dataset_name,
                    "save_as": request.save_as,
                    "purpose": request.purpose,
                    "label": request.label,
                    "timeout_s": request.timeout_s,
                    "max_figures": request.max_figures,
                    "datasets": request.datasets,
                    "save_file": request.save_file,
                    "pending_file": request.pending_file,
                    "language": session.settings.ui.current_language,
                },
                stop=watch,
            )
    except RSandboxError as exc:
        raise NiniError(ErrorCode(exc.code), exc.message, exc.details) from None


def new_worker_pool(settings: Settings, uid_of: Callable[[Path], int | None] = lambda root: None) -> Any:
    """The session R workers of one Runtime, confined and sandboxed like its kernels; ``uid_of`` gives
    the sandbox uid of a session's workspace (a root nini's, see ``Runtime.workspace``)."""
    from nini.execution.culling import Culler
    from nini.execution.runtime_dirs import make_runtime_dir, sweep_runtime_dirs
    from r_sandbox.client import RWorkerPool

    sweep_runtime_dirs([R_RUNTIME_BASE])  # the folders of workers whose nini was killed
    pool = RWorkerPool(
        memory_limit_mb=settings.r.memory_limit_mb,
        timeout_s=settings.r.timeout_s,
        allowed_packages=settings.r.extra_packages,
        **worker_launch(settings, uid_of),
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


def worker_launch(settings: Settings, uid_of: Callable[[Path], int | None]) -> dict[str, Any]:
    """``RWorkerPool``'s ``wrap_command`` (see ``worker_wrap``) and ``on_exit``: a worker's cgroup is
    released when it ends, and a worker the memory cgroup killed fails with TOO_LARGE naming the limit."""
    from nini.execution.cgroups import oom_error

    groups: dict[Path, Any] = {}

    def on_exit(runtime_dir: Path) -> dict[str, Any] | None:
        group = groups.pop(runtime_dir, None)
        if group is None:
            return None
        killed = group.oom_kills()
        group.release()
        return oom_error("r", settings.r.memory_limit_mb, settings.ui.current_language) if killed else None

    return {"wrap_command": worker_wrap(settings, uid_of, groups), "on_exit": on_exit}


def worker_wrap(
    settings: Settings, uid_of: Callable[[Path], int | None] = lambda root: None, groups: dict[Path, Any] | None = None
) -> Callable[[list[str], Path, Path], list[str]]:
    """How an R worker command becomes the agent process of ``settings``: ``confine`` always (the
    memory limit), inside bubblewrap with the kernels' limits when the sandbox is on, in a cgroup of
    its own where one can be made, kept in ``groups`` by runtime folder for ``on_exit`` to release
    (without ``groups`` nothing would release it: no cgroup, the RLIMITs only)."""
    from nini.execution import cgroups, sandbox
    from nini.execution.kernels import sandbox_limits
    from r_sandbox.client import r_home

    mode = sandbox.resolve_mode(settings.execution.sandbox)
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


def r_status(settings: Settings) -> tuple[bool, str]:
    """Whether run_r_code can be offered here, and why not: settings, R on PATH or R_HOME, rpy2.

    Cheap on purpose (no R process, no import of rpy2): it runs each time a registry is built.
    Whether R then really starts is the worker's business; a failure there is R_UNAVAILABLE.
    """
    if not settings.r_enabled:
        return False, "turned off by settings (r_enabled = false)"
    binary = r_binary()
    if binary is None:
        return False, "R is not on PATH and R_HOME is not set: install r-base-core (make test does, with apt)"
    if importlib.util.find_spec("rpy2") is None:
        return False, "R is installed, but rpy2 is not: pip install 'nini[r]'"  # no host path: clients see it
    return True, f"R at {binary} with rpy2"


def r_binary() -> str | None:
    """The R executable nini would use: ``$R_HOME/bin/R`` if set, else ``R`` on PATH."""
    r_home = os.environ.get("R_HOME")
    if r_home and (Path(r_home) / "bin" / "R").is_file():
        return str(Path(r_home) / "bin" / "R")
    return shutil.which("R")
