"""The ``run_r_code`` skill: agent R in the session's R worker, policy-checked, limited and recorded.

Same parameters, result contract, store rows and events as ``run_code``; the run is execution's
(``nini.execution.runs.run_r``, in the runtime's ``nini.execution.r_workers``), R itself is
``r_sandbox``'s (the policy check with R's own parser and the rpy2 worker process). The skill is
registered only where R can work (``r_status``), so a machine without R offers no R tool at all.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from nini.execution.runs import run_r
from nini.skills.builtin.run_code import build_request, finish_run, prepare_request
from nini.skills.function import skill
from nini.skills.output import ToolOutput

if TYPE_CHECKING:
    from nini.config import Settings
    from nini.session import Session


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
        session, code, dataset_name, save_as, purpose, label, timeout_s, session.settings.r.timeout_s
    )
    request = await prepare_request(session, request)
    outcome = await run_r(session, request)
    output = await finish_run(session, request, outcome, language="r", tool_name="run_r_code")
    output.isolation = session.code_isolation("run_r_code")
    return output


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
