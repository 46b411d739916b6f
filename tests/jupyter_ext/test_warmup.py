"""jupyter_ext.warmup: what a server warms for its first turn, and that warming never gets in the way
(a missing model, a cancellation on shutdown). How much faster the first turn gets is measured by
benchmarks/bench_ui.py, not asserted here."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from jupyter_ext.warmup import describe, warm_up
from nini.config import load_settings
from nini.runtime import Runtime
from tests.conftest import scripted_model_settings, write_settings
from tests.llm_server import ScriptedLLM, text


def runtime(home: Path, llm: ScriptedLLM | None) -> Runtime:
    write_settings(home, scripted_model_settings(llm))
    return Runtime(load_settings(home=home), project_dir=home)


async def test_the_chat_models_client_is_made_before_the_first_call_which_uses_it(nini_home: Path) -> None:
    with ScriptedLLM() as llm:
        warmed = runtime(nini_home, llm)
        try:
            took = await warm_up(warmed)
            assert {"store", "modules", "model SDK", "model clients", "tokenizer", "agent", "sandbox probe"} <= set(
                took
            )
            assert describe(took).startswith("nini: warmed up for the first turn in ")
            router = warmed.router
            made = dict(router._providers)  # the clients warm_up made, by provider, key and loop
            assert len(made) == 1
            llm.reply(text("hello"))
            answer = await router.complete("chat", [{"role": "user", "content": "hi"}])
            assert answer.text == "hello"
            assert router._providers == made  # the first call used the warmed client, it made none
            await router.prepare("chat")  # warming again makes nothing new
            assert router._providers == made
        finally:
            await warmed.aclose()


async def test_without_a_model_the_rest_is_warmed_and_nothing_fails(nini_home: Path) -> None:
    bare = runtime(nini_home, None)
    try:
        took = await warm_up(bare)
        assert "model clients" not in took  # NO_MODEL_AVAILABLE: the first question says so itself
        assert {"store", "modules", "tokenizer", "agent"} <= set(took)
    finally:
        await bare.aclose()


async def test_a_warm_up_cancelled_by_shutdown_leaves_the_runtime_closable(nini_home: Path) -> None:
    with ScriptedLLM() as llm:
        warming = runtime(nini_home, llm)
        task = asyncio.get_running_loop().create_task(warm_up(warming))
        await asyncio.sleep(0)  # under way
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await warming.aclose()
