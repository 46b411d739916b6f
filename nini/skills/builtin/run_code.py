"""The ``run_code`` skill: agent Python in the session's kernel, checked, limited and recorded.

The skill checks its arguments, builds the request and records the result (shared with
``run_r_code``); running it is execution's (``nini.execution.runs``).
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

from nini.errors import ErrorCode, NiniError
from nini.execution.leftovers import discard_run
from nini.execution.outcome import CodeOutcome, CodeRequest, full_disk
from nini.execution.output_caps import MIB, OutputLimits
from nini.execution.runs import check_quota, run_python
from nini.execution.runtime_dirs import owner_token
from nini.execution.variables import check_names
from nini.execution.workspace import check_dataset_name
from nini.fsutil import disk_full
from nini.redact import redact_paths
from nini.skills.function import skill
from nini.skills.output import ToolOutput

if TYPE_CHECKING:
    from nini.config import Settings
    from nini.session import Session

# Characters of one stream the record keeps (its head and tail) once the whole text is in the
# workspace: more than a report scans (report.findings.SCAN_CHARS), far less than a log can be.
RECORDED_TEXT_CHARS = 100_000


@skill("run_code", category="data")
async def run_code(
    session: Session,
    code: str,
    dataset_name: str | None = None,
    save_as: str | None = None,
    purpose: Literal["exploration", "visualization", "export", "transformation"] = "exploration",
    label: str | None = None,
    timeout_s: float | None = None,
    variables: list[str] | None = None,
) -> ToolOutput:
    """Run Python code in the session's Jupyter kernel; variables persist between calls.

    Set `result` to a JSON value and `output_df` to a pandas DataFrame to return them. Every
    matplotlib figure becomes a PNG and SVG artifact. All session datasets are available as
    `datasets[name]`. In nini's sandboxed kernel the working directory is the session workspace;
    in the user's notebook kernel it stays the notebook's.

    Args:
        code: Python source to run (pandas, numpy, scipy, statsmodels, sklearn, matplotlib, seaborn).
        dataset_name: A session dataset to load as `df` before the code runs.
        save_as: Store `output_df` as a session dataset under this name (usable from Python and R).
        purpose: Why this code runs: exploration, visualization, export or transformation.
        label: A short name for this step; charts are named after it and reports group by it.
        timeout_s: Stop the run after this many seconds (default from settings, 60).
        variables: Names of the user's notebook variables to copy into this kernel before the code runs
            (when the user asked from a notebook and your code runs in the sandbox); copies stay until replaced.
    """
    request = build_request(
        session, code, dataset_name, save_as, purpose, label, timeout_s, session.settings.execution.timeout_s
    )
    names = check_names(variables) if variables else []
    request = await prepare_request(session, request)
    outcome = await run_python(session, request, names)
    output = await finish_run(session, request, outcome, language="python", tool_name="run_code")
    output.isolation = session.isolation
    if output.isolation == "gateway":
        output.gateway = session.kernels.gateway_host
    return output


async def prepare_request(session: Session, request: CodeRequest) -> CodeRequest:
    """``request`` with the datasets the record names (the files the run reads), for ``save_as``
    the new version file it writes (a save never changes a file a record names; only the commit
    of this call's record makes the new version current), and the file listing its charts until
    they are recorded (``CodeRequest.pending_file``); refused first when the workspace is over
    its quota (``check_quota``)."""
    await check_quota(session)
    files = await session.store.call(session.dataset_files)
    save_file = session.workspace.new_dataset_file(request.save_as, owner_token()) if request.save_as else None
    return dataclasses.replace(
        request,
        datasets=files,
        save_file=save_file,
        pending_file=f"artifacts/.pending-{owner_token()}-{uuid.uuid4().hex[:8]}.txt",
    )


def build_request(
    session: Session,
    code: str,
    dataset_name: str | None,
    save_as: str | None,
    purpose: str,
    label: str | None,
    timeout_s: float | None,
    default_timeout_s: float,
) -> CodeRequest:
    """The checked request of run_code and run_r_code (same parameters, same rules), with the
    session's figure and output caps."""
    for name in (dataset_name, save_as):
        if name is not None:
            check_dataset_name(name)
    limit = timeout_s if timeout_s is not None else default_timeout_s
    if not 0 < limit <= 86400:
        raise NiniError(ErrorCode.INVALID_ARGUMENT, "timeout_s must be between 0 and 86400 seconds")
    max_figures = session.settings.execution.max_artifacts_per_run
    limits = output_limits(session.settings)
    return CodeRequest(code, dataset_name, save_as, purpose, label, float(limit), max_figures, output_limits=limits)


def output_limits(settings: Settings) -> OutputLimits:
    """The caps of one run's outputs (``execution.output_max_mb`` and the run's budget), with the
    markers in ``ui.language``."""
    execution = settings.execution
    return OutputLimits(
        max_bytes=execution.output_max_mb * MIB,
        run_bytes=execution.run_outputs_max_mb * MIB,
        run_count=execution.run_outputs_max_count,
        language=settings.ui.current_language,
    )


async def finish_run(
    session: Session, request: CodeRequest, outcome: CodeOutcome, *, language: str, tool_name: str
) -> ToolOutput:
    """``record_outcome`` of a finished run (Python's or R's), with the step it corrects. Should this
    fail (the database cannot be read, the call is cancelled), no record will ever name what the
    run wrote: its new dataset version and its charts are removed now (``leftovers.discard_run``),
    not left in the workspace for the life of this process (their names say it is alive)."""
    try:
        retry_of = await step_corrected(session, request)
        return record_outcome(session, request, outcome, language=language, tool_name=tool_name, retry_of=retry_of)
    except BaseException:
        discard_run(session.workspace, request.save_file, request.pending_file)
        raise


def record_outcome(
    session: Session, request: CodeRequest, outcome: CodeOutcome, *, language: str, tool_name: str, retry_of: str | None
) -> ToolOutput:
    """Turn a finished run into the ToolOutput ``invoke`` records (shared with run_r_code)."""
    execution_id = "x" + uuid.uuid4().hex[:12]
    outcome = _without_host_paths(session, outcome)
    if (error := full_disk(outcome.error, _sandbox_tmp_mb(session, tool_name))) is not outcome.error:
        outcome = dataclasses.replace(outcome, error=error)  # a full disk (or sandbox /tmp), not the code's fault
    full_text_at = _keep_long_output(session, execution_id, outcome)
    # A long text is kept whole once: in the workspace, or (refused there) as the execution's
    # stdout/stderr; every other copy keeps its ends.
    whole = outcome if full_text_at is None else None
    outcome = _bounded(outcome, execution_id, in_workspace=whole is None)
    contract = outcome.contract()
    execution = {
        "id": execution_id,
        "language": language,
        "tool_name": tool_name,
        "code": request.code,
        "stdout": (whole or outcome).stdout,
        "stderr": (whole or outcome).stderr,
        "status": "succeeded" if outcome.success else "failed",
        "purpose": request.purpose,
        "label": request.label,
        "dataset_name": request.dataset_name,
        "save_as": request.save_as,
        "result": outcome.result,
        "error": outcome.error,
        "outputs": outcome.outputs,
        "artifacts": contract["artifacts"],
        "datasets_saved": contract["datasets_saved"],
        "retry_of": retry_of,
        "duration_ms": outcome.duration_ms,
    }
    artifacts = [_artifact_row(session, execution_id, a) for a in outcome.artifacts]
    datasets = [_dataset_row(session, execution_id, name, request, outcome) for name in outcome.datasets_saved]
    return ToolOutput(
        result=contract,
        success=outcome.success,
        error=contract["error"],
        execution=execution,
        artifacts=artifacts,
        datasets=datasets,
        summary=_summary(contract, request),
        full_text_at=full_text_at,
        pending_file=request.pending_file,
    )


def _sandbox_tmp_mb(session: Session, tool_name: str) -> int | None:
    """``execution.tmp_size_mb`` when a full disk a run met can only be its sandbox's /tmp or
    /dev/shm: the run was in nini's sandbox, whose other writable place, the workspace, has room."""
    try:
        sandboxed = session.code_isolation(tool_name) == "sandbox"
    except NiniError:
        return None
    return session.settings.execution.tmp_size_mb if sandboxed and not disk_full(session.workspace.root) else None


def _without_host_paths(session: Session, outcome: CodeOutcome) -> CodeOutcome:
    """The outcome as clients see and the record keeps it: workspace paths relative, NINI_HOME,
    the Python installation and the home folder by name (tracebacks and errors name them)."""

    def redact(text: str) -> str:
        return redact_paths(text, nini_home=session.settings.home, workspace=session.workspace.root)

    error = outcome.error
    if error is not None:
        error = {**error, **{k: redact(error[k]) for k in ("message", "evalue") if isinstance(error.get(k), str)}}
        if isinstance(error.get("traceback"), list):
            error["traceback"] = [redact(line) if isinstance(line, str) else line for line in error["traceback"]]
    outputs = [_redact_output(output, redact) for output in outcome.outputs]
    return dataclasses.replace(
        outcome, stdout=redact(outcome.stdout), stderr=redact(outcome.stderr), error=error, outputs=outputs
    )


def _redact_output(output: dict[str, Any], redact: Callable[[str], str]) -> dict[str, Any]:
    if output.get("output_type") == "stream" and isinstance(output.get("text"), str):
        return {**output, "text": redact(output["text"])}
    if output.get("output_type") == "error":
        return {
            **output,
            "evalue": redact(str(output.get("evalue", ""))),
            "traceback": [redact(line) for line in output.get("traceback") or [] if isinstance(line, str)],
        }
    return output


async def step_corrected(session: Session, request: CodeRequest) -> str | None:
    """``find_retry_of`` on a store thread; a step that names no label and no dataset corrects none,
    and is told so without the trip."""
    if not request.label and not request.save_as:
        return None
    return await session.store.call(find_retry_of, session, request)


def find_retry_of(session: Session, request: CodeRequest) -> str | None:
    """A re-run of a failed step (same label, or same output dataset) corrects that step: the newest
    step of either, found by an indexed read (a long session's steps are not all read)."""
    if not request.label and not request.save_as:
        return None
    last = session.store.last_step(session.id, request.label, request.save_as)
    return last["id"] if last is not None and last["status"] == "failed" else None


def _keep_long_output(session: Session, execution_id: str, outcome: CodeOutcome) -> str | None:
    """Write outputs longer than the model's cap to the workspace, so the model can read them.

    The record then keeps the head and tail (``_bounded``). When the workspace refuses the file
    (agent code put a link where ``executions`` was, or the disk is full) nothing is written through
    the link, None says so, and the whole text (at most ``execution.output_max_mb``) is kept once,
    in the execution's record, never three times.
    """
    cap = session.settings.execution.output_cap_chars
    long_streams = {n: t for n, t in (("stdout", outcome.stdout), ("stderr", outcome.stderr)) if len(t) > cap}
    if not long_streams:
        return None
    try:
        for stream, text in long_streams.items():
            session.workspace.fs.write_bytes(f"executions/{execution_id}/{stream}.txt", text.encode("utf-8"))
    except NiniError:
        return None
    paths = ", ".join(f"executions/{execution_id}/{s}.txt" for s in long_streams)
    return f"{paths} in the session workspace (execution {execution_id})"


def _bounded(outcome: CodeOutcome, execution_id: str, *, in_workspace: bool) -> CodeOutcome:
    """The outcome with each stream cut to its first and last ``RECORDED_TEXT_CHARS / 2``
    characters, saying where the whole text is: stored once (in the workspace file), never three
    times (stdout, the stream outputs, the call's result), and a long output costs later reads
    of the record nothing. ``in_workspace`` False: the workspace refused the file, and the
    marker names the execution's record instead."""

    def cut(text: str, stream: str) -> str:
        if len(text) <= RECORDED_TEXT_CHARS:
            return text
        half = RECORDED_TEXT_CHARS // 2
        where = (
            f"executions/{execution_id}/{stream}.txt in the session workspace"
            if in_workspace
            else f"the {stream} of execution {execution_id} in the session history"
        )
        gap = "of the record" if in_workspace else "here"
        return (
            f"{text[:half]}\n… [{len(text) - 2 * half:,} characters left out {gap}; the whole output "
            f"is {where}] …\n{text[-half:]}"
        )

    outputs = [
        {**output, "text": cut(output["text"], output.get("name", "stdout"))}
        if output.get("output_type") == "stream" and isinstance(output.get("text"), str)
        else output
        for output in outcome.outputs
    ]
    return dataclasses.replace(
        outcome, stdout=cut(outcome.stdout, "stdout"), stderr=cut(outcome.stderr, "stderr"), outputs=outputs
    )


def _artifact_row(session: Session, execution_id: str, artifact: dict[str, Any]) -> dict[str, Any]:
    try:
        size = session.workspace.fs.file_size(artifact["path"])
    except NiniError:
        size = None
    return {**artifact, "execution_id": execution_id, "size_bytes": size}


def _dataset_row(
    session: Session, execution_id: str, name: str, request: CodeRequest, outcome: CodeOutcome
) -> dict[str, Any]:
    preview = outcome.dataframe_preview or {}
    shape = preview.get("shape") or [None, None]
    return {
        "name": name,
        "path": request.save_file or session.workspace.dataset_file(name),
        "rows": shape[0],
        "columns": preview.get("columns"),
        "source_execution_id": execution_id,
    }


def _summary(contract: dict[str, Any], request: CodeRequest) -> str:
    step = f"{request.purpose}" + (f" '{request.label}'" if request.label else "")
    if contract["error"]:
        return f"{step} failed: {contract['error']['code']}: {contract['error']['message'][:200]}"
    parts = [f"{step} ok in {contract['duration_ms']} ms"]
    if contract["artifacts"]:
        parts.append(f"{len(contract['artifacts'])} artifact(s)")
    if contract["datasets_saved"]:
        parts.append("saved " + ", ".join(contract["datasets_saved"]))
    return "; ".join(parts)
