"""/nini/api/sessions...: create, list, show, tool calls, executions, export."""

from __future__ import annotations

import json
from typing import Any

import nbformat
import pytest

from tests.jupyter_ext.conftest import new_session


async def test_create_with_and_without_id(api: Any) -> None:
    created = await api("POST", "sessions", body={"title": "Sales", "id": "sales-2024"})
    assert created.status == 201 and created.data["id"] == "sales-2024" and created.data["title"] == "Sales"
    anonymous = await api("POST", "sessions")
    assert anonymous.status == 201 and anonymous.data["id"] and anonymous.data["title"] is None


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"id": "has spaces"}, 400, "INVALID_ARGUMENT"),
        ({"id": "../up"}, 400, "INVALID_ARGUMENT"),
        ({"title": 3}, 400, "INVALID_ARGUMENT"),
        ("not json", 400, "INVALID_ARGUMENT"),
        ('"a string"', 400, "INVALID_ARGUMENT"),
    ],
)
async def test_create_errors(api: Any, body: Any, status: int, code: str) -> None:
    reply = await api("POST", "sessions", body=body)
    assert reply.status == status and reply.error["code"] == code


async def test_duplicate_id_is_conflict(api: Any) -> None:
    assert (await api("POST", "sessions", body={"id": "twice"})).status == 201
    again = await api("POST", "sessions", body={"id": "twice"})
    assert again.status == 409 and again.error["code"] == "CONFLICT"


async def test_list_newest_first_with_limit(api: Any) -> None:
    first, second = await new_session(api, "first"), await new_session(api, "second")
    listed = (await api("GET", "sessions")).data
    assert [s["id"] for s in listed[:2]] == [second, first]
    assert {"tool_call_count", "execution_count"} <= set(listed[0])
    assert len((await api("GET", "sessions", params={"limit": "1"})).data) == 1
    bad = await api("GET", "sessions", params={"limit": "zero"})
    assert bad.status == 400 and bad.error["code"] == "INVALID_ARGUMENT"


async def test_show_and_unknown(api: Any) -> None:
    session_id = await new_session(api, "shown")
    shown = (await api("GET", "sessions", session_id)).data
    assert shown["id"] == session_id and shown["title"] == "shown"
    assert shown["artifacts"] == [] and shown["datasets"] == []
    missing = await api("GET", "sessions", "nope")
    assert missing.status == 404 and missing.error["code"] == "NOT_FOUND"
    malformed = await api("GET", "sessions", "bad.id")
    assert malformed.status == 400 and malformed.error["code"] == "INVALID_ARGUMENT"


@pytest.mark.parametrize("resource", ["tool-calls", "executions", "export"])
async def test_sub_resources_of_an_unknown_session_are_not_found(api: Any, resource: str) -> None:
    reply = await api("GET", "sessions", "nope", resource)
    assert reply.status == 404 and reply.error["code"] == "NOT_FOUND"


async def test_tool_calls_executions_and_exports_after_runs(api: Any) -> None:
    session_id = await new_session(api, "recorded")
    code = "import pandas as pd\nprint('hello')\noutput_df = pd.DataFrame({'a': [1, 2]})"
    ok = await api("POST", "sessions", session_id, "run-code", body={"code": code, "save_as": "two", "label": "make"})
    assert ok.data["success"] is True, ok.body
    failed = await api("POST", "sessions", session_id, "run-code", body={"code": "1 / 0"})
    assert failed.data["success"] is False

    calls = (await api("GET", "sessions", session_id, "tool-calls")).data
    assert [(c["tool_name"], c["status"]) for c in calls] == [("run_code", "succeeded"), ("run_code", "failed")]
    executions = (await api("GET", "sessions", session_id, "executions")).data
    assert [e["language"] for e in executions] == ["python", "python"] and executions[0]["stdout"] == "hello\n"
    assert len((await api("GET", "sessions", session_id, "executions", params={"language": "python"})).data) == 2
    assert (await api("GET", "sessions", session_id, "executions", params={"language": "r"})).data == []
    bad = await api("GET", "sessions", session_id, "executions", params={"language": "julia"})
    assert bad.status == 400 and bad.error["code"] == "INVALID_ARGUMENT"
    assert [d["name"] for d in (await api("GET", "sessions", session_id)).data["datasets"]] == ["two"]

    notebook = await api("GET", "sessions", session_id, "export")
    assert notebook.status == 200 and notebook.headers["Content-Type"].startswith("application/x-ipynb+json")
    assert f'filename="nini-session-{session_id}.ipynb"' in notebook.headers["Content-Disposition"]
    cells = nbformat.reads(notebook.raw.decode(), as_version=4).cells
    assert any("print('hello')" in c.source for c in cells if c.cell_type == "code")
    from tests.history.test_export_rerun import ABSOLUTE

    assert ABSOLUTE.findall(notebook.raw.decode()) == []  # a download names no host path
    assert f"nini-session-{session_id}_files" in cells[1].source  # where it expects its files
    markdown = await api("GET", "sessions", session_id, "export", params={"format": "md"})
    assert markdown.headers["Content-Type"].startswith("text/markdown") and "hello" in markdown.raw.decode()
    as_json = await api("GET", "sessions", session_id, "export", params={"format": "json"})
    assert len(json.loads(as_json.raw)["tool_calls"]) == 2
    wrong = await api("GET", "sessions", session_id, "export", params={"format": "pdf"})
    assert wrong.status == 400 and wrong.error["code"] == "INVALID_ARGUMENT"


@pytest.mark.usefixtures("chinese_locale")  # the spec's Chinese words: auto under a zh locale
async def test_the_export_says_whose_code_it_is_and_re_runs_sandboxed_on_request(api: Any) -> None:
    """Issue 31: ``?sandboxed=1`` is a notebook of %%nini_run cells; every export names the agent and the
    flagged steps."""
    session_id = await new_session(api, "provenance")
    ran = await api("POST", "sessions", session_id, "run-code", body={"code": "print(6 * 7)", "label": "answer"})
    refused = await api("POST", "sessions", session_id, "run-code", body={"code": "import socket", "label": "net"})
    assert ran.data["success"] is True and refused.data["error"]["code"] == "POLICY_VIOLATION"

    plain = nbformat.reads((await api("GET", "sessions", session_id, "export")).raw.decode(), as_version=4)
    sandboxed = await api("GET", "sessions", session_id, "export", params={"format": "ipynb", "sandboxed": "1"})
    assert sandboxed.status == 200 and sandboxed.headers["Content-Type"].startswith("application/x-ipynb+json")
    contained = nbformat.reads(sandboxed.raw.decode(), as_version=4)
    for notebook in (plain, contained):
        header = notebook.cells[0].source
        assert "这些代码由 nini 的智能体" in header and "第 2 步 `net`（python）（被拒绝，未运行）" in header
        (step,) = [c for c in notebook.cells if "nini-agent-code" in c.metadata.get("tags", [])]
        assert step.source.endswith("print(6 * 7)")
    assert "没有沙箱" in plain.cells[0].source and "%%nini_run" not in plain.cells[2].source
    assert "%%nini_run" in contained.cells[0].source and contained.cells[1].source.count("%load_ext nini") == 1
    assert [c for c in contained.cells if "nini-agent-code" in c.metadata.get("tags", [])][0].source.startswith(
        "%%nini_run --label=answer --purpose=exploration\n"
    )
    markdown = await api("GET", "sessions", session_id, "export", params={"format": "md", "sandboxed": "1"})
    assert markdown.status == 400 and markdown.error["code"] == "INVALID_ARGUMENT"
    bad = await api("GET", "sessions", session_id, "export", params={"sandboxed": "maybe"})
    assert bad.status == 400 and bad.error["code"] == "INVALID_ARGUMENT"
