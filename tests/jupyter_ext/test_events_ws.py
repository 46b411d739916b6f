"""WebSocket /nini/api/sessions/{id}/events: live, in seq order, resumable with ?since=, many watchers."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from tornado.httpclient import HTTPClientError

from tests.jupyter_ext.conftest import new_session, nini_env, read_events


async def run(api: Any, session_id: str, code: str = "x = 1") -> None:
    assert (await api("POST", "sessions", session_id, "run-code", body={"code": code})).status == 200


async def test_reconnect_with_since_gets_what_was_missed(api: Any, jp_ws_fetch: Any) -> None:
    session_id = await new_session(api)
    ws = await jp_ws_fetch("nini", "api", "sessions", session_id, "events")
    await run(api, session_id)
    seen = await read_events(ws, 3)
    ws.close()
    await run(api, session_id, "y = 2")  # nobody is watching
    await run(api, session_id, "z = 3")
    again = await jp_ws_fetch("nini", "api", "sessions", session_id, "events", params={"since": str(seen[-1]["seq"])})
    missed = await read_events(again, 6)
    assert [e["seq"] for e in missed] == list(range(seen[-1]["seq"] + 1, seen[-1]["seq"] + 7))
    await run(api, session_id, "w = 4")  # and then live again, without a gap or a repeat
    live = await read_events(again, 3)
    assert [e["seq"] for e in live] == list(range(missed[-1]["seq"] + 1, missed[-1]["seq"] + 4))
    again.close()


async def test_since_zero_replays_everything_and_without_since_only_new(api: Any, jp_ws_fetch: Any) -> None:
    session_id = await new_session(api)
    await run(api, session_id)
    everything = await jp_ws_fetch("nini", "api", "sessions", session_id, "events", params={"since": "0"})
    assert [e["seq"] for e in await read_events(everything, 3)] == [1, 2, 3]
    fresh = await jp_ws_fetch("nini", "api", "sessions", session_id, "events")
    await run(api, session_id)
    assert [e["seq"] for e in await read_events(fresh, 3)] == [4, 5, 6]
    with pytest.raises(asyncio.TimeoutError):  # nothing else is queued
        await asyncio.wait_for(fresh.read_message(), 0.3)
    everything.close()
    fresh.close()


async def test_many_clients_watch_one_session(api: Any, jp_ws_fetch: Any) -> None:
    session_id = await new_session(api)
    sockets = [await jp_ws_fetch("nini", "api", "sessions", session_id, "events") for _ in range(8)]
    for step in range(3):
        await run(api, session_id, f"step = {step}")
    for ws in sockets:
        assert [e["seq"] for e in await read_events(ws, 9)] == list(range(1, 10))
        ws.close()


async def test_events_of_other_sessions_are_not_sent(api: Any, jp_ws_fetch: Any) -> None:
    watched, other = await new_session(api), await new_session(api)
    ws = await jp_ws_fetch("nini", "api", "sessions", watched, "events")
    await run(api, other)
    await run(api, watched)
    assert {e["session_id"] for e in await read_events(ws, 3)} == {watched}
    ws.close()


async def test_batch_sends_a_replay_in_few_messages_then_live_events(api: Any, jp_ws_fetch: Any) -> None:
    session_id = await new_session(api)
    for step in range(4):
        await run(api, session_id, f"step = {step}")
    ws = await jp_ws_fetch("nini", "api", "sessions", session_id, "events", params={"since": "0", "batch": "1"})
    messages, seqs = 0, []
    while len(seqs) < 12:
        message = json.loads(await asyncio.wait_for(ws.read_message(), 10))
        messages += 1
        seqs += [e["seq"] for e in (message if isinstance(message, list) else [message])]
    assert seqs == list(range(1, 13)) and messages < 12  # the stored events came together, in order
    await run(api, session_id, "late = 1")
    live = []
    while len(live) < 3:
        message = json.loads(await asyncio.wait_for(ws.read_message(), 10))
        live += [e["seq"] for e in (message if isinstance(message, list) else [message])]
    assert live == [13, 14, 15]
    ws.close()


@pytest.mark.slow
async def test_a_watcher_sees_what_the_cli_runs_live(
    api: Any, jp_ws_fetch: Any, nini_home: Path, tmp_path: Path
) -> None:
    """The CLI is another process on the same database: its events reach the open socket without
    a reconnect, in seq order with the server's own."""
    session_id = await new_session(api)
    ws = await jp_ws_fetch("nini", "api", "sessions", session_id, "events")
    cli = await asyncio.create_subprocess_exec(
        str(Path(sys.executable).with_name("nini")),
        "run-code",
        "--session",
        session_id,
        "--new",
        "-",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
        env=nini_env(nini_home, tmp_path),
    )
    _, stderr = await cli.communicate(b"from_cli = 1\n")
    assert cli.returncode == 0, stderr.decode()
    from_cli = await read_events(ws, 3, timeout=60)
    await run(api, session_id, "from_server = 1")
    from_server = await read_events(ws, 3)
    events = from_cli + from_server
    assert [e["seq"] for e in events] == list(range(1, 7))
    assert [e["type"] for e in events] == ["tool_call", "code_execution", "tool_result"] * 2
    assert from_cli[0]["data"]["arguments"]["code"] == "from_cli = 1\n"
    ws.close()


@pytest.mark.parametrize(
    ("session", "params", "status"),
    [
        ("nope", {}, 404),
        ("bad.id", {}, 400),
        (None, {"since": "-1"}, 400),
        (None, {"since": "last"}, 400),
        (None, {"batch": "yes"}, 400),
    ],
)
async def test_refused_before_upgrade(
    api: Any, jp_ws_fetch: Any, session: str | None, params: dict, status: int
) -> None:
    session_id = session or await new_session(api)
    with pytest.raises(HTTPClientError) as refused:
        await jp_ws_fetch("nini", "api", "sessions", session_id, "events", params=params)
    assert refused.value.code == status
    assert json.loads(refused.value.response.body)["ok"] is False


async def test_server_shutdown_closes_open_sockets(api: Any, jp_ws_fetch: Any, jp_serverapp: Any) -> None:
    session_id = await new_session(api)
    ws = await jp_ws_fetch("nini", "api", "sessions", session_id, "events")
    extension = jp_serverapp.web_app.settings["nini"]
    await extension.stop_extension()
    assert await asyncio.wait_for(ws.read_message(), 10) is None  # closed by the server
    assert jp_serverapp.web_app.settings["nini_event_sockets"] == set()
