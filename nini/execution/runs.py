"""One step of agent code, Python or R, run for a session: the part of ``run_code`` and
``run_r_code`` that is execution.

The skills check their arguments, build the ``CodeRequest`` and shape and record the result; here
a step is run: refused before it starts when the policy or the person says so, in the executor
where the session's code runs (``isolation``: nini's kernel, under the workspace's budget watch, a
gateway's kernel, the user's kernel or %%nini's shell; the session's R worker), with the notebook's
variables copied first when asked for, and its outcome collected as a ``CodeOutcome``.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Protocol

from nini.errors import ErrorCode, NiniError
from nini.execution.disk_watch import Budget, RunWatch
from nini.execution.isolation import USER_KERNEL_NOTICE
from nini.execution.outcome import CONTRACT_KEYS, CodeOutcome, CodeRequest
from nini.execution.python_runner import checked_artifacts
from nini.execution.variables import VariableCopy

if TYPE_CHECKING:
    from nini.config import Settings
    from nini.execution.approvals import Approvals, Asker
    from nini.execution.disk_watch import DiskWatch
    from nini.execution.kernels import KernelPool
    from nini.execution.variables import NotebookVariables
    from nini.execution.workspace import Workspace

__all__ = ["CodeSession", "check_quota", "run_python", "run_r", "watch_run"]

# Where a run's writes land on this disk, in the session workspace, and can be stopped by nini: its own
# kernels. The user's kernel is not confined anyway; a gateway's kernel writes to the gateway's disk.
WATCHED = ("sandbox", "unsandboxed")


class CodeSession(Protocol):
    """What a step needs of its session (``nini.session.Session`` is one)."""

    id: str
    workspace: Workspace
    kernel_id: str | None  # the user's notebook kernel the step runs in, if any
    python_executor: Any  # what runs Python instead of ``kernels`` (%%nini's shell), if anything
    variables: NotebookVariables | None  # the notebook whose variables may be copied, if any
    approver: Asker | None  # how the person is asked where they are (%%nini's cell), if not by an event

    @property
    def settings(self) -> Settings: ...

    @property
    def isolation(self) -> str: ...

    @property
    def kernels(self) -> KernelPool: ...

    @property
    def r_workers(self) -> Any: ...

    @property
    def approvals(self) -> Approvals: ...

    @property
    def disk_watch(self) -> DiskWatch: ...


async def check_quota(session: CodeSession) -> None:
    """TOO_LARGE when the workspace is at its budget (``execution.workspace_quota_mb`` bytes,
    ``execution.workspace_max_files`` files): no more code runs until files are removed."""
    settings = session.settings
    await session.disk_watch.check(Budget.of(settings.execution), settings.ui.current_language)


def watch_run(session: CodeSession) -> RunWatch:
    """The budget watch of one run in nini's own kernel or R worker (``async with``; the run's
    ``stop``): a run that goes over the workspace's budget is stopped, and after it the workspace is
    guarded while the session's kernel or worker lives (``disk_watch``)."""
    settings = session.settings
    return session.disk_watch.run(Budget.of(settings.execution), settings.ui.current_language)


async def run_python(session: CodeSession, request: CodeRequest, variables: list[str]) -> CodeOutcome:
    """Run ``request`` where the session's Python runs, after copying the notebook's ``variables``
    into a kernel of nini's (the user's own kernel has them already); the outcome, or the refusal of
    the policy, the person (``execution.approve_in_user_kernel``) or the copy."""
    isolation = session.isolation
    outcome = _policy_refusal(session, request.code) or await _approval_refusal(session, request.code, isolation)
    copy = VariableCopy()
    if outcome is None and variables and isolation != "user_kernel":
        copy = await _copy_variables(session, variables, request.timeout_s)
        outcome = copy.refusal
    if outcome is None and isolation in WATCHED:
        async with watch_run(session) as watch:
            outcome = await session.kernels.run(session.id, session.workspace, request, stop=watch)
    elif outcome is None:
        executor = session.python_executor or session.kernels
        outcome = await executor.run(session.id, session.workspace, request, kernel_id=session.kernel_id)
    if copy.notes:
        outcome = dataclasses.replace(outcome, stderr="".join(copy.notes) + outcome.stderr)
    return outcome


async def run_r(session: CodeSession, request: CodeRequest) -> CodeOutcome:
    """Run ``request`` in the session's R worker, under the workspace's budget watch; the outcome,
    its artifacts those really in the workspace. A worker that cannot start (R_UNAVAILABLE,
    WORKER_DIED) or a malformed request raises NiniError."""
    from r_sandbox.errors import RSandboxError
    from r_sandbox.protocol import REQUEST_KEYS

    if request.dataset_name:
        session.workspace.recorded_dataset(request.datasets or {}, request.dataset_name)
    payload = {key: getattr(request, key) for key in REQUEST_KEYS if key != "language"}
    try:
        async with watch_run(session) as watch:
            reply = await session.r_workers.run(
                session.id,
                session.workspace.root,
                {**payload, "language": session.settings.ui.current_language},
                stop=watch,
            )
    except RSandboxError as exc:
        raise NiniError(ErrorCode(exc.code), exc.message, exc.details) from None
    outcome = CodeOutcome(**{key: reply[key] for key in CONTRACT_KEYS})
    outcome.artifacts = checked_artifacts(session.workspace, outcome.artifacts)
    return outcome


def _policy_refusal(session: CodeSession, code: str) -> CodeOutcome | None:
    """The refusal of ``execution.python_policy`` (static checks before the code runs), if any."""
    if session.settings.execution.python_policy == "off":
        return None
    from nini.execution.policy import check_python

    try:
        check_python(code, session.workspace.root, session.settings.ui.current_language)
    except NiniError as exc:
        details = exc.details or {}
        return CodeOutcome.failure(exc.code, exc.message, line=details.get("line"), rule=details.get("rule"))
    return None


async def _approval_refusal(session: CodeSession, code: str, isolation: str) -> CodeOutcome | None:
    """CANCELED unless the user approved a step that is to run in their own, unsandboxed kernel."""
    if isolation != "user_kernel" or not session.settings.execution.approve_in_user_kernel:
        return None
    if await session.approvals.ask(session.id, code, "python", asker=session.approver):
        return None
    return CodeOutcome.failure(
        ErrorCode.CANCELED,
        f"the step was not approved: it {USER_KERNEL_NOTICE} (execution.approve_in_user_kernel), so it did not run",
    )


async def _copy_variables(session: CodeSession, names: list[str], timeout_s: float) -> VariableCopy:
    """Copies of the notebook's ``names`` in the session's sandboxed kernel (``nini.execution.variables``)."""
    if session.isolation == "gateway":
        raise NiniError(
            ErrorCode.INVALID_ARGUMENT,
            "variables: copying notebook variables into a kernel on a gateway "
            "is not supported; save them as a dataset from the notebook instead",
        )
    if session.variables is None:
        raise NiniError(
            ErrorCode.INVALID_ARGUMENT,
            "variables: there is no notebook to copy variables from in this "
            "turn (the user did not ask from a notebook); use the session's datasets",
        )
    return await session.variables.ensure(names, timeout_s)
