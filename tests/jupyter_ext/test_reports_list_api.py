"""GET /nini/api/sessions/{id}/reports: the session's reports from its record, newest first, with
their files and charts as workspace paths the artifacts route serves."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.jupyter_ext.conftest import new_session, workspace

CHART = "import matplotlib.pyplot as plt\nplt.figure()\nplt.plot([1, 3, 2])\nresult = 1"


async def run_chart(api: Any, session_id: str, label: str) -> dict[str, Any]:
    run = await api("POST", "sessions", session_id, "run-code", body={"code": CHART, "label": label})
    assert run.data["success"], run.data
    return run.data


async def test_no_reports_yet(api: Any) -> None:
    session_id = await new_session(api)
    reply = await api("GET", "sessions", session_id, "reports")
    assert reply.status == 200 and reply.data == []


async def test_reports_newest_first_with_their_files_and_charts(api: Any, nini_home: Path) -> None:
    session_id = await new_session(api, "sales")
    await run_chart(api, session_id, "revenue")
    first = (await api("POST", "sessions", session_id, "report", body={"title": "First"})).data
    await run_chart(api, session_id, "costs")
    await api("POST", "sessions", session_id, "report", body={"formats": ["docx"]})  # failed: not a report
    second = (
        await api(
            "POST", "sessions", session_id, "report", body={"title": "Second", "formats": ["md", "html", "ipynb"]}
        )
    ).data

    reports = (await api("GET", "sessions", session_id, "reports")).data
    assert [r["title"] for r in reports] == ["Second", "First"]
    assert [r["tool_call_id"] for r in reports] == [second["tool_call_id"], first["tool_call_id"]]
    assert reports[0]["files"] == second["paths"] and reports[1]["files"] == first["paths"]
    assert list(reports[0]["files"]) == ["md", "html", "ipynb"]
    assert reports[0]["created_at"] > reports[1]["created_at"]
    assert [c["name"] for c in reports[1]["charts"]] == ["revenue"]
    assert [c["name"] for c in reports[0]["charts"]] == ["revenue", "costs"]
    chart = reports[0]["charts"][0]
    assert list(chart["formats"]) == ["png", "svg"]  # the report's preview format first
    root = workspace(nini_home, session_id)
    for report in reports:
        paths = list(report["files"].values()) + [p for c in report["charts"] for p in c["formats"].values()]
        for path in paths:
            assert not path.startswith("/") and (root / path).is_file()
            served = await api("GET", "sessions", session_id, "artifacts", *path.split("/"))
            assert served.status == 200 and served.raw == (root / path).read_bytes()


async def test_charts_left_out_of_a_report_are_not_listed(api: Any, jp_serverapp: Any) -> None:
    session_id = await new_session(api)
    await run_chart(api, session_id, "kept")
    undone = await run_chart(api, session_id, "undone")
    await api("POST", "sessions", session_id, "report", body={"title": "before"})
    store = jp_serverapp.web_app.settings["nini_runtime"].store
    store.mark_rolled_back(undone["execution_id"])
    await api("POST", "sessions", session_id, "report", body={"title": "after"})
    await api("POST", "sessions", session_id, "report", body={"title": "no charts", "include_charts": False})
    by_title = {r["title"]: r for r in (await api("GET", "sessions", session_id, "reports")).data}
    assert [c["name"] for c in by_title["before"]["charts"]] == ["kept", "undone"]  # as it was written
    assert [c["name"] for c in by_title["after"]["charts"]] == ["kept"]
    assert by_title["no charts"]["charts"] == []


async def test_unknown_session_is_not_found(api: Any) -> None:
    reply = await api("GET", "sessions", "nobody", "reports")
    assert reply.status == 404 and reply.error["code"] == "NOT_FOUND"
