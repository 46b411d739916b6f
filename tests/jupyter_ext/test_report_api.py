"""POST /nini/api/sessions/{id}/report: written into the workspace, recorded, announced by report_ready."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from tests.jupyter_ext.conftest import new_session, workspace

pytestmark = pytest.mark.usefixtures("chinese_locale")  # the spec's Chinese words: auto under a zh locale

CHART_CODE = "import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nresult = {'peak month': 'March'}"


async def test_a_report_is_written_recorded_and_announced(api: Any, jp_serverapp: Any, nini_home: Path) -> None:
    session_id = await new_session(api, "季度分析")
    run = await api("POST", "sessions", session_id, "run-code", body={"code": CHART_CODE, "label": "peak"})
    assert run.data["success"], run.data

    body = {
        "title": "季度报告",
        "conclusions": "<script>alert(1)</script> 继续观察",
        "formats": ["md", "html", "ipynb"],
    }
    reply = await api("POST", "sessions", session_id, "report", body=body)

    assert reply.status == 200
    data = reply.data
    assert set(data) == {"title", "paths", "tool_call_id"} and data["title"] == "季度报告"
    assert list(data["paths"]) == ["md", "html", "ipynb"]
    root = workspace(nini_home, session_id)
    for path in data["paths"].values():
        assert path.startswith("reports/") and (root / path).is_file()
    markdown = (root / data["paths"]["md"]).read_text(encoding="utf-8")
    assert "peak: peak month" in markdown and "## 图表" in markdown and "\\<script>" in markdown

    page = await api("GET", "sessions", session_id, "artifacts", *data["paths"]["html"].split("/"))
    assert page.status == 200 and b"data:image/png;base64," in page.raw and b"<script>alert" not in page.raw

    store = jp_serverapp.web_app.settings["nini_runtime"].store
    events = [
        e
        for e in store.list_events(session_id)
        if e["tool_call_id"] == data["tool_call_id"] or e["type"] == "report_ready"
    ]
    assert [e["type"] for e in events] == ["tool_call", "report_ready", "tool_result"]
    assert events[1]["data"] == {"paths": data["paths"], "title": "季度报告"}
    assert events[1]["tool_call_id"] == data["tool_call_id"]  # published by invoke, after the rows it names

    calls = (await api("GET", "sessions", session_id, "tool-calls")).data
    assert calls[-1]["id"] == data["tool_call_id"] and calls[-1]["tool_name"] == "generate_report"
    assert calls[-1]["status"] == "succeeded" and calls[-1]["arguments"] == body
    artifacts = [a for a in (await api("GET", "sessions", session_id)).data["artifacts"] if a["kind"] == "report"]
    assert {a["format"]: a["path"] for a in artifacts} == data["paths"]
    assert all(a["size_bytes"] > 0 and a["execution_id"] is None for a in artifacts)


async def test_an_empty_body_gives_the_default_report(api: Any, nini_home: Path) -> None:
    session_id = (await api("POST", "sessions")).data["id"]  # no title to suggest one
    reply = await api("POST", "sessions", session_id, "report")
    assert (
        reply.status == 200
        and reply.data["title"] == "科研数据分析报告"
        and list(reply.data["paths"]) == ["md", "html"]
    )
    again = await api("POST", "sessions", session_id, "report", body={"lang": "en"})
    assert again.data["title"] == "Data Analysis Report"
    assert again.data["paths"]["md"] != reply.data["paths"]["md"]
    assert (workspace(nini_home, session_id) / reply.data["paths"]["md"]).is_file()  # never overwritten


async def test_an_unknown_session_is_404_and_records_nothing(api: Any) -> None:
    reply = await api("POST", "sessions", "nobody", "report", body={})
    assert reply.status == 404 and reply.error["code"] == "NOT_FOUND"
    assert all(s["id"] != "nobody" for s in (await api("GET", "sessions")).data)


@pytest.mark.parametrize(
    "body",
    [{"lang": "fr"}, {"formats": ["docx"]}, {"include_charts": "sometimes"}, {"colour": "red"}, "[1]", "{oops"],
)
async def test_wrong_requests_are_400(api: Any, body: Any) -> None:
    session_id = await new_session(api)
    reply = await api("POST", "sessions", session_id, "report", body=body)
    assert reply.status == 400 and reply.error["code"] == "INVALID_ARGUMENT"


async def test_pdf_without_a_converter_names_what_to_install(api: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from nini.report import output

    monkeypatch.setitem(sys.modules, "weasyprint", None)
    monkeypatch.setattr(output.shutil, "which", lambda name: None)
    session_id = await new_session(api)
    reply = await api("POST", "sessions", session_id, "report", body={"formats": ["html", "pdf"]})
    assert reply.status == 404 and reply.error["code"] == "NOT_FOUND"
    assert "weasyprint" in reply.error["message"] and reply.error["details"]["tool_call_id"]
    calls = (await api("GET", "sessions", session_id, "tool-calls")).data
    assert calls[-1]["tool_name"] == "generate_report" and calls[-1]["status"] == "failed"
