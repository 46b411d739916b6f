"""Parse a data file in a limited child process: nini's own process gets only a bounded JSON reply.

Data files are hostile input (a 293-byte Parquet file took nini's process to 2.4 GB; a 1 GB CSV
given with ``--data`` took the CLI to 1.8 GB), so reading or describing one
(``load_dataset``, ``describe_dataset``, ``--data``, uploads with ``load=1``) happens in a
child started like an agent process (``sandbox.agent_command``): ``confine``'s limits with the
kernel's memory limit (``execution.memory_limit_mb``), in bubblewrap where the sandbox is on,
with an empty private folder as its workspace, no network and no program to run. nini opens the
files itself (through the workspace file system, no link followed) and hands the child their
descriptors over a socket; the child writes its reply to another descriptor, of which nini
reads at most ``REPLY_LIMIT`` bytes. The child runs ``_parse_side``; see there for the jobs.

Each child reads one file and exits, so nothing of one file reaches the next. Starting one
costs its pandas import (about a second), so once a Runtime has read twice, ``DataReaders``
keeps one child started and waiting: the next job only sends it its descriptors.

Failures: out of memory (MemoryError, or the child killed by the system for memory) is
TOO_LARGE naming the limit, never "damaged"; past ``execution.timeout_s`` the child is killed
and the error is TIMEOUT; a file the reader refuses keeps INVALID_ARGUMENT with the reader's words.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Literal

from nini.errors import ErrorCode, NiniError, error_dict
from nini.execution import sandbox
from nini.execution.runtime_dirs import make_runtime_dir

if TYPE_CHECKING:
    from nini.config import Settings

__all__ = ["PARSE_PREFIX", "REPLY_LIMIT", "DataReaders"]

log = logging.getLogger("nini.execution")

Job = Literal["load", "describe"]
PARSE_PREFIX = "nini-parse-"  # of a child's runtime folder (``runtime_dirs.PREFIXES``)
REPLY_LIMIT = 16 * 1024 * 1024  # bytes of a reply nini reads; a description is far smaller
# The uid a root nini's sandboxed readers run as: no session's (those start at ROOT_UID_BASE, and
# nini doctor's trial sandbox has ROOT_UID_BASE - 1). A reader owns nothing: its files are descriptors.
READER_UID = sandbox.ROOT_UID_BASE - 2
# What nini says (``ui.language``); a reader's own words for a malformed file come from the child.
WORDS = {
    "zh": {
        "memory": "读取 {name} 所需的内存超过了上限 {mb:,} "
        "MiB（execution.memory_limit_mb）；请换用较小的文件，或提高该上限",
        "time": "读取 {name} 超过了 {seconds:g} 秒（execution.timeout_s），已停止",
        "reply": "{name} 的读取结果超过了 {mb:,} MiB",
    },
    "en": {
        "memory": "reading {name} needs more memory than the limit of {mb:,} MiB (execution.memory_limit_mb); "
        "use a smaller file, or raise the limit",
        "time": "reading {name} took longer than {seconds:g} s (execution.timeout_s) and was stopped",
        "reply": "what reading {name} returned is larger than {mb:,} MiB",
    },
}


@dataclass
class _Child:
    """A started reader waiting for its one job on ``channel``."""

    process: subprocess.Popen[bytes]
    channel: socket.socket
    runtime_dir: Path
    errors: BinaryIO  # its stdout and stderr, quoted in the log when it ends without a reply

    def discard(self) -> None:
        """Kill it (its whole sandbox: it leads its own session) and remove its folder."""
        self.channel.close()
        if self.process.poll() is None:  # not reaped yet: its pid (and group) is still its own
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.process.wait()
        self.errors.close()
        shutil.rmtree(self.runtime_dir, ignore_errors=True)


class DataReaders:
    """The limited children that read data files for one Runtime; one is kept started for the next job."""

    def __init__(self, settings: Settings, mode: sandbox.SandboxMode) -> None:
        self.settings, self.mode = settings, mode
        self._spare: _Child | None = None
        self._lock = threading.Lock()
        self._closed = False
        # A started child waits for the next job once one was answered (the agent's describe_dataset
        # after a --data load must not pay a start); a one-shot command (``nini run-code --data``)
        # turns it off so that no idle child competes with its kernel's start.
        self.keep_spare = True
        # Every child is started by this one thread, which lives as long as this object: bubblewrap's
        # --die-with-parent (PR_SET_PDEATHSIG) follows the *thread* that started it, so a child
        # started by a passing thread (asyncio.to_thread's) would be killed when that thread ends.
        self._spawner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="nini-reader")

    def read(
        self,
        job: Job,
        source: BinaryIO,
        *,
        name: str,
        output: BinaryIO | None = None,
        suffix: str = ".parquet",
        rows: int = 5,
        options: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Run ``job`` on the open file ``source`` in a limited child; the reply's data. Blocking.

        ``name`` is how messages call the file (a file or dataset name, never a host path); ``output``
        is where ``load`` writes the Parquet file; ``options`` how ``load`` reads it (``encoding``,
        ``sep``, ``sheet``: ``_parse_side.load``). Raises NiniError: TOO_LARGE, TIMEOUT,
        INVALID_ARGUMENT (the file cannot be read), INTERNAL (the child could not run).
        """
        execution = self.settings.execution
        language = self.settings.ui.current_language
        words = WORDS.get(language, WORDS["zh"])
        shown = f"'{name}'"
        request = json.dumps(
            {
                "job": job,
                "name": name,
                "suffix": suffix,
                "rows": rows,
                "options": {**(options or {}), "language": language},
            }
        ).encode()
        child = self._take()
        try:
            with tempfile.TemporaryFile(dir=child.runtime_dir) as reply:
                fds = [source.fileno(), reply.fileno(), *([output.fileno()] if output is not None else [])]
                try:
                    socket.send_fds(child.channel, [request], fds)
                except OSError:  # the waiting child is gone (killed meanwhile): a fresh one
                    child.discard()
                    child = self._start()
                    socket.send_fds(child.channel, [request], fds)
                status = _finished(child, execution.timeout_s)
                if status is None:
                    raise NiniError(
                        ErrorCode.TIMEOUT,
                        words["time"].format(name=shown, seconds=execution.timeout_s),
                        {"timeout_s": execution.timeout_s},
                    )
                reply.seek(0)
                raw = reply.read(REPLY_LIMIT + 1)
            if len(raw) > REPLY_LIMIT:
                raise NiniError(ErrorCode.TOO_LARGE, words["reply"].format(name=shown, mb=REPLY_LIMIT >> 20))
            answer = _answer(raw, status, child.errors)
        finally:  # off the caller's path: ending this child, starting the next
            try:
                self._spawner.submit(self._replace, child)
            except RuntimeError:  # closed meanwhile
                child.discard()
        if answer.get("ok") is True and isinstance(answer.get("data"), dict):
            data: dict[str, Any] = answer["data"]
            return data
        error = found if isinstance(found := answer.get("error"), dict) else {}
        if error.get("code") == ErrorCode.TOO_LARGE.value:
            raise NiniError(
                ErrorCode.TOO_LARGE,
                words["memory"].format(name=shown, mb=execution.memory_limit_mb),
                {"memory_limit_mb": execution.memory_limit_mb},
            )
        if error.get("code") in (ErrorCode.INVALID_ARGUMENT.value, ErrorCode.NO_SPACE.value) and isinstance(
            error.get("message"), str
        ):
            raise NiniError(error["code"], error["message"][:2000])
        raise NiniError(ErrorCode.INTERNAL, f"reading {shown} failed: its reader process ended without an answer")

    def close(self) -> None:
        """Stop the waiting child and the spawner thread (the Runtime is closing: no read follows)."""
        with self._lock:
            self._closed = True
            spare, self._spare = self._spare, None
        if spare is not None:
            spare.discard()
        self._spawner.shutdown(wait=True)

    def _take(self) -> _Child:
        """The waiting child, else the one being started for the next job (the spawner thread runs
        one start at a time: this waits for it rather than queueing a second), else a new one."""
        return self._spawner.submit(self._spare_or_new).result()

    def _spare_or_new(self) -> _Child:
        with self._lock:
            spare, self._spare = self._spare, None
        if spare is not None and spare.process.poll() is None:
            return spare
        if spare is not None:
            spare.discard()
        return self._spawn()

    def _start(self) -> _Child:
        """A new child, started by the spawner thread."""
        return self._spawner.submit(self._spawn).result()

    def _replace(self, used: _Child) -> None:
        """End the child that answered, and start the one the next job will use, unless one waits
        already or ``keep_spare`` is off."""
        used.discard()
        with self._lock:
            if self._spare is not None or self._closed or not self.keep_spare:
                return
        try:
            child: _Child | None = self._spawn()  # on the spawner thread already
        except (OSError, NiniError):  # said by the next job, which starts its own
            return
        with self._lock:
            if self._spare is None and not self._closed:
                self._spare, child = child, None
        if child is not None:
            child.discard()

    def _spawn(self) -> _Child:
        """A new child, confined and sandboxed like an agent process, importing its readers (run by
        the spawner thread only)."""
        from nini.execution.kernels import agent_env, sandbox_limits

        limits = sandbox_limits(self.settings.execution)
        runtime_dir = make_runtime_dir(PARSE_PREFIX, sandbox.runtime_base())
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        errors = tempfile.TemporaryFile(dir=runtime_dir)
        try:
            work = runtime_dir / "work"  # the child's workspace and cwd: empty, and nini's (read-only to it)
            work.mkdir(mode=0o755)
            cmd = [sys.executable, "-m", "nini.execution._parse_side", "--channel", str(theirs.fileno())]
            uid = READER_UID if sandbox.runs_as_session_uid(self.mode) else None
            cmd = sandbox.agent_command(cmd, self.mode, limits, workspace=work, runtime_dir=runtime_dir, uid=uid)
            process = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=errors,
                stderr=errors,
                cwd=work,
                pass_fds=[theirs.fileno()],
                env=agent_env(runtime_dir, limits.max_processes),
                start_new_session=True,
            )
        except BaseException:
            ours.close()
            errors.close()
            shutil.rmtree(runtime_dir, ignore_errors=True)
            raise
        finally:
            theirs.close()
        return _Child(process, ours, runtime_dir, errors)


def _finished(child: _Child, timeout_s: float) -> int | None:
    """Wait for ``child`` to answer: 0 once it says its reply is written (it exits then; nini need
    not wait for that), its exit status when it ended without saying so, None past ``timeout_s``."""
    child.channel.settimeout(timeout_s)
    try:
        if child.channel.recv(16) == b"done":
            return 0
    except TimeoutError:
        return None
    try:  # the channel closed: the child is gone, or going
        return child.process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return None


def _answer(raw: bytes, status: int, errors: BinaryIO) -> dict[str, Any]:
    """The child's reply, or what stands for it: a child killed by the system (SIGKILL; bubblewrap
    exits 128 + 9 for it) without a reply ran out of memory (a cgroup's limit kills rather than
    failing an allocation)."""
    try:
        answer = json.loads(raw) if raw else None
    except ValueError:
        answer = None
    if isinstance(answer, dict):
        return answer
    if status in (-signal.SIGKILL, 128 + signal.SIGKILL):
        return {"ok": False, "error": error_dict(ErrorCode.TOO_LARGE, "killed: out of memory")}
    errors.seek(0, os.SEEK_END)
    errors.seek(max(0, errors.tell() - 2000))
    log.warning(
        "a data file reader ended with status %s and no reply: %s", status, errors.read().decode("utf-8", "replace")
    )
    return {}
