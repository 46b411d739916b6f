"""InProcessExecutor: run_code in this process's IPython shell, for ``%%nini`` in a notebook.

``%%nini`` runs the agent inside the user's kernel so that run_code sees the user's variables.
That kernel is busy running the magic's cell, so no execute_request can reach it. Instead the
agent, on a loop thread, hands each request to the thread that owns the shell (the kernel's main
thread, waiting in ``serve``), which runs it with ``shell.run_cell`` and hands the outcome back.

A run keeps the kernel path's contract (``python_runner``): the prelude (``datasets``, ``df``),
``result``/``output_df``/``save_as``/figures collected by ``_kernel_side.collect``, the same
``CodeOutcome``. The code's output is captured, never shown in the cell: the magic decides what to
show. Differences: the code runs in the user's process, unsandboxed (each step asks the user
first unless they turned that off: ``run_code``), and a ``result``/``output_df`` of the user's is
put aside during a run and restored after it.

The working directory and ``sys.path`` stay the notebook's. Sandboxed steps of the same session
write the workspace, so it may hold a planted ``seaborn.py`` or a link: with the workspace as the
working directory, ``import seaborn`` here would run the planted file as the user (IPython puts
the working directory first on ``sys.path``). The workspace is reached only by explicit paths
through its ``RootedDir`` (``_kernel_side``), which never follows a link.

Timeouts: at the deadline a timer thread sends SIGINT to the serving thread. A real signal, not
``_thread.interrupt_main()``, which only sets a flag and so cannot cut a ``time.sleep`` short.
Code that ignores it for ``INTERRUPT_GRACE_S`` is reported as TIMEOUT "may still be busy" and its
late outcome is dropped. A SIGINT nini did not send is the user interrupting the cell: the current
run ends CANCELED and ``serve`` raises KeyboardInterrupt, for the magic to cancel the agent's turn.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
import queue
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from nini.errors import ErrorCode, error_dict
from nini.execution import _kernel_side
from nini.execution._shell_capture import captured, ends_quiet, inline_figures_held
from nini.execution.outcome import CodeOutcome, CodeRequest
from nini.execution.output_caps import RunOutputs
from nini.execution.python_runner import (
    INTERRUPT_GRACE_S,
    Exchange,
    build_outcome,
    collect_failure,
    missing_dataset,
    prelude_failure,
    stopped,
)
from nini.execution.workspace import Workspace

__all__ = ["InProcessExecutor"]

log = logging.getLogger("nini.execution.inprocess")

POLL_S = 0.5  # how often ``serve`` looks at ``until`` when nothing arrives
COLLECTED_NAMES = ("result", "output_df")  # what collect reads and removes after every run
CANCELED_BY_USER = "the cell was interrupted: the run was canceled"
T = TypeVar("T")
_WAKE = object()  # queued when ``until`` completes, behind everything handed over before


@dataclass(eq=False)
class _Job:
    request: CodeRequest
    workspace: Workspace
    future: concurrent.futures.Future[CodeOutcome] = field(default_factory=concurrent.futures.Future)
    exchange: Exchange = field(default_factory=Exchange)
    code_ended: threading.Event = field(default_factory=threading.Event)
    started: float = 0.0
    stop: str | None = None  # why nini interrupted the code: "timeout" or "cancel"

    def __post_init__(self) -> None:
        self.exchange.budget = RunOutputs(self.request.output_limits)  # outputs capped as they arrive


class InProcessExecutor:
    """Runs CodeRequests in an IPython shell of this process, on the thread that calls ``serve``.

    ``run`` has ``KernelPool.run``'s signature, so a Session takes it as its ``python_executor``.
    """

    def __init__(self, shell: Any = None) -> None:
        if shell is None:
            from IPython import get_ipython

            shell = get_ipython()
            if shell is None:
                raise RuntimeError("InProcessExecutor needs a running IPython shell")
        self.shell = shell
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._lock = threading.Lock()  # between the timer and canceling threads; never on the serving thread
        self._running: _Job | None = None  # the job whose code is in run_cell right now
        self._serving: int | None = None  # ident of the thread in ``serve``
        # Read by the SIGINT handler without a lock: a handler that raised while the serving thread
        # held a lock could leave it held. Plain attribute reads and writes are atomic.
        self._signal_sent = False
        self._user_interrupted = False
        self._closed = False

    async def run(
        self, session_id: str, workspace: Workspace, request: CodeRequest, *, kernel_id: str | None = None
    ) -> CodeOutcome:
        """Hand ``request`` to the serving thread and wait for its outcome.

        ``session_id`` and ``kernel_id`` exist for KernelPool's signature: the code always runs in
        this shell. A request that no thread starts within its timeout (nobody serves, or the
        shell is still stuck in an earlier run) ends TIMEOUT without running. Canceling the caller
        interrupts the code.
        """
        if self._closed:
            return CodeOutcome.failure(ErrorCode.CANCELED, "the notebook cell that ran nini has finished")
        job = _Job(request, workspace)
        self._queue.put(job)
        waiting = asyncio.wrap_future(job.future)
        try:
            await asyncio.wait([waiting], timeout=request.timeout_s)
            if not waiting.done() and job.future.cancel():
                message = (
                    f"the code did not start within {request.timeout_s:g} s: the kernel is busy with an earlier run"
                )
                return CodeOutcome.failure(ErrorCode.TIMEOUT, message)
            return await waiting
        except asyncio.CancelledError:
            if not job.future.cancel():
                self._interrupt(job, "cancel")
            raise

    async def ask(self, question: Callable[[], T], refused: T) -> T:
        """``question()`` asked on the serving thread, where the cell's ``input()`` reaches the user;
        its answer. A question that fails (a frontend without stdin) answers ``refused``; so does
        the user interrupting the cell, which also cancels the turn (``serve`` raises)."""
        answer: concurrent.futures.Future[T] = concurrent.futures.Future()

        def put() -> None:
            try:
                answer.set_result(question())
            except Exception:
                log.warning("asking the user failed; taken as a no", exc_info=True)
                answer.set_result(refused)
            except BaseException:
                answer.set_result(refused)
                raise

        self.call_soon(put)
        return await asyncio.wrap_future(answer)

    def call_soon(self, callback: Callable[[], Any]) -> None:
        """Run ``callback`` on the serving thread, in order with the requests (from any thread)."""
        self._queue.put(callback)

    def serve(self, until: concurrent.futures.Future[Any], on_idle: Callable[[], Any] | None = None) -> None:
        """Run handed-over requests and callbacks on this thread until ``until`` is done;
        ``on_idle`` runs here each time nothing arrived for ``POLL_S`` (a progress line's tick).

        Everything handed over before ``until`` completed still runs. Must be the main thread
        (Python runs signal handlers only there). Raises KeyboardInterrupt when the user
        interrupts; a run in progress ends CANCELED first. May be called again after that.
        """
        if threading.current_thread() is not threading.main_thread():
            raise RuntimeError("InProcessExecutor.serve must run on the main thread")
        until.add_done_callback(lambda _: self._queue.put(_WAKE))
        previous = signal.signal(signal.SIGINT, self._on_sigint)
        self._serving = threading.get_ident()
        try:
            while True:
                try:
                    item = self._queue.get(timeout=POLL_S)
                except queue.Empty:
                    item = _WAKE
                    if on_idle is not None:
                        _call(on_idle)
                if item is _WAKE:
                    if until.done():
                        return
                elif isinstance(item, _Job):
                    self._serve(item)
                else:
                    _call(item)
        finally:
            self._serving = None
            signal.signal(signal.SIGINT, previous)

    def close(self) -> None:
        """Refuse further requests and answer the queued ones CANCELED (the cell is ending)."""
        self._closed = True
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return
            if isinstance(item, _Job) and item.future.set_running_or_notify_cancel():
                finished = CodeOutcome.failure(ErrorCode.CANCELED, "the notebook cell that ran nini has finished")
                item.future.set_result(finished)

    # -- the serving thread ------------------------------------------------------------------------

    def _serve(self, job: _Job) -> None:
        if not job.future.set_running_or_notify_cancel():
            return  # canceled (or timed out) while it waited in the queue
        try:
            outcome = self._execute(job)
        except KeyboardInterrupt:  # the user's, outside the code itself
            self._user_interrupted = False
            _settle(job, CodeOutcome.failure(ErrorCode.CANCELED, CANCELED_BY_USER))
            raise
        except Exception as exc:  # nini's own failure: this run fails, the notebook carries on
            log.exception("in-process run failed")
            message = f"nini could not run the code here: {type(exc).__name__}: {exc}"
            outcome = CodeOutcome.failure(ErrorCode.INTERNAL, message)
        _settle(job, outcome)
        if self._user_interrupted:
            self._user_interrupted = False
            raise KeyboardInterrupt

    def _execute(self, job: _Job) -> CodeOutcome:
        request, workspace = job.request, job.workspace
        job.started = time.monotonic()
        missing = missing_dataset(workspace, request)
        if missing is not None:
            return missing
        root = str(workspace.root)
        namespace = self.shell.user_ns
        put_aside = {name: namespace.pop(name) for name in COLLECTED_NAMES if name in namespace}
        shadowed = _users_own_bindings(namespace, request)
        try:
            try:
                _kernel_side.prelude(root, request.dataset_name)
            except Exception as exc:
                failed = Exchange(reply={"status": "error", "ename": type(exc).__name__, "evalue": str(exc)})
                return prelude_failure(failed, request, job.started, restartable=False)
            main = self._run_code(job)
            succeeded = main.state == "ok" and (main.reply or {}).get("status") == "ok"
            collected = _collect(root, request, succeeded)
            outcome = build_outcome(main, collected, workspace, request, job.started, restartable=False)
        finally:
            for name in COLLECTED_NAMES:
                namespace.pop(name, None)
            namespace.update(put_aside)
            namespace.update(shadowed)
        if self._user_interrupted:
            error = error_dict(ErrorCode.CANCELED, CANCELED_BY_USER)
            return replace(outcome, success=False, result=None, error=error)
        return outcome

    def _run_code(self, job: _Job) -> Exchange:
        exchange = job.exchange
        if job.stop is not None:  # canceled before it began
            exchange.state, exchange.reply = "interrupted", {"status": "aborted"}
            return exchange
        self._running = job
        delay = max(job.started + job.request.timeout_s - time.monotonic(), 0.0)
        timer = threading.Timer(delay, self._on_deadline, (job,))
        timer.daemon = True
        timer.start()
        result: Any = None
        error: BaseException | None = None
        try:
            with captured(self.shell, exchange, quiet=ends_quiet(job.request.code)), inline_figures_held(self.shell):
                try:
                    result = self.shell.run_cell(job.request.code, store_history=False, silent=False)
                    # Inside the try: nini's SIGINT arriving just as the code ended lands below.
                    self._running = None
                    error = result.error_before_exec if result.error_before_exec is not None else result.error_in_exec
                except KeyboardInterrupt as exc:  # outside the code's own frames (IPython's hooks, ours)
                    self._running = None
                    if job.stop is None:
                        raise
                    error = exc
                except Exception as exc:  # e.g. top-level await, which needs the kernel's busy loop
                    self._running = None
                    error = exc
        finally:
            self._running = None
            timer.cancel()
            job.code_ended.set()
        if job.stop is not None and isinstance(error, KeyboardInterrupt):
            exchange.state = "interrupted"
        count = getattr(result, "execution_count", None) or self.shell.execution_count
        exchange.reply = _reply(error, exchange, count)
        return exchange

    def _on_sigint(self, signum: int, frame: Any) -> None:
        ours, self._signal_sent = self._signal_sent, False
        if ours:
            if self._running is not None:
                raise KeyboardInterrupt
            return  # the code ended before the signal arrived: nothing left to stop
        self._user_interrupted = True
        raise KeyboardInterrupt

    # -- other threads -----------------------------------------------------------------------------

    def _interrupt(self, job: _Job, reason: str) -> None:
        with self._lock:
            if job.stop is not None:
                return
            job.stop = reason
            if self._running is job and self._serving is not None:
                self._signal_sent = True
                signal.pthread_kill(self._serving, signal.SIGINT)

    def _on_deadline(self, job: _Job) -> None:
        """Timer thread: interrupt the code; if it does not stop, answer for it (it is stuck)."""
        self._interrupt(job, "timeout")
        if job.stop != "timeout" or job.code_ended.wait(INTERRUPT_GRACE_S):
            return
        seen = job.exchange
        stuck = Exchange(state="stuck", stdout=list(seen.stdout), stderr=list(seen.stderr), outputs=list(seen.outputs))
        _settle(job, stopped(stuck, job.request, job.started, restartable=False))


def _settle(job: _Job, outcome: CodeOutcome) -> None:
    """Set the job's outcome unless it already has one (a stuck run's late result is dropped)."""
    try:
        job.future.set_result(outcome)
    except concurrent.futures.InvalidStateError:
        pass


def _call(callback: Callable[[], Any]) -> None:
    try:
        callback()
    except Exception:  # a caller's bug must not stop the serving loop (and the agent waiting on it)
        log.exception("callback handed to the in-process executor failed")


def _collect(root: str, request: CodeRequest, succeeded: bool) -> dict[str, Any]:
    save_as = request.save_as if succeeded else None
    try:
        collected: dict[str, Any] = json.loads(
            _kernel_side.collect(
                root,
                request.label,
                save_as,
                succeeded,
                request.max_figures,
                request.save_file,
                request.pending_file,
                request.output_limits.max_bytes,
            ).text
        )
        return collected
    except Exception as exc:
        return collect_failure(type(exc).__name__, str(exc))


def _reply(error: BaseException | None, exchange: Exchange, execution_count: int) -> dict[str, Any]:
    """What ipykernel's execute_reply would have said."""
    if error is None:
        return {"status": "ok", "execution_count": execution_count}
    shown = next((o for o in reversed(exchange.outputs) if o["output_type"] == "error"), None)
    return {
        "status": "error",
        "ename": type(error).__name__,
        "evalue": str(error),
        "traceback": shown["traceback"] if shown else [],
        "execution_count": execution_count,
    }


def _users_own_bindings(namespace: dict[str, Any], request: CodeRequest) -> dict[str, Any]:
    """The notebook's own ``df`` / ``datasets`` that the prelude is about to rebind.

    In nini's kernels those names are nini's; in the user's kernel they are often the user's
    (``df`` above all), so the run gets the session's and the user gets theirs back after it.
    """
    names = ("datasets", "df") if request.dataset_name is not None else ("datasets",)
    return {
        name: namespace[name]
        for name in names
        if name in namespace and not isinstance(namespace[name], _kernel_side.DatasetMapping)
    }
