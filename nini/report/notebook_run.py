"""Running a notebook for its report (``nini report NOTEBOOK --execute [--kernel NAME]``).

A run goes on past errors (unlike "Run all"), so one broken cell still leaves the later results in
the report; what failed is counted and named, never hidden. A notebook whose kernel is not
installed (``python2``, ``pymc_env``, ``ir`` on a machine without them) is not refused: the report
is made from its saved outputs and says why (``ExecutionSummary.missing_kernel``), or, with
``--kernel auto``, the notebook runs on the installed kernel of its language.
"""

from __future__ import annotations

import asyncio
import logging
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nini.errors import ErrorCode, NiniError
from nini.report.headings import cell_text
from nini.report.model import KERNEL_DIED, NOT_RUN, TIMED_OUT, ExecutionSummary

log = logging.getLogger("nini.report")
AUTO = "auto"
# The kernel --kernel auto runs a notebook of this language on when its own is not installed.
LANGUAGE_KERNELS = {"python": "python3", "r": "ir"}


@dataclass
class NotebookRun:
    """What a run did: the summary the report shows, and each failed cell's state by its index
    in ``notebook.cells`` (a ``Step.error`` code: TIMEOUT, KERNEL_DIED, CANCELED: never run) where the
    cell's own outputs do not say it (an exception's error output does)."""

    summary: ExecutionSummary
    states: dict[int, ErrorCode] = field(default_factory=dict)

    @property
    def ran(self) -> bool:
        return self.summary.kernel is not None


def choose_kernel(notebook: Any, requested: str | None, language: str) -> tuple[str | None, str | None]:
    """(the kernelspec to run, the kernel asked for that is missing). ``requested`` None is the
    notebook's own kernel; AUTO is that kernel when installed, else its language's; another name
    is that kernelspec, NOT_FOUND when it is not installed (a typo is said at once)."""
    installed = _installed_kernels()
    own = str((notebook.metadata.get("kernelspec") or {}).get("name") or LANGUAGE_KERNELS.get(language, "python3"))
    if requested and requested != AUTO:
        if requested not in installed:
            raise NiniError(
                ErrorCode.NOT_FOUND,
                f"no Jupyter kernel named {requested!r} is installed; installed: "
                f"{', '.join(sorted(installed)) or 'none'} (or --kernel auto)",
                {"kernel": requested, "installed": sorted(installed)},
            )
        return requested, None
    if own in installed:
        return own, None
    substitute = LANGUAGE_KERNELS.get(language) if requested == AUTO else None
    return (substitute, own) if substitute in installed else (None, own)


def _installed_kernels() -> set[str]:
    from jupyter_client.kernelspec import KernelSpecManager

    return set(KernelSpecManager().find_kernel_specs())


def runnable_cells(notebook: Any) -> list[int]:
    """The indexes of the cells a run executes: code cells with source (nbclient skips the rest)."""
    return [
        i for i, cell in enumerate(notebook.cells) if cell.cell_type == "code" and cell_text(cell.get("source")).strip()
    ]


def run_notebook(
    notebook: Any,
    folder: Path,
    timeout_s: float,
    kernel: str,
    progress: Callable[[str], None] | None = None,
) -> NotebookRun:
    """Run every code cell of ``notebook`` in place on kernelspec ``kernel``, in ``folder``.

    A cell past ``timeout_s`` is interrupted and failed (TIMEOUT); the rest still run. A kernel
    that dies fails the cell it ran (KERNEL_DIED) and leaves the later cells not run: their saved
    outputs are cleared, so the report never passes them off as this run's. ``progress`` gets
    ``cell N/M first line`` per code cell, N its position among all M cells (the report's cell
    numbers). The kernel's stderr (its "running over TCP without encryption" warning, ...) is not
    the user's business.
    """
    from nbclient import NotebookClient
    from nbclient.exceptions import DeadKernelError

    cells = notebook.cells
    runnable = runnable_cells(notebook)
    run = NotebookRun(ExecutionSummary(cells=len(runnable), kernel=kernel))
    current: list[int] = []  # the index of the cell running now
    started: dict[int, float] = {}

    def on_start(cell: Any, cell_index: int) -> None:
        current[:] = [cell_index]
        started[cell_index] = time.monotonic()
        if progress is not None and cell_index in runnable:
            first = next((line.strip() for line in cell_text(cell.get("source")).splitlines() if line.strip()), "")
            progress(f"cell {cell_index + 1}/{len(cells)} {first[:60]}")

    def on_executed(cell: Any, cell_index: int, execute_reply: Any) -> None:
        errors = [o for o in cell.get("outputs") or [] if o.get("output_type") == "error"]
        failed = errors or ((execute_reply or {}).get("content") or {}).get("status") == "error"
        # nbclient interrupts a cell past its time and waits for the kernel's reply to that: the
        # cell failed after its whole time (a failure before it is the cell's own)
        if failed and time.monotonic() - started.get(cell_index, time.monotonic()) >= timeout_s:
            run.states[cell_index] = ErrorCode.TIMEOUT
            run.summary.failed.append((cell_index + 1, TIMED_OUT))
        elif errors:
            run.summary.failed.append((cell_index + 1, str(errors[-1].get("ename") or "Error")))

    client = NotebookClient(
        notebook,
        timeout=timeout_s,
        allow_errors=True,
        resources={"metadata": {"path": str(folder)}},
        kernel_name=kernel,
        record_timing=False,
        on_cell_start=on_start,
        on_cell_executed=on_executed,
        interrupt_on_timeout=True,  # a cell past its time limit is interrupted and fails; the rest still run
    )
    try:
        # on an event loop of its own: nbclient's sync `execute` takes jupyter_core's loop from a
        # context variable, which asyncio.to_thread copies, so a worker thread could run the loop
        # a main-thread run left behind (SIGINT handler included) and fail removing that handler
        asyncio.run(client.async_execute(stderr=subprocess.DEVNULL))
    except DeadKernelError:
        died = current[0] if current else -1
        if died in runnable:
            run.states[died] = ErrorCode.KERNEL_DIED
            run.summary.failed.append((died + 1, KERNEL_DIED))
        for index in (i for i in runnable if i > died):
            cells[index].outputs, cells[index].execution_count = [], None
            run.states[index] = ErrorCode.CANCELED  # never run: the kernel died before it
            run.summary.failed.append((index + 1, NOT_RUN))
    except (OSError, RuntimeError) as exc:
        if current:
            raise  # a cell was running: not a kernel that never started
        # the kernelspec is there but its kernel never came up (its program is gone, it died
        # starting): nothing ran, so the saved outputs are still the notebook's to report
        log.warning("kernel %s could not start: %s", kernel, exc)
        return NotebookRun(
            ExecutionSummary(cells=len(runnable), missing_kernel=kernel, kernel_problem="could not start")
        )
    return run
