"""Code, labels and titles are capped on every path by ``limits.*`` (TOO_LARGE naming the setting), a
lone surrogate is INVALID_ARGUMENT, and nothing is stored for a refusal; a step's code is stored once
(its tool call's arguments) and every reader still shows it (issue 36, item 5).

Paths: the CLI (``nini run-code`` with a 10 MB file, stdin with a lone surrogate, a long ``--label``),
``nini mcp`` through the MCP SDK's client, ``invoke`` (the agent's path: the agent's turn through the
scripted model is in tests/jupyter_ext/test_limits_api.py with REST's), a session's title.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from nini.errors import NiniError
from nini.execution.policy import find_violations
from nini.history.export import export_session
from nini.limits import Limits, check_arguments, check_text
from nini.skills.invoke import EVENT_CODE_CHARS
from tests.conftest import Harness, runtime_harness
from tests.timeouts import timeout

NINI = str(Path(sys.executable).with_name("nini"))
LIMITS = Limits(code=1000, label=20, title=30)


def rows(home: Path) -> dict[str, int]:
    """How many rows each table of the record holds (no database file: none)."""
    path = home / "nini.db"
    if not path.exists():
        return {}
    with sqlite3.connect(path) as db:
        return {
            t: db.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
            for t in ("sessions", "tool_calls", "executions", "events")
        }


def nothing_stored(home: Path) -> bool:
    return all(count == 0 for count in rows(home).values())


def occurrences(home: Path, marker: str) -> int:
    """How often ``marker`` is in the database file's bytes, after the WAL is written into it."""
    with sqlite3.connect(home / "nini.db") as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return (home / "nini.db").read_bytes().count(marker.encode())


# -- the checks ----------------------------------------------------------------------------------


def test_the_checks_name_the_setting_and_refuse_surrogates() -> None:
    with pytest.raises(NiniError) as long:
        check_text("code", "x" * 1001, LIMITS)
    assert long.value.code.value == "TOO_LARGE" and "limits.max_code_chars" in long.value.message
    assert long.value.details == {"field": "code", "chars": 1001, "limit": 1000, "setting": "limits.max_code_chars"}
    check_text("code", "x" * 1000, LIMITS)  # at the cap: fine
    with pytest.raises(NiniError) as surrogate:
        check_text("title", "ok \ud800", LIMITS)
    assert surrogate.value.code.value == "INVALID_ARGUMENT" and "surrogate" in surrogate.value.message
    with pytest.raises(NiniError) as label:
        check_arguments({"code": "1", "label": "l" * 21}, LIMITS)
    assert label.value.code.value == "TOO_LARGE" and "limits.max_label_chars" in label.value.message
    with pytest.raises(NiniError) as deep:  # any text of the arguments, however deep
        check_arguments({"code": "1", "options": {"sep": ["\udc80"]}}, LIMITS)
    assert deep.value.code.value == "INVALID_ARGUMENT"


# -- the CLI -------------------------------------------------------------------------------------


def nini(home: Path, project: Path, *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    env = {"NINI_HOME": str(home), "LANG": "C.UTF-8", "PATH": "/usr/bin:/bin"}
    return subprocess.run(
        [NINI, "--project-dir", str(project), *args], input=stdin, env=env, capture_output=True, timeout=timeout(300)
    )


def test_cli_refuses_10_mb_of_code_a_long_label_and_a_surrogate_before_storing_anything(
    nini_home: Path, project_dir: Path
) -> None:
    big = project_dir / "big.py"
    big.write_text("x = 1\n" * (10 * 1024 * 1024 // 6 + 1))
    ran = nini(nini_home, project_dir, "run-code", str(big))
    assert ran.returncode == 1 and b"TOO_LARGE" in ran.stderr and b"limits.max_code_chars" in ran.stderr, ran.stderr
    assert b"Traceback" not in ran.stderr
    labelled = nini(nini_home, project_dir, "run-code", "-", "--label", "L" * 10_000, stdin=b"x = 1\n")
    assert labelled.returncode == 1 and b"limits.max_label_chars" in labelled.stderr, labelled.stderr
    # invalid UTF-8 on stdin arrives as lone surrogates (surrogateescape): was INTERNAL from the database
    surrogate = nini(nini_home, project_dir, "run-code", "-", stdin=b"print(1)\n\xed\xa0\x80\n")
    assert surrogate.returncode == 1 and b"INVALID_ARGUMENT" in surrogate.stderr, surrogate.stderr
    assert b"surrogate" in surrogate.stderr
    assert nothing_stored(nini_home), rows(nini_home)


# -- MCP -----------------------------------------------------------------------------------------


@pytest.mark.slow
def test_mcp_refuses_long_code_and_labels_before_any_record(nini_home: Path, project_dir: Path) -> None:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    async def work() -> list[Any]:
        server = StdioServerParameters(
            command=NINI,
            args=["--project-dir", str(project_dir), "mcp", "--session", "m1", "--new"],
            env={"NINI_HOME": str(nini_home), "LANG": "C.UTF-8"},
        )
        async with stdio_client(server) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            return [
                await client.call_tool("run_code", {"code": "y = 2\n" * 400_000}),  # 2.4 MB
                await client.call_tool("run_code", {"code": "1", "label": "L" * 1000}),
            ]

    code, label = anyio.run(work)  # (the SDK's client cannot send a lone surrogate: its JSON refuses it)
    assert code.is_error and "TOO_LARGE" in code.content[0].text and "limits.max_code_chars" in code.content[0].text
    assert label.is_error and "limits.max_label_chars" in label.content[0].text
    assert nothing_stored(nini_home), rows(nini_home)  # its session too: nothing ran in it


# -- invoke (the agent's path) and titles ----------------------------------------------------------


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Harness]:
    yield from runtime_harness(tmp_path_factory, {"limits": {"max_code_chars": 200_000, "max_title_chars": 100}})


def home_of(harness: Harness) -> Path:
    return harness.runtime.settings.home


def test_invoke_refuses_long_code_with_an_error_the_model_reads_and_keeps_no_code(harness: Harness) -> None:
    session = harness.session()
    marker = "MARKER_REFUSED_d41c"
    result = harness.call(session, "run_code", code=f"# {marker}\n" + "z = 3\n" * 40_000)
    assert not result.success and result.error["code"] == "TOO_LARGE"
    assert "limits.max_code_chars" in result.text_for_llm(8000)  # what the model gets back
    store = harness.runtime.store
    (call,) = store.list_tool_calls(session.id)
    assert call["status"] == "failed" and call["error_code"] == "TOO_LARGE"
    assert "not kept" in call["arguments"]["code"]  # the record says what was refused, not the text
    assert store.list_executions(session.id) == []
    assert [e["type"] for e in store.list_events(session.id)] == ["tool_call", "tool_result"]
    assert occurrences(home_of(harness), marker) == 0
    again = harness.call(session, "run_code", code="print('after')")  # the session goes on
    assert again.success and again.result["stdout"] == "after\n"


def test_a_long_title_is_refused_before_a_session_exists(harness: Harness) -> None:
    before = len(harness.runtime.list_sessions(limit=1000))
    for title in ("t" * 5_000_000, "t" * 101):
        with pytest.raises(NiniError) as refused:
            harness.runtime.create_session(title=title)
        assert refused.value.code.value == "TOO_LARGE" and "limits.max_title_chars" in refused.value.message
    with pytest.raises(NiniError) as named:
        harness.runtime.session_or_new("s-long-title", "t" * 101)
    assert named.value.code.value == "TOO_LARGE"
    assert len(harness.runtime.list_sessions(limit=1000)) == before
    session = harness.session()
    with pytest.raises(NiniError) as renamed:
        harness.runtime.rename_session(session.id, "r" * 1_000_000)
    assert renamed.value.code.value == "TOO_LARGE"


# -- the code once ---------------------------------------------------------------------------------


def test_code_is_stored_once_and_every_reader_shows_it(harness: Harness) -> None:
    session = harness.session()
    head, tail = "MARKER_HEAD_91be", "MARKER_TAIL_5c07"
    code = (
        f"# {head}\n" + "w = 4  # a line of padding for a long step\n" * 3000 + f"last = '{tail}'\nprint(len(last))\n"
    )
    assert len(code) > EVENT_CODE_CHARS
    result = harness.call(session, "run_code", code=code, label="long step")
    assert result.success and result.result["stdout"] == f"{len(tail)}\n"
    store, home = harness.runtime.store, home_of(harness)
    # the whole code once (the call's arguments); the event carries its first 64 KiB
    assert occurrences(home, tail) == 1  # was 2: the execution held the code again (and 3 with the event)
    assert occurrences(home, head) == 2  # the call's arguments and the tool_call event's start
    with sqlite3.connect(home / "nini.db") as db:
        assert db.execute("SELECT code FROM executions WHERE id = ?", (result.execution_id,)).fetchone() == ("",)
    (execution,) = store.list_executions(session.id)
    assert execution["code"] == code and store.get_execution(result.execution_id)["code"] == code
    assert store.list_executions(session.id, fields=("id", "code"))[0]["code"] == code
    event = store.list_events(session.id)[0]
    assert event["type"] == "tool_call" and event["data"]["code_chars"] == len(code)
    assert event["data"]["arguments"]["code"] == code[:EVENT_CODE_CHARS]
    assert store.get_tool_call(result.tool_call_id)["arguments"]["code"] == code  # what the sidebar reads
    notebook = json.loads(export_session(store, session.id, session.workspace.root, "ipynb", check=find_violations))
    assert any(tail in "".join(cell["source"]) for cell in notebook["cells"])
    assert head in export_session(store, session.id, session.workspace.root, "md", check=find_violations)
    shown = subprocess.run(
        [NINI, "sessions", "show", session.id, "--json"],
        capture_output=True,
        text=True,
        timeout=timeout(120),
        env={"NINI_HOME": str(home), "LANG": "C.UTF-8", "PATH": "/usr/bin:/bin"},
    )
    assert shown.returncode == 0 and f"last = '{tail}'" in shown.stdout, shown.stderr
