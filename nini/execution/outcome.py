"""What one code run asks for and what it produced: the skill-result contract of DESIGN.md section 4.

``CodeRequest`` is the validated input of run_code (and, later, run_r_code); ``CodeOutcome`` holds
everything a run produced. ``contract()`` is exactly the shared result shape; the other fields
(``outputs``, the error's traceback) feed the store and the notebook export.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from nini.errors import ErrorCode, error_dict
from nini.execution.output_caps import OutputLimits
from nini.fsutil import NO_SPACE_ADVICE, no_space_text

Purpose = Literal["exploration", "visualization", "export", "transformation"]
PURPOSES: tuple[str, ...] = ("exploration", "visualization", "export", "transformation")

CONTRACT_KEYS = (
    "success",
    "stdout",
    "stderr",
    "result",
    "has_dataframe",
    "dataframe_preview",
    "artifacts",
    "datasets_saved",
    "error",
    "duration_ms",
)


@dataclass(frozen=True)
class CodeRequest:
    code: str
    dataset_name: str | None = None
    save_as: str | None = None
    purpose: str = "exploration"
    label: str | None = None
    timeout_s: float = 60.0
    max_figures: int = 200  # charts the run may save (execution.max_artifacts_per_run)
    # the record's datasets, name -> workspace-relative file (None: the files by name, as older nini)
    datasets: dict[str, str] | None = None
    save_file: str | None = None  # the new version ``save_as`` is written to (workspace.new_dataset_file)
    # where the run lists each chart file before putting it in place (``_kernel_side.announce``);
    # removed once the run is recorded, read by the sweep when it never was
    pending_file: str | None = None
    # how large one output may be and how much output the run keeps (execution.output_max_mb, ...)
    output_limits: OutputLimits = field(default_factory=OutputLimits)


# What became of a run's kernel or R worker when something other than its code ended the run.
Fate = Literal["kernel_interrupted", "kernel_restarted", "worker_restarted"]


class RunStop(Protocol):
    """Something that may end a run before its code does (``disk_watch.RunWatch``: the workspace went
    over its budget). The run's driver (``python_runner.execute``, ``RWorkerPool``) watches it while it
    waits, stops the code as it would at the deadline, and ends the run with ``error(fate)``."""

    def is_set(self) -> bool: ...

    async def wait(self) -> None: ...

    def error(self, fate: Fate) -> dict[str, Any]: ...


@dataclass(kw_only=True)
class CodeOutcome:
    """A finished run. ``error`` is ``{code, message, line?}`` plus optional ``ename``/``traceback``."""

    success: bool
    stdout: str = ""
    stderr: str = ""
    result: Any = None
    has_dataframe: bool = False
    dataframe_preview: dict[str, Any] | None = None
    artifacts: list[dict[str, Any]] = field(
        default_factory=list
    )  # {name, path, format, kind}; path relative to the workspace
    datasets_saved: list[str] = field(default_factory=list)
    error: dict[str, Any] | None = None
    duration_ms: int = 0
    outputs: list[dict[str, Any]] = field(default_factory=list)  # nbformat v4 outputs, ANSI stripped

    def contract(self) -> dict[str, Any]:
        """The result shape shared by run_code and run_r_code, and nothing else."""
        error = None
        if self.error is not None:
            # every violation of a policy refusal (R's), with its line and column, for clients to show
            error = {
                k: self.error[k] for k in ("code", "message", "line", "violations") if self.error.get(k) is not None
            }
        return {
            "success": self.success,
            "stdout": self.stdout,
            "stderr": self.stderr,
            "result": self.result,
            "has_dataframe": self.has_dataframe,
            "dataframe_preview": self.dataframe_preview,
            "artifacts": list(self.artifacts),
            "datasets_saved": list(self.datasets_saved),
            "error": error,
            "duration_ms": self.duration_ms,
        }

    @classmethod
    def failure(
        cls, code: ErrorCode, message: str, *, line: int | None = None, duration_ms: int = 0, **extra: Any
    ) -> CodeOutcome:
        located = {"line": line} if line is not None else {}
        return cls(success=False, error=error_dict(code, message, **located, **extra), duration_ms=duration_ms)


def full_disk(error: dict[str, Any] | None, sandbox_tmp_mb: int | None = None) -> dict[str, Any] | None:
    """A run's error as NO_SPACE when it says a disk was full, else ``error`` as it is.

    Code that writes to a full disk raises (``OSError: [Errno 28] No space left on device``, R's
    "Error writing to connection: No space left on device", sqlite3's "database or disk is full"):
    the code is not at fault, so the run's error is not CODE_ERROR blaming it (issue 36). The line,
    the exception's name and the traceback stay, for the person to see where it happened.

    ``sandbox_tmp_mb``: the run was in nini's sandbox and the workspace's disk has room, so what
    filled up is the sandbox's own /tmp or /dev/shm, a limit of nini's (``execution.tmp_size_mb``):
    TOO_LARGE saying so, not a full disk for an administrator to free.
    """
    if not error or error.get("code") != ErrorCode.CODE_ERROR or not no_space_text(str(error.get("message", ""))):
        return error
    message = str(error["message"])
    if sandbox_tmp_mb is not None:
        message = (
            f"the sandbox's /tmp or /dev/shm is full ({message}): each holds at most {sandbox_tmp_mb:,} MiB "
            "(execution.tmp_size_mb); write large files to the workspace, or raise the limit"
        )
        return {**error, **error_dict(ErrorCode.TOO_LARGE, message)}
    if not message.startswith("the disk is full"):
        message = (
            f"the disk is full, so the code could not write ({message}); the code is not at fault: {NO_SPACE_ADVICE}"
        )
    return {**error, **error_dict(ErrorCode.NO_SPACE, message)}
