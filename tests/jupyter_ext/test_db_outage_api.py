"""REST while the history database is down (issue 36): a run-code whose end PostgreSQL cannot take
answers 503 DB_ERROR (not 500 INTERNAL), and once PostgreSQL is back the same server, not
restarted, records the call as failed with its ``tool_result``."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from traitlets.config import Config

from tests import pg_cluster
from tests.history.outage import PASSWORD, cluster, record_of, wait_for, whole, with_password  # noqa: F401
from tests.jupyter_ext.conftest import new_session

pytestmark = pytest.mark.slow


@pytest.fixture
def database_url(cluster: pg_cluster.Cluster, monkeypatch: pytest.MonkeyPatch) -> str:
    url = with_password(cluster.create_database())
    monkeypatch.setenv("NINI_DATABASE_URL", url)
    return url


@pytest.fixture
def jp_server_config(jp_server_config: Config, database_url: str) -> Config:
    return jp_server_config  # the server starts once NINI_DATABASE_URL names the test's PostgreSQL


async def test_run_code_while_postgresql_is_down_answers_503_and_the_call_ends_once_it_is_back(
    api: Any, cluster: pg_cluster.Cluster, database_url: str, nini_home: Path
) -> None:
    session_id = await new_session(api)
    go = nini_home / "sessions" / session_id / "workspace" / "go"
    # waits for the test's go file (no os: the static policy refuses it, and the step would end at once)
    code = (
        "import time\nwhile True:\n    try:\n        open('go').close()\n        break\n"
        "    except FileNotFoundError:\n        time.sleep(0.02)\nresult = 1"
    )
    running = asyncio.ensure_future(api("POST", "sessions", session_id, "run-code", body={"code": code}))

    def started() -> bool:
        return running.done() or any(c["status"] == "running" for c in record_of(database_url, session_id)[0])

    await asyncio.to_thread(wait_for, started, "the step started")
    assert not running.done(), f"the step ended before it could wait: {running.result()}"
    await asyncio.to_thread(cluster.halt)
    go.touch()
    reply = await running

    assert reply.status == 503, reply.body
    error = reply.error
    assert error["code"] == "DB_ERROR" and f"127.0.0.1:{cluster.port}/" in error["message"]
    assert PASSWORD not in reply.raw.decode() and str(cluster.root) not in reply.raw.decode()

    await asyncio.to_thread(cluster.resume)
    calls = await asyncio.to_thread(wait_for, lambda: whole(database_url, session_id, 1), "the kept end written")
    assert (calls[0]["status"], calls[0]["error_code"]) == ("failed", "DB_ERROR")
    after = await api("GET", "sessions", session_id, "tool-calls")  # the same server answers again
    assert after.status == 200 and "failed" in after.raw.decode(), after.body
