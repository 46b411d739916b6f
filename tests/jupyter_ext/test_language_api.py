"""One language (issue 33, item 9): with ``ui.language`` auto (the default), what the server words for a
request (an R policy refusal, the preferences preview, a new skill's template, a report, an export)
comes in the language the request says (``X-Nini-Language``, as the sidebar sends on every request),
also inside an agent turn the request starts; without one (the CLI, MCP, the magics) in the server's
locale's (issue 35: ``LANG`` zh_CN.UTF-8 Chinese, else English); ``ui.language`` zh or en wins over what
the client says."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from traitlets.config import Config

from tests.conftest import scripted_model_settings, write_settings
from tests.jupyter_ext.conftest import needs_r, new_session
from tests.jupyter_ext.test_agent_api import events_until_done
from tests.llm_server import ScriptedLLM, text, tool_call

CJK = re.compile(r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]")
REFUSAL = {"en": "function not allowed: system (line 1)", "zh": "不允许调用函数: system (第 1 行)"}
PREVIEW = {"en": ("## User preferences", "- Rule: a formal tone"), "zh": ("## 用户偏好", "- 规则: 语气正式")}


@pytest.fixture
def ui_language(request: pytest.FixtureRequest) -> str | None:
    """``ui.language`` in settings.json (parametrize indirectly); unset by default: auto."""
    return getattr(request, "param", None)


@pytest.fixture
def jp_server_config(ui_language: str | None, nini_home: Path, llm_server: ScriptedLLM) -> Config:
    values = scripted_model_settings(llm_server) | ({"ui": {"language": ui_language}} if ui_language else {})
    write_settings(nini_home, values)
    return Config(
        {"ServerApp": {"jpserver_extensions": {"jupyter_ext": True}}, "NiniExtensionApp": {"nini_home": str(nini_home)}}
    )


@pytest.fixture
def EN(jp_auth_header: dict[str, str]) -> dict[str, str]:  # noqa: N802 - the headers of an English client
    return {**jp_auth_header, "X-Nini-Language": "en"}


@pytest.fixture
def ZH(jp_auth_header: dict[str, str]) -> dict[str, str]:  # noqa: N802 - a tag with a region counts as its language
    return {**jp_auth_header, "X-Nini-Language": "zh-CN"}


async def preview(api: Any, headers: dict[str, str] | None) -> str:
    return (await api("GET", "preferences", "preview", headers=headers)).data["block"]


async def test_the_sidebar_reads_ui_language_auto_by_default(api: Any) -> None:
    assert (await api("GET", "ui")).data == {"language": "auto"}


@needs_r
async def test_an_r_refusal_is_worded_in_the_requests_language(
    api: Any,
    EN: dict,
    ZH: dict,  # noqa: N803
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    session_id = await new_session(api)
    said = {}
    for language, headers in (("en", EN), ("zh", ZH), ("none", None)):
        reply = await api("POST", "sessions", session_id, "run-r-code", body={"code": 'system("ls")'}, headers=headers)
        said[language] = reply.data["error"]["message"]
    monkeypatch.setenv("LANG", "zh_CN.UTF-8")  # no client: the server's locale, read at each request
    reply = await api("POST", "sessions", session_id, "run-r-code", body={"code": 'system("ls")'})
    said["none, zh_CN locale"] = reply.data["error"]["message"]
    assert said == {
        "en": REFUSAL["en"],
        "zh": REFUSAL["zh"],
        "none": REFUSAL["en"],
        "none, zh_CN locale": REFUSAL["zh"],
    }


async def test_the_preview_template_report_and_export_follow_the_requests_language(
    api: Any,
    nini_home: Path,
    EN: dict,  # noqa: N803
    ZH: dict,  # noqa: N803
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert (await api("POST", "preferences", body={"key": "tone", "value": "formal"})).status == 201
    for language, headers in (("en", EN), ("zh", ZH)):
        lines = (await preview(api, headers)).splitlines()
        assert lines[0] == PREVIEW[language][0] and lines[-1].startswith(PREVIEW[language][1])
    assert (await preview(api, None)).startswith(PREVIEW["en"][0])  # no client: the locale's (C.UTF-8, the tests')
    monkeypatch.setenv("LANG", "zh_CN.UTF-8")
    assert (await preview(api, None)).startswith(PREVIEW["zh"][0])
    assert (await preview(api, EN)).startswith(PREVIEW["en"][0])  # a client's language beats the locale
    monkeypatch.setenv("LANG", "C.UTF-8")

    for name, headers, heading in (("english-skill", EN, "## When to use"), ("chinese-skill", ZH, "## 适用场景")):
        made = await api("POST", "skills", body={"name": name, "description": "Sum sales by month."}, headers=headers)
        assert made.status == 201, made.body
        assert heading in (nini_home / "skills" / name / "SKILL.md").read_text(encoding="utf-8")
    assert not CJK.search((nini_home / "skills" / "english-skill" / "SKILL.md").read_text(encoding="utf-8"))

    session_id = await new_session(api)
    reports = nini_home / "sessions" / session_id / "workspace"
    english = (await api("POST", "sessions", session_id, "report", body={"formats": ["md"]}, headers=EN)).data
    chosen = (
        await api("POST", "sessions", session_id, "report", body={"formats": ["md"], "lang": "zh"}, headers=EN)
    ).data
    english, chosen = ((reports / made["paths"]["md"]).read_text(encoding="utf-8") for made in (english, chosen))
    assert "## Key findings" in english and not CJK.search(english)
    assert "## 关键发现" in chosen  # the body's lang wins over the client's

    exported = await api("GET", "sessions", session_id, "export", params={"format": "md", "nini_language": "en"})
    assert "This code was written by nini's agent" in exported.raw.decode()
    exported = await api("GET", "sessions", session_id, "export", params={"format": "md", "nini_language": "zh"})
    assert "这些代码由 nini 的智能体" in exported.raw.decode()


@needs_r
async def test_a_turn_asked_in_english_is_worded_in_english_to_its_end(
    api: Any, jp_ws_fetch: Any, llm_server: ScriptedLLM, EN: dict
) -> None:  # noqa: N803
    """The turn runs in a task of its own, its store calls on the store's threads and its R in the
    session's worker: the language of the request that started it reaches all of them."""
    assert (await api("POST", "preferences", body={"key": "tone", "value": "formal"})).status == 201
    session_id = await new_session(api)
    llm_server.reply(tool_call("run_r_code", code='system("ls")', label="files"), text("R refused to list the files."))
    ws = await jp_ws_fetch("nini", "api", "sessions", session_id, "events")
    asked = await api("POST", "sessions", session_id, "ask", body={"message": "List the files"}, headers=EN)
    assert asked.status == 202, asked.body
    events = await events_until_done(ws)
    ws.close()
    [result] = [e for e in events if e["type"] == "tool_result"]
    assert result["data"]["error"]["message"] == REFUSAL["en"]
    prompt = llm_server.requests[0]["messages"][0]["content"]
    assert PREVIEW["en"][1] in prompt and PREVIEW["zh"][1] not in prompt
    assert not CJK.search(json.dumps([e["data"] for e in events if e["type"] != "user_message"], ensure_ascii=False))


@pytest.mark.parametrize("ui_language", ["zh"], indirect=True)
async def test_a_forced_language_wins_over_the_clients(api: Any, EN: dict) -> None:  # noqa: N803
    assert (await api("GET", "ui")).data == {"language": "zh"}
    assert (await api("POST", "preferences", body={"key": "tone", "value": "formal"})).status == 201
    assert (await preview(api, EN)).startswith(PREVIEW["zh"][0])


@pytest.mark.parametrize("ui_language", ["en"], indirect=True)
async def test_ui_language_en_words_everything_in_english_without_a_client(api: Any, ZH: dict) -> None:  # noqa: N803
    assert (await api("POST", "preferences", body={"key": "tone", "value": "formal"})).status == 201
    assert (await preview(api, None)).startswith(PREVIEW["en"][0])
    assert (await preview(api, ZH)).startswith(PREVIEW["en"][0])
