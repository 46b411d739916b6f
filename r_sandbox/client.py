"""RWorkerPool: one R worker process per session, started, limited, sandboxed and restarted here.

Each worker is ``python -m r_sandbox.worker`` (rpy2 embedding R), optionally wrapped by
``wrap_command`` (nini's puts it in bubblewrap and its own cgroup, which ``on_exit`` releases), in a new process group,
with an allowlisted environment and a private runtime folder ``/tmp/nini-r-XXXXXXXX`` (HOME, TMPDIR,
the worker's log). Runs of one session are serialised; different sessions run concurrently. A run
that passes its timeout, or whose worker dies, kills the worker and starts a new one: the caller
gets TIMEOUT or WORKER_DIED (or what ``on_exit`` says: TOO_LARGE for its memory limit) in the usual
result shape, and the session goes on without its R state.

A ``keeper`` (nini's ``nini.execution.culling.Culler``, set after construction) may shut idle
workers down through ``owned``/``session_lock``/``discard``: it is awaited before a worker starts
(``make_room(session_id)``), tells a session's next run that its worker had been culled
(``take_notice(session_id, language)``, put before the run's stderr), forgets a session whose worker
was stopped otherwise (``forget``) and is closed with the pool (``aclose``).
"""

from __future__ import annotations

import asyncio
import functools
import importlib.util
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from r_sandbox.errors import RSandboxError
from r_sandbox.messages import LANGUAGES
from r_sandbox.protocol import (
    OUTPUT_MAX_BYTES,
    REQUEST_KEYS,
    ErrorCode,
    decode,
    encode,
    error_dict,
    failure,
    line_limit,
    wire_code,
)

__all__ = ["MEMORY_ENV", "RWorkerPool"]

WrapCommand = Callable[[list[str], Path, Path], list[str]]
# Called once a worker has ended, with its runtime folder: releases what ``wrap_command`` made for
# it (nini: its cgroup), and says why it died when the wrapper knows ({code, message, ...}) or None.
OnExit = Callable[[Path], "dict[str, Any] | None"]

# What a worker inherits from this process's environment: nothing else (API keys live there).
_PASSED_ENV = frozenset({"PATH", "LANG", "LANGUAGE", "TZ", "R_HOME"})
# So that RLIMIT_AS measures memory rather than reservations (both are read at process start):
# - pyarrow's default allocator (mimalloc) reserves about 1 GiB of address space at first use;
#   the system allocator reserves nothing. Without this a Parquet read, then a cairo PNG, failed
#   under the default limit ("failed to create cairo scaled font ... out of memory").
# - glibc gives every thread that allocates its own arena with 64 MiB of reserved address space.
# Measured (2 cores): peak address space of a worker that read and wrote Parquet, loaded dplyr and
# ggplot2 and drew a PNG and an SVG: 1.9 GiB without these settings, 0.74 GiB with them (an idle
# worker: 0.15 GiB; pandas and pyarrow load with the first data frame).
MEMORY_ENV = {"ARROW_DEFAULT_MEMORY_POOL": "system", "MALLOC_ARENA_MAX": "2"}
_STATE_LOST = (
    "the R session state (variables, loaded packages) was lost; datasets and artifacts saved in the workspace are kept"
)


class _WorkerLost(Exception):
    """The worker's pipes closed (it died) or its reply broke the protocol."""


class _Stopped(Exception):
    """The run's ``stop`` was set before the worker answered."""


@dataclass
class _Worker:
    process: asyncio.subprocess.Process
    runtime_dir: Path
    workspace: Path
    r_version: str
    startup_ms: int
    started_at: str
    language: str  # of its run-time guard's words, set when it started
    restarts: int = 0
    last_id: int = 0
    last_used: float = field(default_factory=time.monotonic)  # when a run last started or ended


class RWorkerPool:
    """The R workers of all sessions of one nini process."""

    def __init__(
        self,
        *,
        memory_limit_mb: int = 1024,
        timeout_s: float = 120,
        allowed_packages: Iterable[str] = (),
        wrap_command: WrapCommand | None = None,
        start_timeout_s: float = 60,
        language: str = "zh",
        make_runtime_dir: Callable[[], Path] | None = None,
        on_exit: OnExit | None = None,
        output_max_bytes: int = OUTPUT_MAX_BYTES,
    ) -> None:
        self.memory_limit_mb = memory_limit_mb
        self.on_exit = on_exit
        self.timeout_s = timeout_s
        self.allowed_packages = tuple(allowed_packages)  # beyond r_sandbox.rules.DEFAULT_PACKAGES
        self.wrap_command = wrap_command
        self.start_timeout_s = start_timeout_s
        self.language = language  # of policy messages: zh or en
        self.output_max_bytes = output_max_bytes  # of each stream of a run; bounds the replies read too
        # a new private folder per worker; nini's stamps it with its owner, to sweep it after a crash
        self.make_runtime_dir = make_runtime_dir or (lambda: Path(tempfile.mkdtemp(prefix="nini-r-", dir="/tmp")))
        self._workers: dict[str, _Worker] = {}
        self._restarts: dict[str, int] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._closed = False
        self.keeper: Any = None  # see the module's docstring
        # Workers started and not yet stopped (runtime folder -> pid), for a pool dropped or an
        # interpreter leaving without aclose(): the finalizer kills them and removes the folders.
        self._live: dict[Path, int] = {}
        weakref.finalize(self, _abandon, self._live)

    async def run(
        self, session_id: str, workspace_root: Path, request: dict[str, Any], *, stop: Any = None
    ) -> dict[str, Any]:
        """Run ``request`` (the keys of Python's run_code) in the session's worker; the result dict.

        ``stop`` (nini's ``outcome.RunStop``: ``is_set()``, ``await wait()``, ``error(fate)``) may end
        the run early: the worker is then killed and replaced, as at the timeout, and the run fails with
        ``stop.error("worker_restarted")``. Raises RSandboxError when a worker cannot be started
        (R_UNAVAILABLE, WORKER_DIED) or the request is malformed (INVALID_ARGUMENT); everything that
        happens to a run is in the result.
        """
        return await self._run(session_id, workspace_root, request, skip_policy=False, stop=stop)

    async def restart(self, session_id: str) -> None:
        """A fresh worker for the session (its R state is lost); started on the next run."""
        async with self._lock(session_id):
            worker = self._workers.pop(session_id, None)
            if worker is not None:
                self._restarts[session_id] = self._restarts.get(session_id, 0) + 1
                await self._stop(worker)

    async def shutdown_session(self, session_id: str) -> None:
        """Stop the session's worker, if any; a later run starts a new one."""
        async with self._lock(session_id):
            if self.keeper is not None:
                self.keeper.forget(session_id)
            worker = self._workers.pop(session_id, None)
            if worker is not None:
                await self._stop(worker)

    def owned(self) -> dict[str, _Worker]:
        """The sessions' live workers (busy ones included), for the ``keeper``."""
        return self._workers

    def session_lock(self, session_id: str) -> asyncio.Lock:
        """Held while a run of the session is under way: the ``keeper`` culls no busy worker."""
        return self._lock(session_id)

    async def discard(self, session_id: str) -> None:
        """Kill the session's worker (its process group, runtime folder and what ``on_exit`` releases),
        its lock held by the ``keeper``."""
        await self._stop(self._workers[session_id])
        del self._workers[session_id]  # once its processes are reaped

    async def aclose(self) -> None:
        """Kill every worker, including busy ones (their runs end as WORKER_DIED). Safe to call twice."""
        self._closed = True
        if self.keeper is not None:
            await self.keeper.aclose()
        workers, self._workers = list(self._workers.values()), {}
        await asyncio.gather(*(self._stop(w) for w in workers), return_exceptions=True)

    def worker_info(self, session_id: str) -> dict[str, Any] | None:
        """``{pid, started_at, restarts, r_version, startup_ms}``; None when the session has no worker.

        With a ``wrap_command`` (bwrap), ``pid`` is the wrapper's; the worker is its child.
        """
        worker = self._workers.get(session_id)
        if worker is None:
            return None
        return {
            "pid": worker.process.pid,
            "started_at": worker.started_at,
            "restarts": worker.restarts,
            "r_version": worker.r_version,
            "startup_ms": worker.startup_ms,
        }

    async def _run(
        self, session_id: str, workspace_root: Path, request: dict[str, Any], *, skip_policy: bool, stop: Any = None
    ) -> dict[str, Any]:
        """``run`` itself; ``skip_policy`` exists for the tests of the run-time guard only."""
        payload = self._payload(request)
        workspace = Path(workspace_root).resolve()  # the sandbox binds it; a worker serves one folder
        async with self._lock(session_id):
            worker = await self._worker(session_id, workspace, payload["language"])
            started = time.monotonic()
            was_dead = worker.process.returncode is not None
            message = {"op": "run", "request": payload, "skip_policy": skip_policy}
            worker.last_used = time.monotonic()
            try:
                reply = await _call_until(worker, message, payload["timeout_s"], stop)
                worker.last_used = time.monotonic()
            except _Stopped:
                note = await self._replace(session_id, worker)
                error = stop.error("worker_restarted")
                return failure(error["code"], error["message"] + note, duration_ms=_ms(started))
            except TimeoutError:
                note = await self._replace(session_id, worker)
                stopped = f"the R code was stopped after {payload['timeout_s']:g} s (timeout)"
                return failure(
                    ErrorCode.TIMEOUT,
                    f"{stopped}: the R worker was restarted, so {_STATE_LOST}{note}",
                    duration_ms=_ms(started),
                )
            except _WorkerLost as lost:
                cause = await self._stop(worker)  # reaped: its exit status says how it ended
                how = _exit_description(worker.process.returncode, self.memory_limit_mb)
                how += f"; {lost}" if str(lost) else ""
                what = "died while running this code"
                if was_dead:
                    what = "had stopped since the last call; the code did not run"
                note = await self._replace(session_id, worker)
                if cause is not None:  # the wrapper knows: its memory limit, say
                    result = failure(cause["code"], cause["message"] + note, duration_ms=_ms(started))
                    result["error"] = {**cause, **result["error"]}
                    return result
                said = f"the R worker {what} ({how}); {_STATE_LOST}{note}"
                return failure(ErrorCode.WORKER_DIED, said, duration_ms=_ms(started))
            except BaseException:  # cancelled mid-run: the worker is busy with code nobody waits for
                self._workers.pop(session_id, None)
                await self._stop(worker)
                raise
        if not reply.get("ok"):
            error = reply.get("error") or {}
            raise RSandboxError(wire_code(error.get("code")), error.get("message", "the R worker refused the request"))
        result = reply["result"]
        result["duration_ms"] = _ms(started)
        if self.keeper is not None:  # a worker culled since the session's last run: its variables are gone
            result["stderr"] = (
                self.keeper.take_notice(session_id, payload["language"] or self.language) + result["stderr"]
            )
        return result

    def _payload(self, request: dict[str, Any]) -> dict[str, Any]:
        unknown = sorted(set(request) - set(REQUEST_KEYS))
        if unknown:
            raise RSandboxError(
                ErrorCode.INVALID_ARGUMENT, f"unknown request keys {unknown}; allowed: {list(REQUEST_KEYS)}"
            )
        if not isinstance(request.get("code"), str):
            raise RSandboxError(ErrorCode.INVALID_ARGUMENT, "request['code'] must be a string of R source")
        payload = {key: request.get(key) for key in REQUEST_KEYS}
        timeout = payload["timeout_s"] if payload["timeout_s"] is not None else self.timeout_s
        if not isinstance(timeout, (int, float)) or not timeout > 0:
            raise RSandboxError(
                ErrorCode.INVALID_ARGUMENT, f"timeout_s must be a positive number of seconds, not {timeout!r}"
            )
        payload["timeout_s"] = float(timeout)
        if payload["language"] not in (None, *LANGUAGES):
            raise RSandboxError(
                ErrorCode.INVALID_ARGUMENT,
                f"language must be one of {', '.join(LANGUAGES)}, not {payload['language']!r}",
            )
        return payload

    async def _stop(self, worker: _Worker, *, keep_log: bool = False) -> dict[str, Any] | None:
        """Kill and reap ``worker``; why it died, when ``on_exit`` knows (asked once per worker)."""
        live = self._live.pop(worker.runtime_dir, None)
        await _kill(worker, keep_log=keep_log)
        if self.on_exit is None or live is None:
            return None
        return await asyncio.to_thread(self.on_exit, worker.runtime_dir)

    def _lock(self, session_id: str) -> asyncio.Lock:
        return self._locks.setdefault(session_id, asyncio.Lock())

    async def _worker(self, session_id: str, workspace: Path, language: str | None = None) -> _Worker:
        """The session's worker; a new one starts in ``language`` (its run-time guard's words), else the pool's."""
        if self._closed:
            raise RSandboxError(ErrorCode.WORKER_DIED, "the R worker pool is closed")
        worker = self._workers.get(session_id)
        if worker is not None and worker.workspace != workspace:  # the session moved: bind the new folder
            self._workers.pop(session_id)
            await self._stop(worker)
            worker = None
        if worker is None:
            if self.keeper is not None:
                await self.keeper.make_room(session_id)
            worker = await self._start(workspace, language or self.language)
            if self._closed:  # aclose() ran while this one was starting
                await self._stop(worker)
                raise RSandboxError(ErrorCode.WORKER_DIED, "the R worker pool is closed")
            worker.restarts = self._restarts.get(session_id, 0)
            self._workers[session_id] = worker
        return worker

    async def _replace(self, session_id: str, worker: _Worker) -> str:
        """Kill ``worker`` and start its successor now; a note for the message if that failed."""
        self._workers.pop(session_id, None)
        await self._stop(worker)
        self._restarts[session_id] = self._restarts.get(session_id, 0) + 1
        if self._closed:
            return ""
        try:
            await self._worker(session_id, worker.workspace, worker.language)  # its successor speaks as it did
        except RSandboxError as exc:  # the next run tries again, and raises if it fails again
            return f"; starting a new R worker failed: {exc.message}"
        return ""

    async def _start(self, workspace: Path, language: str) -> _Worker:
        if importlib.util.find_spec("rpy2") is None:
            raise RSandboxError(ErrorCode.R_UNAVAILABLE, "rpy2 is not installed: pip install 'nini[r]'")
        workspace.mkdir(parents=True, exist_ok=True)
        # Short, under /tmp, removed on shutdown; the sandbox mounts it writable next to the workspace.
        runtime = self.make_runtime_dir()
        for folder in ("home", "tmp"):
            (runtime / folder).mkdir()
        log_path = runtime / "worker.log"
        log_path.touch()  # before wrap_command, which may hand the runtime folder to the sandbox's user
        cmd = [
            sys.executable,
            "-P",
            "-m",
            "r_sandbox.worker",
            "--workspace",
            str(workspace),
            "--memory-mb",
            str(self.memory_limit_mb),
            "--packages",
            ",".join(self.allowed_packages),
            "--language",
            language,
            "--output-max-bytes",
            str(self.output_max_bytes),
        ]  # -P: the workspace (cwd) must not shadow modules the worker imports
        if self.wrap_command is not None:
            cmd = self.wrap_command(cmd, workspace, runtime)
        started = time.monotonic()
        try:
            with open(log_path, "wb") as log:  # the worker's stderr: R start-up noise, crash messages
                process = await asyncio.create_subprocess_exec(
                    *cmd,
                    stdin=asyncio.subprocess.PIPE,
                    stdout=asyncio.subprocess.PIPE,
                    stderr=log,
                    cwd=workspace,
                    env=_worker_env(runtime),
                    start_new_session=True,
                    limit=line_limit(self.output_max_bytes),
                )
        except OSError as exc:  # the wrapper or the interpreter is missing
            shutil.rmtree(runtime, ignore_errors=True)
            if self.on_exit is not None:
                self.on_exit(runtime)
            raise RSandboxError(ErrorCode.WORKER_DIED, f"the R worker could not be started: {exc}") from exc
        self._live[runtime] = process.pid
        worker = _Worker(process, runtime, workspace, "", 0, datetime.now(UTC).isoformat(timespec="seconds"), language)
        assert process.stdout is not None
        try:
            line: bytes | None = await asyncio.wait_for(process.stdout.readline(), self.start_timeout_s)
        except (TimeoutError, ValueError):
            line = None
        hello = _hello(line, self.start_timeout_s)
        if not hello.get("ready"):
            await self._stop(worker, keep_log=True)
            error = hello.get("error") or error_dict(ErrorCode.WORKER_DIED, "the R worker did not start")
            tail = _tail(log_path)
            shutil.rmtree(runtime, ignore_errors=True)
            message = error["message"] + (f"; worker output: {tail}" if tail else "")
            raise RSandboxError(wire_code(error.get("code")), message, {"log_tail": tail} if tail else None)
        worker.r_version = str(hello.get("r_version", ""))
        worker.startup_ms = _ms(started)
        return worker


async def _call_until(worker: _Worker, message: dict[str, Any], timeout_s: float, stop: Any) -> dict[str, Any]:
    """``_call``, ended by TimeoutError after ``timeout_s`` or by _Stopped once ``stop`` is set (a
    reply that came first wins)."""
    if stop is None:
        return await asyncio.wait_for(_call(worker, message), timeout_s)
    call = asyncio.ensure_future(_call(worker, message))
    stopped = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait((call, stopped), timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopped.cancel()
        if not call.done():
            call.cancel()
    if call.done() and not call.cancelled():
        return call.result()
    if stop.is_set():
        raise _Stopped()
    raise TimeoutError()


async def _call(worker: _Worker, message: dict[str, Any]) -> dict[str, Any]:
    """Send one request and wait for the reply with its id."""
    worker.last_id += 1
    ident = worker.last_id
    stdin, stdout = worker.process.stdin, worker.process.stdout
    assert stdin is not None and stdout is not None
    try:
        stdin.write(encode({"id": ident, **message}))
        await stdin.drain()
    except (BrokenPipeError, ConnectionResetError) as exc:
        raise _WorkerLost() from exc
    while True:
        try:
            line = await stdout.readline()
        except ValueError as exc:  # longer than line_limit(): the worker keeps below it, so it is broken
            raise _WorkerLost("a reply longer than the protocol allows") from exc
        if not line:
            raise _WorkerLost()
        reply = decode(line)
        if reply.get("id") == ident:
            return reply


async def _kill(worker: _Worker, *, keep_log: bool = False) -> None:
    """Kill the worker's process group, reap it, remove its runtime folder; never raises."""
    process = worker.process
    if process.returncode is None:
        try:
            os.killpg(process.pid, signal.SIGKILL)  # start_new_session: the group is the worker's (or bwrap's)
        except (ProcessLookupError, PermissionError):
            pass
    if process.stdin is not None:
        process.stdin.close()
    try:
        await process.wait()
    except Exception:  # the loop may be closing
        pass
    if not keep_log:
        shutil.rmtree(worker.runtime_dir, ignore_errors=True)


def _hello(line: bytes | None, timeout_s: float) -> dict[str, Any]:
    """The worker's ready line; an error in its shape when there is none."""
    if line is None:
        return {"error": error_dict(ErrorCode.WORKER_DIED, f"the R worker was not ready within {timeout_s:g} s")}
    try:
        return decode(line)
    except ValueError:  # end of file (the worker exited), or noise instead of the ready line
        return {"error": error_dict(ErrorCode.WORKER_DIED, "the R worker exited while starting")}


def _abandon(live: dict[Path, int]) -> None:
    """Kill and clean up after workers nobody stopped (synchronous: runs from a finalizer)."""
    for runtime, pid in list(live.items()):
        try:
            os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        shutil.rmtree(runtime, ignore_errors=True)
    live.clear()


@functools.cache
def r_home() -> str | None:
    """R's home folder: ``R_HOME``, else what ``R RHOME`` says (asked once, here on the host: a
    sandboxed worker may not run programs, and rpy2 would ask R itself when R_HOME is unset)."""
    if os.environ.get("R_HOME"):
        return os.environ["R_HOME"]
    binary = shutil.which("R")
    if binary is None:
        return None
    try:
        found = subprocess.run([binary, "RHOME"], capture_output=True, text=True, timeout=30, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return found or None


def _worker_env(runtime: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k in _PASSED_ENV or k.startswith("LC_")}
    home = r_home()
    if home and "R_HOME" not in env:
        env["R_HOME"] = home
    if "LANG" not in env and "LC_ALL" not in env:
        env["LANG"] = "C.UTF-8"  # R reads and prints UTF-8 (data and messages in any language)
    package_root = Path(__file__).resolve().parent.parent
    env.update(
        HOME=str(runtime / "home"),
        TMPDIR=str(runtime / "tmp"),  # R's tempdir(): removed with the runtime folder, even after a kill
        PYTHONPATH=str(package_root),  # r_sandbox importable without an installed nini
        PYTHONDONTWRITEBYTECODE="1",
        **MEMORY_ENV,
    )
    return env


def _exit_description(returncode: int | None, memory_limit_mb: int) -> str:
    if returncode is not None and returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"killed by {name}: a crash, or more memory than its {memory_limit_mb} MB limit"
    return f"exit status {returncode}"


def _tail(path: Path, limit: int = 800) -> str:
    try:
        return path.read_text(errors="replace")[-limit:].strip()
    except OSError:
        return ""


def _ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)
