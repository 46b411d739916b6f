"""GET/POST/PUT /nini/api/skills...: the unified list, one record, refresh, enable and disable."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import skill_md, write_skill


async def test_list_is_the_unified_record_list(api: Any) -> None:
    reply = await api("GET", "skills")
    assert reply.status == 200 and reply.body["ok"] is True
    records = {r["name"]: r for r in reply.data}
    assert {"run_code", "load_dataset", "skill-creator"} <= set(records)
    for record in records.values():
        assert set(record) == {"name", "description", "type", "location", "enabled", "category", "metadata"}
        assert not record["location"].startswith("/")


@pytest.mark.parametrize("kind", ["function", "markdown"])
async def test_type_filter(api: Any, kind: str) -> None:
    records = (await api("GET", "skills", params={"type": kind})).data
    assert records and {r["type"] for r in records} == {kind}


async def test_bad_type_is_invalid_argument(api: Any) -> None:
    reply = await api("GET", "skills", params={"type": "python"})
    assert reply.status == 400 and reply.error["code"] == "INVALID_ARGUMENT"


async def test_one_skill_and_unknown_skill(api: Any) -> None:
    record = (await api("GET", "skills", "run_code")).data
    assert record["name"] == "run_code" and record["type"] == "function"
    assert "input_schema" in record["metadata"]
    missing = await api("GET", "skills", "no-such-skill")
    assert missing.status == 404 and missing.error["code"] == "NOT_FOUND"
    wrong_type = await api("GET", "skills", "run_code", params={"type": "markdown"})
    assert wrong_type.status == 404


async def test_refresh_picks_up_a_new_skill(api: Any, nini_home: Path) -> None:
    assert (await api("GET", "skills", "fresh-skill")).status == 404
    write_skill(nini_home / "skills", "fresh-skill", skill_md("fresh-skill", "Written while the server runs."))
    refreshed = (await api("POST", "skills", "refresh")).data
    assert refreshed["changed"] is True and refreshed["count"] >= 4 and isinstance(refreshed["problems"], list)
    assert (await api("GET", "skills", "fresh-skill")).data["description"] == "Written while the server runs."
    assert (await api("POST", "skills", "refresh")).data["changed"] is False


async def test_post_to_anything_but_refresh_is_not_found(api: Any) -> None:
    reply = await api("POST", "skills", "run_code")
    assert reply.status == 404 and reply.error["code"] == "NOT_FOUND"


async def test_disable_and_enable(api: Any, nini_home: Path) -> None:
    disabled = await api("PUT", "skills", "skill-creator", "enabled", body={"enabled": False})
    assert disabled.status == 200 and disabled.data["enabled"] is False
    listed = {r["name"]: r["enabled"] for r in (await api("GET", "skills")).data}
    assert listed["skill-creator"] is False
    assert '"skill-creator": false' in (nini_home / "skills_state.json").read_text()
    enabled = await api("PUT", "skills", "skill-creator", "enabled", body={"enabled": True})
    assert enabled.data["enabled"] is True


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"enabled": "no"}, 400, "INVALID_ARGUMENT"),
        ({}, 400, "INVALID_ARGUMENT"),
        ("{not json", 400, "INVALID_ARGUMENT"),
        ("[true]", 400, "INVALID_ARGUMENT"),
    ],
)
async def test_enabled_body_errors(api: Any, body: Any, status: int, code: str) -> None:
    reply = await api("PUT", "skills", "run_code", "enabled", body=body)
    assert reply.status == status and reply.error["code"] == code


async def test_enable_unknown_skill_is_not_found(api: Any) -> None:
    reply = await api("PUT", "skills", "no-such-skill", "enabled", body={"enabled": True})
    assert reply.status == 404 and reply.error["code"] == "NOT_FOUND"
