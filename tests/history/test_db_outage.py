"""The record survives its database failing (issue 36): every path says DB_ERROR (or NO_SPACE)
naming the database, and calls that end while it cannot take their end still end (failed, with
their ``tool_result``) once it is back, without a restart. Real backends throughout: a private
PostgreSQL stopped with ``-m immediate`` and started again, a tmpfs filled to the last byte, an
SQLite file another connection keeps locked, a trigger refusing an event."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from nini.config import load_settings
from nini.errors import ErrorCode, NiniError
from nini.history.store import HistoryStore
from nini.history.values import iso
from nini.runtime import Runtime
from nini.skills.function import skill
from nini.skills.invoke import invoke
from nini.skills.output import ToolOutput
from nini.skills.registry import SkillRegistry
from tests import pg_cluster
from tests.history.outage import GENEROUS_S, PASSWORD, cluster, record_of, wait_for, whole, with_password  # noqa: F401

UNAVAILABLE = ("DB_ERROR", "NO_SPACE")
RELEASE = threading.Event()


@skill("waits_for_the_test", category="utility")
def waits_for_the_test(n: int, size: int = 0) -> ToolOutput:
    """Run until the test lets the call end; a result of ``size`` characters.

    Args:
        n: The call's number.
        size: Characters of text in the result.
    """
    RELEASE.wait(GENEROUS_S)
    return ToolOutput(result={"n": n, "text": "x" * size})


# helpers


def raised(fn: Callable[[], Any]) -> NiniError:
    with pytest.raises(NiniError) as caught:
        fn()
    return caught.value


def assert_names_the_server(error: NiniError, cluster: pg_cluster.Cluster) -> None:
    assert error.code is ErrorCode.DB_ERROR, error
    assert f"127.0.0.1:{cluster.port}/" in error.message and "database server is running" in error.message
    assert PASSWORD not in error.message and str(cluster.root) not in error.message


@pytest.fixture
def small_disk() -> Iterator[Path]:
    """A 64 MB tmpfs (we run as root in CI); skipped where mounting is not allowed. Mounted in the
    temp dir, where PostgreSQL's own user can reach it too (pytest's folders are the owner's only)."""
    mount = Path(tempfile.mkdtemp(prefix="nini-small-disk-"))
    mount.chmod(0o755)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64m,mode=1777", "tmpfs", str(mount)], capture_output=True, text=True
    )
    if done.returncode != 0:
        mount.rmdir()
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip() or done.returncode}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)
        mount.rmdir()


def fill(folder: Path) -> Path:
    """Fill the filesystem of ``folder`` to its last byte; the file to remove to free it."""
    filler = folder / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for size in (1 << 20, 4096, 1):  # down to the last byte
            try:
                while os.write(fd, b"\0" * size):
                    pass
            except OSError:
                pass
    finally:
        os.close(fd)
    return filler


def runtime_on(url: str | None, project_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Runtime:
    if url is not None:
        monkeypatch.setenv("NINI_DATABASE_URL", url)
    settings = load_settings()
    registry = SkillRegistry(settings, project_dir, function_skills=[waits_for_the_test])
    return Runtime(settings, project_dir=project_dir, registry=registry)


async def calls_ending_while(
    runtime: Runtime,
    session_id: str,
    n: int,
    size: int,
    broken: Callable[[], Any],
) -> list[Any]:
    """Start ``n`` calls, make the database fail (``broken``) while they run, let them end; what
    each caller got (a result or an exception)."""
    RELEASE.clear()
    session = runtime.session(session_id)
    tasks = [asyncio.create_task(invoke(session, "waits_for_the_test", {"n": i, "size": size})) for i in range(n)]

    def all_running() -> bool:
        return sum(c["status"] == "running" for c in runtime.store.list_tool_calls(session_id)) == n

    await asyncio.to_thread(wait_for, all_running, "the calls started")
    await asyncio.to_thread(broken)
    RELEASE.set()
    return await asyncio.gather(*tasks, return_exceptions=True)


def ends_after_a_full_disk(runtime: Runtime, url: str, disk: Path, size: int) -> list[NiniError]:
    """Three calls with a ``size``-character result end while ``disk`` (the database's) is full:
    each caller is told NO_SPACE or DB_ERROR without a host path, and once space is freed the
    record is whole, each call failed with that code. What the callers got."""
    filler: list[Path] = []
    session_id = runtime.create_session().id
    outcomes = asyncio.run(calls_ending_while(runtime, session_id, 3, size, lambda: filler.append(fill(disk))))
    for outcome in outcomes:
        assert isinstance(outcome, NiniError) and outcome.code.value in UNAVAILABLE, outcome
        assert str(disk) not in outcome.message
    filler[0].unlink()
    calls = wait_for(lambda: whole(url, session_id, 3), "the kept ends written")
    assert {c["status"] for c in calls} == {"failed"} and {c["error_code"] for c in calls} <= set(UNAVAILABLE)
    return outcomes


# PostgreSQL stopped and started again


def test_every_store_path_says_db_error_naming_the_server_while_postgresql_is_down(
    cluster: pg_cluster.Cluster,
) -> None:
    store = HistoryStore(with_password(cluster.create_database()))
    try:
        session_id = store.create_session()["id"]
        store.add_message(session_id, "user", "before")  # the write connection is kept open from here
        cluster.halt()

        for attempt in (
            lambda: store.add_message(session_id, "user", "during"),  # grouped, on the driver
            lambda: store.append_event(session_id, "tick", {}),
            lambda: store.start_tool_call(session_id, "run_code", {}),
            lambda: store.create_session(),  # a transaction of its own
            lambda: store.list_messages(session_id),
        ):  # a read
            assert_names_the_server(raised(attempt), cluster)

        cluster.resume()  # the same store goes on: broken connections are replaced at the next write
        assert store.add_message(session_id, "user", "after")["content"] == "after"
        assert store.create_session()["id"]
        assert [m["content"] for m in store.list_messages(session_id)] == ["before", "after"]
    finally:
        store.close()


@pytest.mark.slow
def test_calls_ending_while_postgresql_is_down_end_failed_with_their_tool_result_once_it_is_back(
    cluster: pg_cluster.Cluster, project_dir: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    url = with_password(cluster.create_database())
    runtime = runtime_on(url, project_dir, monkeypatch)

    async def scenario() -> tuple[list[Any], list[str]]:
        session_id = runtime.create_session().id
        seen: list[str] = []

        async def watch() -> None:  # a live subscriber (another tab): gets the ends once the database is back
            async with runtime.events.subscribe(session_id, since=0) as events:
                async for event in events:
                    seen.append(event["type"])
                    if seen.count("tool_result") == 3:
                        return

        watching = asyncio.create_task(watch())
        outcomes = await calls_ending_while(runtime, session_id, 3, 0, cluster.halt)
        await asyncio.to_thread(cluster.resume)
        await asyncio.wait_for(watching, GENEROUS_S)
        return outcomes, seen, session_id

    try:
        outcomes, seen, session_id = asyncio.run(scenario())
        for outcome in outcomes:  # each caller was told, in nini's words
            assert isinstance(outcome, NiniError), outcome
            assert_names_the_server(outcome, cluster)
        calls = wait_for(lambda: whole(url, session_id, 3), "the kept ends written")
        assert {(c["status"], c["error_code"]) for c in calls} == {("failed", "DB_ERROR")}
        assert seen.count("tool_call") == 3 and seen.count("tool_result") == 3
        # the subscriber's LISTEN connection failed meanwhile, and said so in nini's words
        watcher = [r.getMessage() for r in caplog.records if "watching for other processes" in r.getMessage()]
        assert watcher and all(f"127.0.0.1:{cluster.port}/" in m and PASSWORD not in m for m in watcher), watcher
    finally:
        asyncio.run(runtime.aclose())


@pytest.mark.slow
def test_calls_ending_while_postgresql_s_disk_is_full_end_failed_with_their_tool_result_once_space_is_freed(
    small_disk: Path, project_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if pg_cluster.unavailable():
        pytest.skip(pg_cluster.unavailable())
    cluster = pg_cluster.start(small_disk)
    url = with_password(cluster.create_database())
    runtime = runtime_on(url, project_dir, monkeypatch)
    try:
        for outcome in ends_after_a_full_disk(runtime, url, small_disk, 4_000_000):
            assert PASSWORD not in outcome.message
    finally:
        asyncio.run(runtime.aclose())
        cluster.stop()


# SQLite


@pytest.mark.sqlite_only
def test_an_end_the_locked_database_refused_is_written_in_order_when_the_lock_goes(tmp_path: Path) -> None:
    path = tmp_path / "home" / "nini.db"
    store = HistoryStore(f"sqlite:///{path}", busy_timeout_ms=100, home=tmp_path / "home")
    try:
        session_id = store.create_session()["id"]
        call = store.start_tool_call(session_id, "run_code", {}, events=[("tool_call", {})])
        holder = sqlite3.connect(path, isolation_level=None)  # another process's long write, say
        holder.execute("BEGIN IMMEDIATE")

        error = raised(
            lambda: store.finish_tool_call(
                call["id"],
                status="succeeded",
                result={"n": 1},
                events=lambda c: [("tool_result", {"success": c["status"] == "succeeded", "error": c["unrecorded"]})],
            )
        )
        assert error.code is ErrorCode.DB_ERROR and "$NINI_HOME/nini.db" in error.message
        assert str(tmp_path) not in error.message
        # a later event of the session must not come before the end it owes
        assert raised(lambda: store.append_event(session_id, "later", {})).code is ErrorCode.DB_ERROR

        released = iso(datetime.now(UTC))
        holder.rollback()
        holder.close()
        calls = wait_for(lambda: whole(f"sqlite:///{path}", session_id, 1), "the kept end written")
        assert (calls[0]["status"], calls[0]["error_code"]) == ("failed", "DB_ERROR")
        assert calls[0]["ended_at"] < released  # when it ended, not when it could be written
        store.append_event(session_id, "later", {})
        _, events = record_of(f"sqlite:///{path}", session_id)
        assert [e["type"] for e in events] == ["tool_call", "tool_result", "later"]
        assert '"DB_ERROR"' in str(events[1]["data"]) and '"success": false' in str(events[1]["data"])
    finally:
        store.close()


@pytest.mark.slow
@pytest.mark.sqlite_only
def test_calls_ending_on_a_full_disk_end_failed_with_their_tool_result_once_space_is_freed(
    small_disk: Path, project_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{small_disk / 'nini.db'}"
    runtime = runtime_on(url, project_dir, monkeypatch)
    try:
        ends_after_a_full_disk(runtime, url, small_disk, 2_000_000)
    finally:
        asyncio.run(runtime.aclose())


@pytest.mark.sqlite_only
def test_a_call_ends_with_its_tool_result_or_not_at_all(
    project_dir: Path, nini_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The end and its tool_result are one transaction: when the event cannot be stored (a
    trigger refuses it), neither is; the call is not left ended without its event."""
    runtime = runtime_on(None, project_dir, monkeypatch)
    try:
        session = runtime.create_session()
        with runtime.store.writing() as conn:
            conn.execute(
                sa.text(
                    "CREATE TRIGGER refuse_results BEFORE INSERT ON events WHEN NEW.type = 'tool_result' "
                    "BEGIN SELECT RAISE(ABORT, 'refused by the test'); END"
                )
            )
        RELEASE.set()
        with pytest.raises(NiniError):
            asyncio.run(invoke(session, "waits_for_the_test", {"n": 1}))
        [call] = runtime.store.list_tool_calls(session.id)
        assert call["status"] == "running"  # neither the end nor its event
        assert [e["type"] for e in runtime.store.list_events(session.id)] == ["tool_call"]

        with runtime.store.writing() as conn:
            conn.execute(sa.text("DROP TRIGGER refuse_results"))
        result = asyncio.run(invoke(session, "waits_for_the_test", {"n": 2}))
        ended = runtime.store.get_tool_call(result.tool_call_id)
        assert ended["status"] == "succeeded"
        assert [e["type"] for e in runtime.store.list_events(session.id)] == ["tool_call", "tool_call", "tool_result"]
    finally:
        asyncio.run(runtime.aclose())
