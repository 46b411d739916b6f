"""A provider's price over REST (PUT /nini/api/models/providers/NAME) and the cost it gives a turn's
``done`` event, through a real Jupyter server and the scripted model's reported usage."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from traitlets.config import Config

from tests.conftest import scripted_model_settings, write_settings
from tests.jupyter_ext.conftest import new_session
from tests.llm_server import ScriptedLLM, text


@pytest.fixture
def jp_server_config(nini_home: Path, llm_server: ScriptedLLM) -> Config:
    write_settings(nini_home, scripted_model_settings(llm_server))
    return Config(
        {
            "ServerApp": {"jpserver_extensions": {"jupyter_ext": True}},
            "NiniExtensionApp": {"nini_home": str(nini_home)},
        }
    )


async def done_of_turn(api: Any, jp_ws_fetch: Any, session_id: str) -> dict[str, Any]:
    ws = await jp_ws_fetch("nini", "api", "sessions", session_id, "events")
    assert (await api("POST", "sessions", session_id, "ask", body={"message": "hi"})).status == 202
    while (event := json.loads(await asyncio.wait_for(ws.read_message(), 60)))["type"] != "done":
        pass
    ws.close()
    return event["data"]


async def test_a_price_saved_over_rest_gives_the_turns_cost(
    api: Any, jp_ws_fetch: Any, llm_server: ScriptedLLM, nini_home: Path
) -> None:
    session_id = await new_session(api)
    usage = {"prompt_tokens": 2000, "completion_tokens": 100}
    llm_server.reply(text("unpriced", usage=usage))
    unpriced = await done_of_turn(api, jp_ws_fetch, session_id)
    assert unpriced["usage"]["prompt_tokens"] == 2000 and unpriced["cost"] is None

    provider = next(p for p in (await api("GET", "models")).data["providers"] if p["name"] == "local")
    assert (provider["input_per_mtok"], provider["output_per_mtok"], provider["currency"]) == (None, None, None)
    priced = {**provider, "input_per_mtok": 1.0, "output_per_mtok": 2.0, "currency": "CNY"}
    saved = await api("PUT", "models", "providers", "local", body=priced)
    assert saved.data["provider"]["input_per_mtok"] == 1.0 and saved.data["provider"]["currency"] == "CNY"
    stored = json.loads((nini_home / "settings.json").read_text())["llm"]["providers"][0]
    assert (stored["input_per_mtok"], stored["output_per_mtok"], stored["currency"]) == (1.0, 2.0, "CNY")

    llm_server.reply(text("priced", usage=usage))
    assert (await done_of_turn(api, jp_ws_fetch, session_id))["cost"] == {
        "CNY": pytest.approx((2000 * 1 + 100 * 2) / 1e6)
    }

    refused = await api("PUT", "models", "providers", "local", body={**priced, "input_per_mtok": -1})
    assert (refused.status, refused.error["code"]) == (400, "INVALID_ARGUMENT")
    assert "input_per_mtok" in refused.error["message"]
