"""The settings sections of running agent code: ``execution`` (sandbox, limits, culling), ``r``, ``limits``.

Only the models: ``nini.config`` holds ``Settings`` and its loading (precedence, the fallback of bad
values) and re-exports these, so callers keep naming ``nini.config``. The other sections are in
``nini.settings_sections``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class ExecutionSettings(BaseModel):
    """How agent code runs: sandbox, static policy, limits and what goes back to the model."""

    model_config = ConfigDict(extra="ignore")

    sandbox: Literal["auto", "bwrap", "none"] = Field(
        "auto",
        description="auto: bubblewrap when it works here, else unsandboxed (nini doctor says which); "
        "bwrap: refuse to start a kernel without it; none: never sandbox (trusted use only).",
    )
    warn_unsandboxed: bool = Field(
        True,
        description="Whether the CLI's commands that run code (run-code, run-r, ask, mcp) print one warning "
        "line on stderr when that code runs without the sandbox (execution.sandbox none, or auto where bubblewrap "
        "is missing or cannot run); false silences it, for a trusted machine where that is known and wanted.",
    )
    kernels: Literal["auto", "local", "gateway"] = Field(
        "auto",
        description="Where the sessions' Python kernels run. local: on this machine, in nini's sandbox "
        "(execution.sandbox); gateway: on the Kernel/Enterprise Gateway the Jupyter server was started with "
        "(--gateway-url), in the gateway's sandbox (its containers or pods), the workspace's files carried over "
        "the kernel protocol; auto: the gateway when the server has one, else local. R always runs locally.",
    )
    gateway_kernel_name: str | None = Field(
        None,
        description="The gateway's kernel spec for agent kernels (its environment must have nini "
        "installed); unset: the gateway's default spec.",
    )
    python_policy: Literal["strict", "off"] = Field(
        "strict",
        description="strict: refuse agent Python that imports os/subprocess/socket/... "
        "or calls eval/exec/open outside the workspace, before it runs; off: no static check.",
    )
    memory_limit_mb: int = Field(
        2048,
        ge=256,
        description="Memory of each agent kernel in MiB: its cgroup's limit (all its processes, with "
        "what they hold in memfds, shared memory and files in its /tmp and /dev/shm; past it the kernel is stopped, "
        "TOO_LARGE) and each process's address space (RLIMIT_AS: an allocation past it is a MemoryError). Without "
        "cgroups (nini doctor says) only the address space is limited.",
    )
    timeout_s: float = Field(
        60, gt=0, le=86400, description="Default run_code timeout in seconds; a call may set its own."
    )
    output_cap_chars: int = Field(
        8000,
        ge=200,
        description="Longest tool output sent back to the model; a longer one is written whole to the workspace "
        "(executions/ID/stdout.txt) and the record keeps its head and tail.",
    )
    output_max_mb: int = Field(
        4,
        ge=1,
        le=1024,
        description="Largest single output of a run in MiB (a display, a result's value, an error, each "
        "of stdout and stderr), capped as it arrives: a larger one is kept as its size and a preview (a text's head; "
        "for images and HTML a note with the size and mime type) with a marker, and nini's process refuses any "
        "message from a sandboxed kernel larger than this plus 1 MiB (TOO_LARGE; the kernel is restarted).",
    )
    run_outputs_max_mb: int = Field(
        16,
        ge=1,
        le=65536,
        description="Most output one run keeps, in MiB, all outputs together; past it later "
        "outputs are counted, not kept, and the run says how much it left out.",
    )
    run_outputs_max_count: int = Field(
        1000,
        ge=1,
        le=1_000_000,
        description="Most outputs one run keeps (displays, results, errors, stream parts); "
        "past it later outputs are counted, not kept.",
    )
    max_processes: int = Field(
        64,
        ge=8,
        le=4096,
        description="Processes and threads each agent kernel or R worker may have at once "
        "(its cgroup's pids limit, counted for it alone); a fork bomb stops there, the kernel stays usable. Without "
        "cgroups it is RLIMIT_NPROC, which counts every task of the session's sandbox user, all its kernels.",
    )
    cgroups: Literal["auto", "off"] = Field(
        "auto",
        description="auto: memory and processes of each agent kernel and R worker limited by a control group "
        "of its own where this machine offers one (execution.cgroup_folders, else nini's own cgroup when nini may "
        "write there, as root; else systemd-run --scope); off: RLIMITs only (they miss memfds, tmpfs and shared "
        "memory, and count a uid's threads). nini doctor says which holds.",
    )
    cgroup_folders: list[Path] = Field(
        default_factory=list,
        description="Control-group folders delegated to nini's user, where it makes its groups: "
        "one per controller on cgroup v1 (e.g. /sys/fs/cgroup/memory/nini and /sys/fs/cgroup/pids/nini), one on v2 "
        "(holding nini's own cgroup, as delegation requires). Empty: nini's own cgroup, else systemd-run --scope.",
    )
    max_artifacts_per_run: int = Field(
        200,
        ge=1,
        le=100_000,
        description="Charts one run may save (matplotlib figures, R plot pages, rich "
        "outputs); past it the rest are closed unsaved, with a warning, so a plot flood cannot fill the workspace.",
    )
    tmp_size_mb: int = Field(
        512, ge=16, description="Size of the sandbox's private /tmp and of its /dev/shm in MiB (each is host RAM)."
    )
    workspace_quota_mb: int = Field(
        10240,
        ge=16,
        description="Most a session workspace may hold, in MiB (a file counts the larger of its size "
        "and its blocks): no file the agent writes can be larger (RLIMIT_FSIZE), a run that goes over it is stopped "
        "(TOO_LARGE), and no run starts while the workspace holds that much.",
    )
    workspace_max_files: int = Field(
        20_000,
        ge=100,
        le=10_000_000,
        description="Most files (and folders and links) a session workspace may hold: "
        "a run that makes more is stopped (TOO_LARGE), and no run starts while it holds that many. Also bounds what "
        "a count of the workspace costs (it stops there).",
    )
    sandbox_read_only_paths: list[Path] = Field(
        default_factory=list,
        description="Host folders the sandbox shows read-only besides what analysis needs "
        "(interpreter, R, system libraries), e.g. a shared data folder or an editable library.",
    )
    approve_in_user_kernel: bool = Field(
        True,
        description="Each step nini runs in your own notebook kernel (%%nini, the sidebar's notebook kernel, "
        "run-code with kernel_id), which is not sandboxed, waits until you see its code and allow it (once, or for "
        "the session); off: such steps run without asking, and nini doctor and the sidebar say so.",
    )
    variable_copy_max_mb: int = Field(
        512,
        ge=0,
        le=1_048_576,
        description="Largest notebook variable (pickled, in MiB) copied into the "
        "sandboxed kernel when the agent asks for it; a bigger one is only described, and the agent proposes "
        "a notebook cell instead. 0 copies none.",
    )
    variable_prefetch_mb: int = Field(
        64,
        ge=0,
        le=1_048_576,
        description="When a turn asked from a notebook starts (sandbox first), the "
        "notebook's data variables are copied into the sandboxed kernel, smallest first, up to this many MiB in all, "
        "while the model thinks; the step that uses them runs at once. 0: only what the agent names is copied.",
    )
    approval_timeout_s: float = Field(
        600, gt=0, le=86400, description="How long a step waits for your approval before it is refused."
    )
    cull_idle_seconds: float = Field(
        3600,
        ge=0,
        le=30 * 86400,
        description="Seconds a session's own Python kernel or R worker may sit idle (no "
        "run in progress, none started for that long) before nini shuts it down to free its memory, as Jupyter's "
        "cull_idle_timeout does; the session's next step starts a new one and says its variables are gone (the "
        "workspace's files and datasets stay). A busy one is never culled, nor a notebook kernel nini only borrows. "
        "0: never.",
    )
    cull_interval_seconds: float = Field(
        60,
        gt=0,
        le=86400,
        description="How often nini looks for idle kernels and R workers, in seconds (at least "
        "every execution.cull_idle_seconds).",
    )
    max_live_kernels: int = Field(
        16,
        ge=0,
        le=10_000,
        description="Most sessions' own Python kernels live at once in one nini process (a "
        "Jupyter server): starting one more first shuts down the least recently used idle one. When all are busy "
        "the new one starts anyway (a step never waits for another session's long run) and the cap is restored as "
        "they go idle. 0: no cap. R workers have their own cap, r.max_live_workers.",
    )


class RSettings(BaseModel):
    """Limits and allowances of the R worker behind run_r_code (on/off is ``r_enabled``)."""

    model_config = ConfigDict(extra="ignore")

    memory_limit_mb: int = Field(
        1024,
        ge=256,
        description="Memory of each session's R worker in MiB: its cgroup's limit (with what it holds "
        "in memfds, shared memory and its /tmp and /dev/shm; past it the worker is stopped, TOO_LARGE) and its address "
        "space (RLIMIT_AS). Without cgroups only the address space is limited.",
    )
    timeout_s: float = Field(
        120, gt=0, le=86400, description="Default run_r_code timeout in seconds; past it the worker is restarted."
    )
    extra_packages: list[str] = Field(
        default_factory=list,
        description="R packages agent code may load (library, require, pkg::) beyond nini's default list.",
    )
    max_live_workers: int = Field(
        8,
        ge=0,
        le=10_000,
        description="Most sessions' R workers live at once in one nini process, counted apart "
        "from the Python kernels (execution.max_live_kernels): starting one more first shuts down the least "
        "recently used idle one; when all are busy it starts anyway. Idle workers are shut down after "
        "execution.cull_idle_seconds, as kernels are. 0: no cap.",
    )


class LimitsSettings(BaseModel):
    """Caps on the text handed to nini, on every path (CLI, MCP, REST, the agent's tool calls): one place."""

    model_config = ConfigDict(extra="ignore")

    max_code_chars: int = Field(
        1_000_000,
        ge=1000,
        le=50_000_000,
        description="Most characters of the code one step runs (run-code, run-r, "
        "a model's or an MCP client's code, REST's run-code); longer code is refused with TOO_LARGE before anything "
        "is stored or run. Real analysis code is a few thousand characters; the default leaves room "
        "for generated code.",
    )
    max_label_chars: int = Field(
        200,
        ge=10,
        le=10_000,
        description="Most characters of a step's label (--label, a tool call's label); longer is TOO_LARGE.",
    )
    max_title_chars: int = Field(
        200,
        ge=80,
        le=10_000,
        description="Most characters of a session's title (a new session's, a rename in the "
        "sidebar or PATCH /nini/api/sessions/ID); longer is TOO_LARGE. At least 80: titles nini "
        "makes (a question's start, a "
        "notebook's name) are cut to 80.",
    )
