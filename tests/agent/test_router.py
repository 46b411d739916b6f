"""ModelRouter: purpose chains, why a candidate is unusable, and fallback between providers over HTTP."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from nini.agent.llm import FALLBACK_PURPOSE, PURPOSES, ModelChoice, ModelRouter
from nini.config import LLMSettings
from nini.errors import ErrorCode, NiniError
from tests.llm_server import Reply, ScriptedLLM, error, text
from tests.timeouts import timeout

USER = [{"role": "user", "content": "hi"}]


def settings(*providers: dict, **llm: Any) -> LLMSettings:
    return LLMSettings(providers=list(providers), **llm)


def provider(name: str, model: str = "", **fields: Any) -> dict:
    return {"name": name, "model": model or f"{name}-default", "base_url": "http://127.0.0.1:9/v1", **fields}


def chain(llm: LLMSettings, purpose: str, environ: dict | None = None, **options: Any) -> list[tuple[str, str, str]]:
    return [(c.provider, c.model, c.source) for c in ModelRouter(llm, environ=environ or {}).chain(purpose, **options)]


# -- chain order ---------------------------------------------------------------------------------

THREE = (provider("a"), provider("b"), provider("c"))

CHAINS = [
    # (settings, purpose, expected chain)
    (
        settings(*THREE),
        "chat",
        [("a", "a-default", "priority"), ("b", "b-default", "priority"), ("c", "c-default", "priority")],
    ),
    (
        settings(*THREE, preferred_provider="c"),
        "chat",
        [("c", "c-default", "preferred"), ("a", "a-default", "priority"), ("b", "b-default", "priority")],
    ),
    (
        settings(*THREE, purposes={"chat": {"provider": "b", "model": "big"}}),
        "chat",
        [
            ("b", "big", "purpose:chat"),
            ("a", "a-default", "priority"),
            ("b", "b-default", "priority"),
            ("c", "c-default", "priority"),
        ],
    ),
    # provider only: that provider's default model (deduplicated against the priority entry)
    (
        settings(*THREE, purposes={"fast": {"provider": "c"}}),
        "fast",
        [("c", "c-default", "purpose:fast"), ("a", "a-default", "priority"), ("b", "b-default", "priority")],
    ),
    # model only: the preferred provider with that model, else the first provider
    (
        settings(*THREE, preferred_provider="b", purposes={"fast": {"model": "tiny"}}),
        "fast",
        [
            ("b", "tiny", "purpose:fast"),
            ("b", "b-default", "preferred"),
            ("a", "a-default", "priority"),
            ("c", "c-default", "priority"),
        ],
    ),
    (
        settings(*THREE, purposes={"fast": {"model": "tiny"}}),
        "fast",
        [
            ("a", "tiny", "purpose:fast"),
            ("a", "a-default", "priority"),
            ("b", "b-default", "priority"),
            ("c", "c-default", "priority"),
        ],
    ),
    # fallback purposes, recursively: deep_reasoning -> planning -> chat
    (
        settings(
            *THREE,
            preferred_provider="a",
            purposes={
                "deep_reasoning": {"provider": "c", "model": "r1"},
                "planning": {"provider": "b", "model": "plan"},
                "chat": {"provider": "a", "model": "chat"},
            },
        ),
        "deep_reasoning",
        [
            ("c", "r1", "purpose:deep_reasoning"),
            ("b", "plan", "fallback:planning"),
            ("a", "chat", "fallback:chat"),
            ("a", "a-default", "preferred"),
            ("b", "b-default", "priority"),
            ("c", "c-default", "priority"),
        ],
    ),
    (
        settings(*THREE, purposes={"chat": {"provider": "b", "model": "chat"}}),
        "deep_reasoning",
        [
            ("b", "chat", "fallback:chat"),
            ("a", "a-default", "priority"),
            ("b", "b-default", "priority"),
            ("c", "c-default", "priority"),
        ],
    ),
    # the same (provider, model) from several sources is listed once, where it first appears
    (
        settings(*THREE, preferred_provider="a", purposes={"summarize": {"provider": "a"}, "chat": {"provider": "a"}}),
        "summarize",
        [("a", "a-default", "purpose:summarize"), ("b", "b-default", "priority"), ("c", "c-default", "priority")],
    ),
]


@pytest.mark.parametrize(("llm", "purpose", "expected"), CHAINS)
def test_chain_order(llm: LLMSettings, purpose: str, expected: list):
    assert chain(llm, purpose) == expected


def test_every_fallback_chain_ends_at_chat():
    for purpose in PURPOSES:
        seen = [purpose]
        while seen[-1] in FALLBACK_PURPOSE:
            seen.append(FALLBACK_PURPOSE[seen[-1]])
        assert seen[-1] == "chat" and len(seen) == len(set(seen))


def test_chain_returns_model_choices():
    [choice] = ModelRouter(settings(provider("a")), environ={}).chain("chat")
    assert choice == ModelChoice("a", "a-default", "priority")


# -- unusable candidates -------------------------------------------------------------------------


def test_unusable_reasons(tmp_path: Path):
    llm = settings(
        provider("keyed", api_key_env="NINI_TEST_MISSING_KEY"),
        provider("empty-key", api_key_env="NINI_TEST_EMPTY_KEY"),
        provider("off", enabled=False),
        provider("replay-missing", kind="replay", script=str(tmp_path / "nope.json")),
        provider("replay-none", kind="replay"),
        provider("ok"),
        purposes={"chat": {"provider": "ghost", "model": "m"}},
    )
    explained = ModelRouter(llm, environ={"NINI_TEST_EMPTY_KEY": ""}).explain("chat")
    reasons = {e["provider"]: e["reason"] for e in explained}
    assert reasons == {
        "ghost": "no provider named ghost",
        "keyed": "environment variable NINI_TEST_MISSING_KEY (its API key) is not set; set the "
        "variable NINI_TEST_MISSING_KEY",
        "empty-key": "environment variable NINI_TEST_EMPTY_KEY (its API key) is not set; set the "
        "variable NINI_TEST_EMPTY_KEY",
        "off": "provider off is disabled",
        "replay-missing": f"replay script {tmp_path / 'nope.json'} does not exist",
        "replay-none": "replay provider replay-none has no script",
        "ok": None,
    }
    assert [e["usable"] for e in explained] == [False] * 6 + [True]
    assert explained[0] == {
        "provider": "ghost",
        "model": "m",
        "source": "purpose:chat",
        "usable": False,
        "reason": "no provider named ghost",
    }
    assert chain(llm, "chat") == [("ok", "ok-default", "priority")]


def test_keys_are_read_from_os_environ_at_call_time(monkeypatch: pytest.MonkeyPatch):
    router = ModelRouter(settings(provider("keyed", api_key_env="NINI_TEST_KEY_LATER")))
    with pytest.raises(NiniError):
        router.chain("chat")
    monkeypatch.setenv("NINI_TEST_KEY_LATER", "value")
    assert [c.provider for c in router.chain("chat")] == ["keyed"]


def test_no_model_available_names_the_purpose_and_every_candidate():
    llm = settings(
        provider("off", enabled=False), provider("keyed", api_key_env="NINI_TEST_K"), preferred_provider="ghost"
    )
    with pytest.raises(NiniError) as caught:
        ModelRouter(llm, environ={}).chain("planning")
    err = caught.value
    assert err.code is ErrorCode.NO_MODEL_AVAILABLE
    for part in ("planning", "ghost", "no provider named ghost", "off", "disabled", "keyed", "NINI_TEST_K"):
        assert part in err.message
    assert [c["provider"] for c in err.details["candidates"]] == ["ghost", "off", "keyed"]


def test_no_providers_at_all():
    with pytest.raises(NiniError) as caught:
        ModelRouter(settings(), environ={}, language="en").chain("chat")
    assert caught.value.code is ErrorCode.NO_MODEL_AVAILABLE
    assert caught.value.message == (
        "no model is configured; add one, e.g. "
        "nini models add ollama --base-url http://127.0.0.1:11434/v1 --model qwen2.5:7b"
    )


def test_unknown_purpose_is_invalid_argument():
    router = ModelRouter(settings(provider("a")), environ={})
    for call in (router.chain, router.explain):
        with pytest.raises(NiniError) as caught:
            call("poetry")
        assert caught.value.code is ErrorCode.INVALID_ARGUMENT and "poetry" in caught.value.message
    with pytest.raises(NiniError) as caught:
        asyncio.run(router.complete("poetry", USER))
    assert caught.value.code is ErrorCode.INVALID_ARGUMENT


def test_vision_keeps_only_vision_models():
    llm = settings(
        provider("text-only"),
        provider("seeing", model="small", vision_models=["eye-1", "eye-2"]),
        purposes={"image_analysis": {"provider": "seeing", "model": "eye-2"}, "chat": {"provider": "text-only"}},
    )
    assert chain(llm, "image_analysis", require_vision=True) == [
        ("seeing", "eye-2", "purpose:image_analysis"),
        ("seeing", "eye-1", "priority"),  # a provider's vision models are offered after its default
    ]
    explained = ModelRouter(llm, environ={}).explain("image_analysis", require_vision=True)
    assert {e["reason"] for e in explained if not e["usable"]} == {
        "model text-only-default is not in provider text-only's vision_models",
        "model small is not in provider seeing's vision_models",
    }
    assert chain(llm, "image_analysis")[0] == ("seeing", "eye-2", "purpose:image_analysis")
    with pytest.raises(NiniError) as caught:
        ModelRouter(settings(provider("text-only")), environ={}).chain("chat", require_vision=True)
    assert caught.value.code is ErrorCode.NO_MODEL_AVAILABLE and "vision" in caught.value.message


# -- calls over HTTP -----------------------------------------------------------------------------


def served(llm: ScriptedLLM, *models: str, **options: Any) -> LLMSettings:
    """One provider per model, all pointing at ``llm``; named p-<model>."""
    return settings(*({"name": f"p-{m}", "model": m, "base_url": llm.base_url} for m in models), **options)


def complete(router: ModelRouter, purpose: str = "chat", **options: Any):
    async def run():
        try:
            return await router.complete(purpose, USER, **options)
        finally:
            await router.aclose()

    return asyncio.run(run())


def test_retries_429_and_503_then_succeeds(llm_server: ScriptedLLM):
    llm_server.reply(error(429, retry_after_ms=1), error(503, retry_after_ms=1), text("finally"))
    result = complete(ModelRouter(served(llm_server, "a", max_retries=3), environ={}))
    assert result.text == "finally" and (result.provider, result.model) == ("p-a", "a")
    assert len(llm_server.requests) == 3


def test_falls_back_when_the_first_provider_keeps_failing(llm_server: ScriptedLLM):
    llm_server.reply(*[error(500, retry_after_ms=1)] * 2, model="a")
    llm_server.reply(text("from b"), model="b")
    result = complete(ModelRouter(served(llm_server, "a", "b", max_retries=1), environ={}))
    assert (result.text, result.provider) == ("from b", "p-b")
    assert [r["model"] for r in llm_server.requests] == ["a", "a", "b"]


def test_falls_back_when_a_provider_is_unreachable(llm_server: ScriptedLLM):
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        dead_port = probe.getsockname()[1]
    llm_server.reply(text("alive"))
    llm = settings(
        {"name": "dead", "model": "x", "base_url": f"http://127.0.0.1:{dead_port}/v1"},
        {"name": "live", "model": "y", "base_url": llm_server.base_url},
        max_retries=0,
    )
    assert complete(ModelRouter(llm, environ={})).provider == "live"


def test_all_failing_raises_the_last_error_with_every_attempt(llm_server: ScriptedLLM):
    llm_server.reply(error(500, retry_after_ms=1, message="a is down"), model="a")
    llm_server.reply(error(502, retry_after_ms=1, message="b is down"), model="b")
    with pytest.raises(NiniError) as caught:
        complete(ModelRouter(served(llm_server, "a", "b", max_retries=0), environ={}))
    err = caught.value
    assert err.code is ErrorCode.UPSTREAM_ERROR
    assert "502" in err.message and "p-b" in err.message and "b is down" in err.message
    assert err.details["status"] == 502
    assert [(a["provider"], a["model"], a["code"]) for a in err.details["attempts"]] == [
        ("p-a", "a", "UPSTREAM_ERROR"),
        ("p-b", "b", "UPSTREAM_ERROR"),
    ]
    assert "a is down" in err.details["attempts"][0]["message"]


def test_a_client_error_is_not_retried_but_falls_back(llm_server: ScriptedLLM):
    llm_server.reply(error(400, message="bad request"), model="a")
    llm_server.reply(text("b answers"), model="b")
    assert complete(ModelRouter(served(llm_server, "a", "b", max_retries=3), environ={})).text == "b answers"
    assert [r["model"] for r in llm_server.requests] == ["a", "b"]


def test_no_fallback_after_text_was_streamed(llm_server: ScriptedLLM):
    llm_server.reply(Reply(content="partial answer", error_message="connection lost"), model="a")
    llm_server.reply(text("b would answer"), model="b")
    seen: list[str] = []
    with pytest.raises(NiniError) as caught:
        complete(ModelRouter(served(llm_server, "a", "b"), environ={}), on_text=seen.append)
    assert caught.value.code is ErrorCode.UPSTREAM_ERROR and "connection lost" in caught.value.message
    assert "".join(seen) == "partial answer"
    assert [r["model"] for r in llm_server.requests] == ["a"] and llm_server.pending() == 1


def test_streamed_failure_before_any_text_still_falls_back(llm_server: ScriptedLLM):
    llm_server.reply(Reply(content=None, error_message="overloaded"), model="a")
    llm_server.reply(text("b answers"), model="b")
    seen: list[str] = []
    result = complete(ModelRouter(served(llm_server, "a", "b"), environ={}), on_text=seen.append)
    assert result.text == "b answers" and "".join(seen) == "b answers"


def test_request_timeout(llm_server: ScriptedLLM):
    llm_server.reply(Reply(content="too late", delay_s=60))  # a timeout that did not hold would get it
    with pytest.raises(NiniError) as caught:
        complete(ModelRouter(served(llm_server, "a", max_retries=0), environ={}), timeout_s=0.3)
    assert caught.value.code is ErrorCode.TIMEOUT and "p-a" in caught.value.message
    assert caught.value.details["attempts"][0]["code"] == "TIMEOUT"


def test_settings_timeout_applies_when_the_call_sets_none(llm_server: ScriptedLLM):
    llm_server.reply(Reply(content="too late", delay_s=60))
    with pytest.raises(NiniError) as caught:
        complete(ModelRouter(served(llm_server, "a", max_retries=0, request_timeout_s=0.3), environ={}))
    assert caught.value.code is ErrorCode.TIMEOUT


@pytest.mark.parametrize("stream", [False, True])
def test_cancellation_propagates_at_once_and_closes_the_request(llm_server: ScriptedLLM, stream: bool):
    hold = threading.Event()  # the model answers only after the cancel has come through
    llm_server.reply(Reply(content="never", hold=hold), model="a")
    llm_server.reply(text("fallback must not run"), model="b")
    router = ModelRouter(served(llm_server, "a", "b"), environ={})

    async def run() -> None:
        task = asyncio.create_task(router.complete("chat", USER, on_text=(lambda _t: None) if stream else None))
        await llm_server.async_wait_for_requests(1)
        task.cancel()
        # at once: without the answer, which is held (a cancel that waited for it would wait forever)
        await asyncio.wait({task}, timeout=timeout(30))
        assert task.done()
        with pytest.raises(asyncio.CancelledError):
            await task
        await router.aclose()

    try:
        asyncio.run(run())
    finally:
        hold.set()  # the handler then finds the client gone
    deadline = time.monotonic() + timeout(30)
    while not llm_server.disconnected and time.monotonic() < deadline:
        time.sleep(0.02)
    assert llm_server.disconnected == [0], "the HTTP request was not closed"
    assert len(llm_server.requests) == 1


def test_a_broken_replay_script_falls_back(tmp_path: Path, llm_server: ScriptedLLM):
    script = tmp_path / "script.json"
    script.write_text("{not json")
    llm_server.reply(text("unused"))
    llm = settings(
        {"name": "r", "kind": "replay", "model": "m", "script": str(script)},
        {"name": "live", "model": "y", "base_url": llm_server.base_url},
    )
    # a broken script is an upstream failure of that provider: the next one answers
    assert complete(ModelRouter(llm, environ={})).provider == "live"


def test_one_router_serves_several_event_loops(llm_server: ScriptedLLM):
    # the CLI may call asyncio.run more than once with the runtime's one router
    llm_server.reply(text("first"), text("second"))
    router = ModelRouter(served(llm_server, "a"), environ={})
    assert asyncio.run(router.complete("chat", USER)).text == "first"
    assert complete(router).text == "second"


def test_unreachable_message_names_the_provider():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        dead_port = probe.getsockname()[1]
    llm = settings({"name": "dead", "model": "x", "base_url": f"http://127.0.0.1:{dead_port}/v1"}, max_retries=0)
    with pytest.raises(NiniError) as caught:
        complete(ModelRouter(llm, environ={}))
    assert caught.value.code is ErrorCode.UPSTREAM_ERROR
    assert caught.value.message.startswith("cannot reach provider dead")


def test_doctor_shows_each_purposes_chain_and_why_none(nini_home: Path):
    from nini.config import load_settings
    from nini.doctor import run_checks

    nini_home.mkdir(parents=True)
    (nini_home / "settings.json").write_text(
        json.dumps(
            {
                "llm": {
                    "providers": [provider("local"), provider("cloud", api_key_env="NINI_TEST_DOCTOR_KEY")],
                    "purposes": {"planning": {"provider": "cloud", "model": "thinker"}},
                }
            }
        )
    )
    checks = {c.name: c for c in run_checks(load_settings()) if c.name.startswith("model")}
    assert set(checks) == {f"model {p}" for p in PURPOSES}
    assert not any(c.required for c in checks.values())
    deep = checks["model deep_reasoning"]
    assert deep.ok and deep.detail.startswith(
        "local/local-default (priority); skipped: cloud/thinker (fallback:planning)"
    )
    assert "NINI_TEST_DOCTOR_KEY" in deep.detail
    assert not checks["model image_analysis"].ok and "vision" in checks["model image_analysis"].detail


def test_doctor_without_providers(nini_home: Path):
    from nini.config import load_settings
    from nini.doctor import run_checks

    [check] = [c for c in run_checks(load_settings()) if c.name.startswith("model")]
    assert check.name == "models" and not check.ok and "no LLM provider configured" in check.detail
