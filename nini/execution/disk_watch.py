"""The workspace budget (bytes and files) while agent code runs: a cheap watch, a bounded count, a stop.

A size-limited file system per session is not something this machine offers cheaply or portably
(no project quotas; a loop mount per session needs root and outlives a crash), so the budget is
accounting on the host, at write time:

- No single file can claim more than the whole budget: ``confine`` sets RLIMIT_FSIZE to
  ``execution.workspace_quota_mb``, so ``truncate`` to a huge size or a write far past the end fails
  (EFBIG); seccomp answers ``fallocate`` with EOPNOTSUPP (``guard``), so ``posix_fallocate`` falls
  back to writing block by block, which is watched like any other write.
- During a run, ``RunWatch`` samples ``os.statvfs`` of the workspace's file system (free blocks and
  free inodes: a few microseconds) every ``POLL_S``, sooner as the drop nears what the workspace has
  left. Only when the file system as a whole lost more than that since the last count, or every
  ``WALK_EVERY_S`` or so (for what free space cannot show: holes, file systems that keep no inode
  count, other writers freeing space at the same moment) is the workspace counted (``measure``: it
  stops at twice the budget and never follows a link). Over budget, the run is stopped through its driver
  (``outcome.RunStop``): the kernel is interrupted, and restarted if it does not stop; the R worker is
  replaced. What the code wrote between two samples stays (about 0.1-0.3 s of writing) until files
  are removed.
- Between runs, while the session's kernel or R worker lives, ``DiskWatch`` samples free space
  every ``GUARD_POLL_S``: a workspace that passes its budget then, or grows past it, means a thread
  or a child the code left behind is writing, and the session's kernel and R worker are stopped.
- Before a run, ``DiskWatch.check`` refuses a workspace already at its budget (TOO_LARGE); it counts
  again only when the last count is old or the file system lost more than the workspace had left.

What counts: every entry beneath the root is one file (a flood of folders or links costs inodes
too); an entry's bytes are the larger of its apparent size and its allocated blocks, so a sparse
file counts for the size it claims (what a reader, a copy or an export of it pays) and a
preallocated one for the blocks it holds.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nini.errors import ErrorCode, NiniError, error_dict
from nini.rooted import RootedDir

__all__ = ["Budget", "DiskWatch", "RunWatch", "Usage", "measure"]

POLL_S = 0.1  # free space is sampled at least this often during a run
MIN_POLL_S = 0.01  # and at most this often, when a fast writer nears the budget
WALK_EVERY_S = 1.0  # a run is counted at least this often (never before this much of it has passed)
WALK_SHARE = 0.05  # periodic counts use at most this share of a core (a slow count spaces them out)
TRIGGER_GAP = 5  # counts caused by free space come at most every TRIGGER_GAP x the last count's duration
CHECK_AGE_S = 2.0  # before a run, a count older than this is redone (or WALK_SHARE's spacing, if longer)
COUNT_CAP = 2  # a count stops past this many times the budget: enough to see a workspace over it grow
GUARD_POLL_S = 0.5  # free space is sampled this often between runs, while an agent process lives
GUARD_GAP = 20  # between runs, counts come at most every GUARD_GAP x the last count's duration
MAX_GAP_S = 5.0  # and never less often than this, whatever a count cost
log = logging.getLogger("nini.execution.disk_watch")

# What the budget's messages say, by ``ui.language``.
WORDS = {
    "zh": {
        "bytes": "会话工作区占用 {used:,.0f} MiB，配额为 {limit:,.0f} MiB（execution.workspace_quota_mb）",
        "bytes_over": "会话工作区占用至少 {used:,.0f} MiB，配额为 {limit:,.0f} MiB（execution.workspace_quota_mb）",
        "files": "会话工作区有 {used:,} 个文件，上限为 {limit:,} 个（execution.workspace_max_files）",
        "files_over": "会话工作区至少有 {used:,} 个文件，上限为 {limit:,} 个（execution.workspace_max_files）",
        "unreadable": "会话工作区中的文件夹 '{path}' 无法被 nini 读取，其中的文件无法计数",
        "refused": "{what}：删除其中的文件或提高上限后才能再运行代码",
        "stopped": "本次运行超出了会话工作区的限额，代码已被停止（{what}）；{fate}；"
        "删除工作区中的文件或提高上限后才能再运行代码",
        "guarded": "（运行结束后工作区仍在增长，会话的内核和 R 进程已被停止：变量已丢失）",
        "kernel_interrupted": "内核已中断，变量保留",
        "kernel_restarted": "内核没有停止，已被重启：变量和导入已丢失，工作区中保存的数据集和产物保留",
        "worker_restarted": "R 进程已重启：R 会话的状态（变量、已加载的包）已丢失，工作区中保存的数据集和产物保留",
    },
    "en": {
        "bytes": "the session workspace holds {used:,.0f} MiB, its quota is {limit:,.0f} MiB "
        "(execution.workspace_quota_mb)",
        "bytes_over": "the session workspace holds at least {used:,.0f} MiB, its quota is "
        "{limit:,.0f} MiB (execution.workspace_quota_mb)",
        "files": "the session workspace holds {used:,} files, its limit is {limit:,} (execution.workspace_max_files)",
        "files_over": "the session workspace holds at least {used:,} files, its limit is {limit:,} "
        "(execution.workspace_max_files)",
        "unreadable": "a folder of the session workspace ('{path}') cannot be read by nini, so its files "
        "cannot be counted",
        "refused": "{what}: delete files from it, or raise the limit, to run code again",
        "stopped": "this run went over the session workspace's budget and was stopped ({what}); {fate}; delete files "
        "from the workspace, or raise the limit, to run code again",
        "guarded": " (the workspace went on growing after a run ended, so the session's kernel and R worker were "
        "stopped: their variables are lost)",
        "kernel_interrupted": "the kernel was interrupted and keeps its variables",
        "kernel_restarted": "the kernel did not stop and was restarted: variables and imports were lost, datasets and "
        "artifacts saved in the workspace are kept",
        "worker_restarted": "the R worker was restarted: the R session state (variables, loaded packages) was lost, "
        "datasets and artifacts saved in the workspace are kept",
    },
}


@dataclass(frozen=True)
class Budget:
    """What one workspace may hold: bytes (``execution.workspace_quota_mb``) and files
    (``execution.workspace_max_files``)."""

    bytes: int
    files: int

    @classmethod
    def of(cls, execution: Any) -> Budget:
        """The budget of the ``execution`` settings (``nini.config.ExecutionSettings``)."""
        return cls(execution.workspace_quota_mb * 1024 * 1024, execution.workspace_max_files)

    def times(self, factor: int) -> Budget:
        return Budget(self.bytes * factor, self.files * factor)


@dataclass(frozen=True)
class Usage:
    """What a workspace holds. ``complete`` is False when the count stopped as soon as it passed the
    count's cap (the workspace holds at least this much); ``unreadable`` names a folder nini could not
    open, whose files went uncounted (such a workspace counts as over its budget)."""

    bytes: int
    files: int
    complete: bool = True
    unreadable: str | None = None

    def over(self, budget: Budget) -> bool:
        return self.bytes > budget.bytes or self.files > budget.files or self.unreadable is not None

    def full(self, budget: Budget) -> bool:
        """At the budget or over it: no further run may start."""
        return self.bytes >= budget.bytes or self.files >= budget.files or self.unreadable is not None

    def describe(self, budget: Budget, language: str) -> str:
        """Which limit this usage reaches, worded for ``language`` (the bytes first)."""
        words = WORDS.get(language, WORDS["zh"])
        if self.unreadable is not None:
            return words["unreadable"].format(path=self.unreadable)
        over = "" if self.complete else "_over"  # the count stopped at its cap: how far past is unknown
        if self.bytes >= budget.bytes or self.files < budget.files:
            return words["bytes" + over].format(used=self.bytes / 1024**2, limit=budget.bytes / 1024**2)
        return words["files" + over].format(used=self.files, limit=budget.files)

    def grew_from(self, earlier: Usage) -> bool:
        """Whether the workspace holds more than at ``earlier`` (or more than a count can say)."""
        return not self.complete or self.files > earlier.files or self.bytes > earlier.bytes

    def details(self, budget: Budget) -> dict[str, Any]:
        return {
            "used_bytes": self.bytes,
            "quota_bytes": budget.bytes,
            "used_files": self.files,
            "max_files": budget.files,
        }


def measure(root: Path, cap: Budget | None = None) -> Usage:
    """What ``root`` holds (``RootedDir.usage``: every entry, no link followed), counted up to ``cap``
    when one is given (``Usage.complete`` False past it)."""
    total, files, complete, unreadable = RootedDir(root).usage(
        max_files=cap.files if cap else None, max_bytes=cap.bytes if cap else None
    )
    return Usage(total, files, complete=complete, unreadable=unreadable)


def _timed_measure(root: Path, cap: Budget) -> tuple[Usage, float]:
    """``measure`` and the processor time it took: what spaces counts out (on a loaded machine the
    wall-clock time of a count grows with the wait for a processor, not with its cost)."""
    started = time.thread_time()
    usage = measure(root, cap)
    return usage, time.thread_time() - started


@dataclass(frozen=True)
class _Free:
    """Free bytes and free inodes of a file system at one moment (``inodes`` None: not counted there)."""

    bytes: int
    inodes: int | None
    at: float

    @classmethod
    def of(cls, root: Path) -> _Free:
        found = os.statvfs(root)
        return cls(found.f_bfree * found.f_frsize, found.f_ffree if found.f_files else None, time.monotonic())

    def drop_since(self, earlier: _Free) -> tuple[int, int]:
        """Bytes and inodes the file system lost since ``earlier`` (negative: it gained)."""
        inodes = earlier.inodes - self.inodes if earlier.inodes is not None and self.inodes is not None else 0
        return earlier.bytes - self.bytes, inodes


@dataclass(frozen=True)
class _Count:
    """A count of the workspace, and the file system's free space just before it was made."""

    usage: Usage
    free: _Free
    seconds: float  # the processor time the count took
    done: float  # when it ended (monotonic)

    def spacing(self) -> float:
        """How long until a periodic count is due again: ``WALK_EVERY_S``, or longer when counting this
        workspace costs more than ``WALK_SHARE`` of a processor at that pace."""
        return max(WALK_EVERY_S, self.seconds / WALK_SHARE)

    def left(self, budget: Budget) -> tuple[int, int]:
        return budget.bytes - self.usage.bytes, budget.files - self.usage.files

    def may_be_over(self, budget: Budget, now: _Free) -> bool:
        """Whether the file system lost more since this count than the workspace had left then."""
        left_bytes, left_files = self.left(budget)
        drop_bytes, drop_inodes = now.drop_since(self.free)
        return drop_bytes > left_bytes or drop_inodes > left_files


class DiskWatch:
    """One workspace's budget across its runs (``Runtime.disk_watch`` keeps one per workspace): the
    last count, so that a check or a run's watch starts from it instead of counting again, and the
    guard between runs.

    ``agents_alive()`` says whether an agent process of the workspace (a kernel, an R worker) still
    runs; ``stop_agents()`` ends them. Between runs such a process may still write (a thread or a
    child the code left behind): when the workspace then passes its budget, or grows past it, the
    guard ends them, and the next run's check says why.
    """

    def __init__(
        self,
        root: Path,
        *,
        agents_alive: Callable[[], bool] = lambda: False,
        stop_agents: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.root = Path(root)
        self.agents_alive = agents_alive
        self.stop_agents = stop_agents
        self._last: _Count | None = None
        self._runs = 0  # runs under way (each has its RunWatch)
        self._guard: asyncio.Task[None] | None = None
        self._stopped: Usage | None = None  # the usage for which the guard ended the agent processes

    async def count(self, budget: Budget) -> _Count:
        """Count the workspace now (in a thread: a large one takes a while), up to ``COUNT_CAP``
        times its budget, and remember it."""
        free = _Free.of(self.root)
        usage, seconds = await asyncio.to_thread(_timed_measure, self.root, budget.times(COUNT_CAP))
        self._last = _Count(usage, free, seconds, time.monotonic())
        return self._last

    async def usage(self, budget: Budget) -> _Count:
        """The last count while it still holds (recent, under the budget, and the file system has not
        lost more than the workspace had left since), else a new one."""
        last = self._last
        if (
            last is None
            or last.usage.full(budget)
            or time.monotonic() - last.done > max(CHECK_AGE_S, last.spacing())
            or last.may_be_over(budget, _Free.of(self.root))
        ):
            last = await self.count(budget)
        return last

    async def check(self, budget: Budget, language: str) -> None:
        """TOO_LARGE when the workspace is at its budget: no code runs until files are removed."""
        usage = (await self.usage(budget)).usage
        if usage.full(budget):
            words = WORDS.get(language, WORDS["zh"])
            message = words["refused"].format(what=usage.describe(budget, language))
            if self._stopped is not None:
                message += words["guarded"]
            raise NiniError(ErrorCode.TOO_LARGE, message, usage.details(budget))
        self._stopped = None

    def run(self, budget: Budget, language: str) -> RunWatch:
        """The watch of one run (``async with``), which is also the run's ``outcome.RunStop``."""
        return RunWatch(self, budget, language)

    def guard(self, budget: Budget) -> None:
        """Watch the workspace between runs while an agent process of it lives (started after each
        run; one guard per workspace)."""
        if self.stop_agents is not None and (self._guard is None or self._guard.done()):
            self._guard = asyncio.create_task(self._between_runs(budget))

    async def aclose(self) -> None:
        """End the guard (the runtime closes)."""
        if self._guard is not None:
            self._guard.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._guard

    async def _between_runs(self, budget: Budget) -> None:
        gap_until = 0.0
        while self.agents_alive():
            await asyncio.sleep(GUARD_POLL_S)
            last = self._last
            if self._runs or last is None:  # a run's own watch is on
                continue
            now = _Free.of(self.root)
            if now.at < gap_until or not last.may_be_over(budget, now):
                continue
            counted = await self.count(budget)
            gap_until = time.monotonic() + min(MAX_GAP_S, GUARD_GAP * counted.seconds)
            if self._runs == 0 and counted.usage.over(budget) and counted.usage.grew_from(last.usage):
                log.warning(
                    "a session workspace went over its budget between runs (%s): its agent processes are stopped",
                    counted.usage.describe(budget, "en"),
                )
                self._stopped = counted.usage
                assert self.stop_agents is not None
                await self.stop_agents()
                return


class RunWatch:
    """Watches the workspace while one run goes on; set (``is_set``) once the run went over its
    budget. Its driver then stops the run and ends it with ``error(fate)``."""

    def __init__(self, watch: DiskWatch, budget: Budget, language: str) -> None:
        self.watch = watch
        self.budget = budget
        self.language = language
        self.usage: Usage | None = None  # what the workspace held when the run was stopped
        self._over = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> RunWatch:
        self.watch._runs += 1
        try:
            self._task = asyncio.create_task(self._watch(await self.watch.usage(self.budget)))
        except BaseException:
            self.watch._runs -= 1
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        try:
            if self._task is not None:
                self._task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await self._task
            # what the run left is the guard's reference: count it when it may be near the budget
            last = self.watch._last
            if last is not None and exc[0] is None and last.may_be_over(self.budget, _Free.of(self.watch.root)):
                await self.watch.count(self.budget)
        finally:
            self.watch._runs -= 1
        self.watch.guard(self.budget)

    # --- outcome.RunStop -------------------------------------------------------------------------
    def is_set(self) -> bool:
        return self._over.is_set()

    async def wait(self) -> None:
        await self._over.wait()

    def error(self, fate: str) -> dict[str, Any]:
        """The run's error once it was stopped: TOO_LARGE, the limit it passed and what became of
        its kernel or worker (``fate``: kernel_interrupted, kernel_restarted, worker_restarted)."""
        words = WORDS.get(self.language, WORDS["zh"])
        usage = self.usage or Usage(0, 0)
        what = usage.describe(self.budget, self.language)
        return error_dict(ErrorCode.TOO_LARGE, words["stopped"].format(what=what, fate=words[fate]))

    # --- the watch -------------------------------------------------------------------------------
    async def _watch(self, last: _Count) -> None:
        started = time.monotonic()
        next_walk = started + last.spacing()
        gap_until = started  # counts caused by free space wait until then
        seen = _Free.of(self.watch.root)
        interval = POLL_S
        while True:
            await asyncio.sleep(interval)
            now = _Free.of(self.watch.root)
            if (now.at >= gap_until and last.may_be_over(self.budget, now)) or now.at >= next_walk:
                before = last.usage
                last = await self.watch.count(self.budget)
                if last.usage.over(self.budget):
                    self.usage = last.usage
                    self._over.set()
                    return
                done = time.monotonic()
                # the run itself is writing: count again as soon as free space says so; else (others
                # write on this file system) leave room between counts
                gap = last.seconds if last.usage.grew_from(before) else TRIGGER_GAP * last.seconds
                gap_until = done + min(MAX_GAP_S, gap)
                next_walk = done + last.spacing()
                seen, interval = now, POLL_S
                continue
            interval = _next_interval(last, self.budget, seen, now)
            seen = now


def _next_interval(last: _Count, budget: Budget, seen: _Free, now: _Free) -> float:
    """How long until the next sample: ``POLL_S``, or less when, at the rate the file system has been
    losing space since the previous sample, the drop would pass what is left before then."""
    elapsed = now.at - seen.at
    if elapsed <= 0:
        return POLL_S
    left_bytes, left_files = last.left(budget)
    drop_bytes, drop_inodes = now.drop_since(last.free)
    rate_bytes, rate_inodes = (d / elapsed for d in now.drop_since(seen))
    interval = POLL_S
    for rate, room in ((rate_bytes, left_bytes - drop_bytes), (rate_inodes, left_files - drop_inodes)):
        if rate > 0:
            interval = min(interval, room / rate / 2)
    return max(MIN_POLL_S, interval)
