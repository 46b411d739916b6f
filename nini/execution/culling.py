"""Idle agent processes shut down, and a cap on how many live: what keeps a long-running server bounded.

A pool (``KernelPool``, ``r_sandbox``'s ``RWorkerPool``, built by ``r_workers``) keeps one process per session, and a
server lives for days: without this every session ever used would hold its kernel (bwrap, confine,
ipykernel: 50-150 MiB) until the server stops. The pool's ``Culler``, as jupyter_server's
``cull_idle_timeout`` does for notebook kernels,

- shuts down every process idle for ``execution.cull_idle_seconds`` (idle: no run in progress, and
  none started or ended for that long), looking every ``execution.cull_interval_seconds``;
- before a new process starts, shuts down the least recently used idle ones until the new one fits
  under the cap (``execution.max_live_kernels``, ``r.max_live_workers``). When every live one is
  busy the new one starts anyway and the cap is restored as they go idle: waiting would hold a
  step behind another session's computation for as long as that takes, and refusing would fail it,
  while a busy process is doing what it is for (and its own memory limit bounds it);
- remembers why a session's process went, so that the session's next step says its variables are
  gone (``notice``) instead of failing on a NameError the model cannot explain.

Only processes go: the workspace's files and datasets stay. Processes a pool only borrowed (a
notebook's kernel) are never the pool's to cull: the pool does not offer them.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import ctypes.util
import functools
import logging
import time
from collections.abc import Mapping
from typing import Any, Literal, Protocol

from nini.language import words_language

__all__ = ["Cullable", "Culler", "Held", "Reason"]

log = logging.getLogger("nini.execution.culling")
Reason = Literal["idle", "cap"]
Kind = Literal["python", "r"]

# What the session's next step is told, by language, process kind and reason. The model reads it
# in the tool result: it should load the session's datasets again rather than use lost variables.
_WHAT = {
    "en": {"python": "the session's Python kernel", "r": "the session's R worker"},
    "zh": {"python": "本会话的 Python 内核", "r": "本会话的 R 进程"},
}
_WHY = {
    "en": {
        "idle": " had been idle for more than {idle:g} s (execution.cull_idle_seconds) and was shut "
        "down to free memory",
        "cap": " was shut down to make room for another session's (at most {cap} run at once on "
        "this server, {setting})",
    },
    "zh": {
        "idle": "空闲超过 {idle:g} 秒（execution.cull_idle_seconds），已被关闭以释放内存",
        "cap": "为给其他会话腾出位置已被关闭（本服务器最多同时运行 {cap} 个，{setting}）",
    },
}
_THEN = {
    "en": "; a new one started for this step, so variables and imports of earlier steps are gone (the workspace's "
    "files and datasets are kept: load datasets again by name)\n",
    "zh": "；已为这一步启动新的进程，之前步骤的变量和导入已丢失"
    "（工作区的文件和数据集都在：按名称重新加载数据集即可）\n",
}
_CAP_SETTING = {"python": "execution.max_live_kernels", "r": "r.max_live_workers"}
_CULLED_KEPT = 10_000  # notices kept for sessions not used since their process went


class Held(Protocol):
    """One live process of a pool (a kernel's handle, an R worker)."""

    last_used: float  # ``time.monotonic`` when a run in it last started or ended


class Cullable(Protocol):
    """What a pool offers its culler: its own live processes, the lock a session's step holds, and a
    way to stop one. Which process is idle, and stopping it only while it still is, is decided here
    once for both pools (``Culler.idle_sessions``, ``Culler.cull``)."""

    def owned(self) -> Mapping[str, Held]:
        """The pool's own live processes by session (busy ones included; none it only borrowed)."""
        ...

    def session_lock(self, session_id: str) -> asyncio.Lock:
        """The lock a step of the session holds while it runs: held, the session is busy."""
        ...

    async def discard(self, session_id: str) -> None:
        """Stop the session's live process, freeing all it holds, and forget it; called with the
        session's lock held."""
        ...


class Culler:
    """Culls one pool's idle processes (``sweep``, periodically once ``watch`` ran) and keeps it
    under its cap (``make_room``)."""

    def __init__(self, pool: Cullable, *, idle_s: float, interval_s: float, cap: int, kind: Kind) -> None:
        self.pool, self.idle_s, self.interval_s, self.cap, self.kind = pool, idle_s, interval_s, cap, kind
        self._culled: dict[str, Reason] = {}  # session -> why its process went, until its next step says so
        self._task: asyncio.Task[None] | None = None
        self._closed = False

    @property
    def period_s(self) -> float:
        """Seconds between two sweeps: the interval, or the idle timeout when that is shorter."""
        return min(self.interval_s, self.idle_s) if self.idle_s > 0 else self.interval_s

    def watch(self) -> None:
        """Sweep periodically on the running loop from now on (once; nothing when neither culling nor
        the cap is on). Called as a process starts: a pool that never starts one costs no task."""
        loop = asyncio.get_running_loop()
        if self._task is not None and self._task.get_loop() is not loop:  # a pool used from another loop now
            _cancel(self._task)
            self._task = None
        if self._task is None and not self._closed and (self.idle_s > 0 or self.cap > 0):
            self._task = loop.create_task(self._sweep_forever(), name=f"nini-cull-{self.kind}")

    async def sweep(self) -> list[str]:
        """One pass: every process idle for ``idle_s`` goes, then least recently used idle ones while
        more than the cap live; the sessions whose process went."""
        gone = []
        if self.idle_s > 0:
            now = time.monotonic()
            for session_id, last_used in self.idle_sessions().items():
                if now - last_used >= self.idle_s and await self._cull(session_id, last_used, "idle"):
                    gone.append(session_id)
        if self.cap > 0:
            gone += await self._trim(self.cap)
        if gone:
            await asyncio.to_thread(release_heap)
        return gone

    async def make_room(self, session_id: str) -> None:
        """Before a new process of ``session_id`` starts: idle ones go, least recently used first,
        until it fits under the cap; when all live ones are busy it starts anyway (logged)."""
        self.watch()
        if self.cap <= 0:
            return
        await self._trim(self.cap - 1, keep=session_id)
        if self.live_count() >= self.cap:
            log.warning(
                "%d %s processes are live and busy (cap %d, %s): starting one more for session %s; the cap "
                "is restored as they go idle",
                self.live_count(),
                self.kind,
                self.cap,
                _CAP_SETTING[self.kind],
                session_id,
            )

    def idle_sessions(self) -> dict[str, float]:
        """Sessions whose own process is live and runs nothing -> when it was last used (``time.monotonic``)."""
        return {
            session_id: process.last_used
            for session_id, process in self.pool.owned().items()
            if not self.pool.session_lock(session_id).locked()
        }

    def live_count(self) -> int:
        """How many of the pool's own processes are live (busy ones included)."""
        return len(self.pool.owned())

    async def cull(self, session_id: str, last_used: float) -> bool:
        """Stop the session's process, freeing all it holds, if it is still idle and unused since
        ``last_used``; whether it went. Never waits: a session whose lock is held is busy."""
        lock = self.pool.session_lock(session_id)
        if lock.locked():
            return False
        async with lock:  # free, so taken at once: no step of the session can start meanwhile
            process = self.pool.owned().get(session_id)
            if process is None or process.last_used != last_used:
                return False
            await self.pool.discard(session_id)
        return True

    def take_notice(self, session_id: str, language: str | None) -> str:
        """What the session's step says when its process had been culled since its last step ("" if
        not), in ``language`` (``ui.language``); said once."""
        reason = self._culled.pop(session_id, None)
        if reason is None:
            return ""
        words = words_language(language)
        why = _WHY[words][reason].format(idle=self.idle_s, cap=self.cap, setting=_CAP_SETTING[self.kind])
        return f"nini: {_WHAT[words][self.kind]}{why}{_THEN[words]}"

    def culled(self, session_id: str) -> Reason | None:
        """Why the session's process was culled, if it was since its last step (the notice is not taken)."""
        return self._culled.get(session_id)

    def forget(self, session_id: str) -> None:
        """The session is gone (deleted), or its process was stopped for another reason: nothing to say."""
        self._culled.pop(session_id, None)

    async def aclose(self) -> None:
        """Stop sweeping (the pool is closing); safe to call twice."""
        self._closed = True
        task, self._task = self._task, None
        if task is not None and task.get_loop() is asyncio.get_running_loop():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        elif task is not None:
            _cancel(task)

    async def _trim(self, limit: int, keep: str | None = None) -> list[str]:
        gone = []
        for session_id, last_used in sorted(self.idle_sessions().items(), key=lambda item: item[1]):
            if self.live_count() <= limit:
                break
            if session_id != keep and await self._cull(session_id, last_used, "cap"):
                gone.append(session_id)
        return gone

    async def _cull(self, session_id: str, last_used: float, reason: Reason) -> bool:
        if not await self.cull(session_id, last_used):
            return False
        self._culled[session_id] = reason
        if len(self._culled) > _CULLED_KEPT:  # sessions never used again: their oldest notices go
            del self._culled[next(iter(self._culled))]
        log.info("shut down the %s process of session %s (%s)", self.kind, session_id, reason)
        return True

    async def _sweep_forever(self) -> None:
        while True:
            await asyncio.sleep(self.period_s)
            try:
                await self.sweep()
            except Exception:  # a failed pass must not end culling for the server's life
                log.exception("culling idle %s processes failed", self.kind)


def _cancel(task: asyncio.Task[None]) -> None:
    """Cancel a sweep running on another loop (thread-safe); nothing when that loop is closed."""
    loop = task.get_loop()
    if not loop.is_closed():
        loop.call_soon_threadsafe(task.cancel)


def release_heap() -> None:
    """Give the memory nini's process freed back to the system (glibc's ``malloc_trim``): a culled
    kernel's messages, outputs and sockets were freed, but glibc keeps freed memory in its arenas
    (one per thread that allocated), so without this the server's resident set stays at its peak
    after a load. Nothing where the C library is not glibc."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@functools.cache
def _malloc_trim() -> Any:
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
    except (OSError, AttributeError):  # not glibc (musl, macOS)
        return None
