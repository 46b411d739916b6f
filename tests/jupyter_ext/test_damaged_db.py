"""A Jupyter server whose nini history database is damaged (issue 36, item 4): nini loads anyway, and
every nini route (REST, the events socket before its upgrade, MCP, files, ui) answers 503 DB_ERROR
with the message the CLI gives for the same file, never Jupyter's 404 page; once a good file is
back, nini serves without a restart."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from tornado.httpclient import HTTPClientError
from traitlets.config import Config

from tests.history.damages import DAMAGES, HARMLESS, NEEDS_NO_DAC_OVERRIDE, UNSEEN_BY_LIST, damaged_home, history

SHOWN = "$NINI_HOME/nini.db"
# damages the store meets when it opens: the server cannot open nini's Runtime
AT_OPEN = sorted(
    set(DAMAGES) - HARMLESS - UNSEEN_BY_LIST - NEEDS_NO_DAC_OVERRIDE - {"a title not UTF-8", "JSON that is not JSON"}
)


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("template") / "home"
    history(home)
    return home


@pytest.fixture
def damage() -> str:
    return "empty"


@pytest.fixture
def jp_server_config(nini_home: Path, template: Path, damage: str) -> Config:
    damaged_home(template, nini_home, damage)
    return Config(
        {
            "ServerApp": {"jpserver_extensions": {"jupyter_ext": True}},
            "NiniExtensionApp": {"nini_home": str(nini_home), "reopen_interval": 0.1},
        }
    )


def assert_db_error(reply: Any, nini_home: Path) -> dict[str, Any]:
    assert reply.status == 503, (reply.status, reply.raw[:300])
    error = reply.error
    assert error["code"] == "DB_ERROR" and SHOWN in error["message"] and str(nini_home) not in error["message"], error
    return error


@pytest.mark.parametrize("damage", AT_OPEN)
async def test_every_damage_is_503_db_error_on_a_nini_route(api: Any, nini_home: Path, damage: str) -> None:
    error = assert_db_error(await api("GET", "sessions"), nini_home)
    assert "Traceback" not in error["message"]


async def test_every_nini_route_answers_the_clis_message(
    api: Any, jp_fetch: Any, jp_ws_fetch: Any, nini_home: Path
) -> None:
    expected = (
        "the history database $NINI_HOME/nini.db is empty (0 bytes); move it aside to start "
        "a new history, or restore a backup"
    )
    replies = [
        await api("GET", "sessions"),
        await api("POST", "sessions", body={"title": "x"}),
        await api("GET", "skills"),
        await api("GET", "ui"),
        await api("POST", "sessions", "s1", "files", body=b"a,b\n1,2\n", params={"name": "t.csv"}),
        await api("POST", "run_code", body={"code": "1"}),
    ]
    for reply in replies:
        assert assert_db_error(reply, nini_home)["message"] == expected

    with pytest.raises(HTTPClientError) as refused:  # the events socket, before its upgrade
        await jp_ws_fetch("nini", "api", "sessions", "s1", "events")
    assert refused.value.code == 503

    try:
        response = await jp_fetch(
            "nini",
            "mcp",
            method="POST",
            body=json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
            headers={"Accept": "application/json, text/event-stream"},
        )
        status, body = response.code, json.loads(response.body)
    except HTTPClientError as exc:
        status, body = exc.code, json.loads(exc.response.body)
    assert status == 503 and body["error"]["data"]["code"] == "DB_ERROR" and SHOWN in body["error"]["message"]


async def test_unauthenticated_requests_still_get_403(jp_fetch: Any) -> None:
    with pytest.raises(HTTPClientError) as refused:
        await jp_fetch("nini", "api", "sessions", headers={"Authorization": ""})
    assert refused.value.code == 403
    with pytest.raises(HTTPClientError) as refused:  # a body too: its size is checked after who sent it
        await jp_fetch("nini", "api", "sessions", method="POST", body='{"title": "x"}', headers={"Authorization": ""})
    assert refused.value.code == 403 and b"nini.db" not in (refused.value.response.body or b"")


async def test_nini_serves_once_a_good_file_is_back_without_a_restart(
    api: Any, nini_home: Path, tmp_path: Path
) -> None:
    assert_db_error(await api("GET", "sessions"), nini_home)
    good = history(tmp_path / "good")
    shutil.move(nini_home / "nini.db", tmp_path / "damaged.db")  # what the message says: move it aside...
    shutil.copy(good, nini_home / "nini.db")  # ...and restore a backup
    for _ in range(600):  # the server tries again every 0.1 s here
        reply = await api("GET", "sessions")
        if reply.status == 200:
            break
        await asyncio.sleep(0.05)
    assert [s["title"] for s in reply.data] == ["damage-probe-title"]
    assert (await api("POST", "sessions", body={"title": "after"})).status in (200, 201)


@pytest.mark.parametrize("damage", ["a title not UTF-8", "JSON that is not JSON"])
async def test_damage_met_in_a_running_server_is_503_db_error(api: Any, nini_home: Path, damage: str) -> None:
    assert_db_error(await api("GET", "sessions"), nini_home)


@pytest.mark.parametrize("damage", ["SHM garbage"])  # harmless: the server opens the history
async def test_a_wal_removed_under_the_running_server_is_503_before_anything_more_is_acknowledged(
    api: Any, nini_home: Path, damage: str
) -> None:
    created = await api("POST", "sessions", body={"title": "before"})
    assert created.status in (200, 201), created.raw
    (nini_home / "nini.db-wal").unlink()
    for body in ({"title": "after"}, {"title": "and after"}):
        error = assert_db_error(await api("POST", "sessions", body=body), nini_home)
        assert "write-ahead log $NINI_HOME/nini.db-wal was removed or replaced" in error["message"], error
