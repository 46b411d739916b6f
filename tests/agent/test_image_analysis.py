"""image_analysis: an image goes to the model routed for purpose image_analysis, over real HTTP."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import runtime_harness
from tests.llm_server import ScriptedLLM, text

PNG_1x1 = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory, llm: ScriptedLLM) -> Iterator[Any]:
    providers = [
        {"name": "text", "kind": "openai", "base_url": llm.base_url, "model": "text-model"},
        {
            "name": "eyes",
            "kind": "openai",
            "base_url": llm.base_url,
            "model": "eyes-small",
            "vision_models": ["eyes-large"],
        },
    ]
    settings = {
        "llm": {
            "providers": providers,
            "max_retries": 0,
            "purposes": {"image_analysis": {"provider": "eyes", "model": "eyes-large"}},
        }
    }
    yield from runtime_harness(tmp_path_factory, settings)


def write_image(session: Any, name: str = "chart.png", data: bytes = PNG_1x1) -> str:
    path = session.workspace.root / "uploads" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return f"uploads/{name}"


def test_the_image_goes_to_the_vision_model(harness: Any, llm: ScriptedLLM) -> None:
    session = harness.session()
    image = write_image(session)
    llm.reply(text("A single white pixel."))
    result = harness.call(session, "image_analysis", image=image, question="What is this?")
    assert result.success, result.error
    assert (result.result["answer"], result.result["model"]) == ("A single white pixel.", "eyes-large")
    request = llm.requests[-1]
    assert request["model"] == "eyes-large"
    parts = request["messages"][0]["content"]
    assert parts[0] == {"type": "text", "text": "What is this?"}
    assert parts[1]["image_url"]["url"] == "data:image/png;base64," + base64.b64encode(PNG_1x1).decode()


@pytest.mark.slow
def test_a_chart_artifact_is_found_by_name(harness: Any, llm: ScriptedLLM) -> None:
    session = harness.session()
    made = harness.call(session, "run_code", code="import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])", label="line")
    png = [a for a in made.result["artifacts"] if a["format"] == "png"][0]
    llm.reply(text("A rising line."))
    result = harness.call(session, "image_analysis", image=png["name"])
    assert result.success and result.result["image"] == png["path"]
    url = llm.requests[-1]["messages"][0]["content"][1]["image_url"]["url"]
    assert url.startswith("data:image/png;base64,") and len(url) > 1000


def test_without_a_vision_model_the_error_says_so(tmp_path_factory: pytest.TempPathFactory, llm: ScriptedLLM) -> None:
    settings = {"llm": {"providers": [{"name": "text", "kind": "openai", "base_url": llm.base_url, "model": "m"}]}}
    gen = runtime_harness(tmp_path_factory, settings)
    bare = next(gen)
    try:
        session = bare.session()
        result = bare.call(session, "image_analysis", image=write_image(session))
    finally:
        gen.close()
    assert (result.success, result.error["code"]) == (False, "NO_MODEL_AVAILABLE")
    assert "vision" in result.error["message"]


@pytest.mark.parametrize(
    ("name", "data", "code"),
    [("notes.txt", b"hello", "INVALID_ARGUMENT"), ("missing.png", None, "NOT_FOUND")],
)
def test_bad_images_are_refused_before_any_model_call(
    harness: Any, llm: ScriptedLLM, name: str, data: bytes | None, code: str
) -> None:
    session = harness.session()
    image = write_image(session, name, data) if data is not None else f"uploads/{name}"
    before = len(llm.requests)
    result = harness.call(session, "image_analysis", image=image)
    assert (result.success, result.error["code"]) == (False, code)
    assert len(llm.requests) == before


def test_a_path_outside_the_workspace_is_refused(harness: Any) -> None:
    session = harness.session()
    result = harness.call(session, "image_analysis", image="../../../etc/passwd.png")
    assert result.success is False and result.error["code"] in ("INVALID_ARGUMENT", "NOT_FOUND", "POLICY_VIOLATION")
