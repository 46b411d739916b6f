"""The providers over real HTTP: streaming, tool calls, Anthropic conversion, replay, and key hygiene."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from nini.agent.anthropic_provider import to_anthropic_messages
from nini.agent.llm import ModelRouter, ToolCall
from nini.config import LLMSettings
from nini.errors import ErrorCode, NiniError
from nini.logs import configure_logging
from tests.llm_server import Reply, ScriptedLLM, error, text

USER = [{"role": "user", "content": "hi"}]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "run_code",
            "description": "Run Python.",
            "parameters": {"type": "object", "properties": {"code": {"type": "string"}}, "required": ["code"]},
        },
    }
]
SECRET = "sk-test-" + "Q7w8E9r0T1y2U3i4O5p6"


def router(*providers: dict, environ: dict | None = None, **llm: Any) -> ModelRouter:
    return ModelRouter(LLMSettings(providers=list(providers), **llm), environ=environ or {})


def openai_provider(llm: ScriptedLLM, **fields: Any) -> dict:
    return {"name": "local", "model": "m", "base_url": llm.base_url, **fields}


def anthropic_provider(llm: ScriptedLLM, **fields: Any) -> dict:
    return {"name": "claude", "kind": "anthropic", "model": "claude-x", "base_url": llm.base_url, **fields}


def complete(r: ModelRouter, purpose: str = "chat", messages: list[dict] = USER, **options: Any):
    async def run():
        try:
            return await r.complete(purpose, messages, **options)
        finally:
            await r.aclose()

    return asyncio.run(run())


# -- OpenAI-compatible ---------------------------------------------------------------------------


def test_request_carries_messages_tools_and_options(llm_server: ScriptedLLM):
    llm_server.reply(text("ok"))
    complete(router(openai_provider(llm_server)), tools=TOOLS, temperature=0.2, max_tokens=99)
    [sent] = llm_server.requests
    assert sent["model"] == "m" and sent["messages"] == USER and sent["tools"] == TOOLS
    assert sent["temperature"] == 0.2 and sent["max_tokens"] == 99 and not sent.get("stream")
    assert llm_server.paths == ["/v1/chat/completions"]


def test_keyless_provider_sends_a_placeholder(llm_server: ScriptedLLM):
    llm_server.reply(text("ok"))
    complete(router(openai_provider(llm_server)))
    assert llm_server.request_headers[0]["authorization"] == "Bearer not-needed"


def test_non_streaming_tool_calls(llm_server: ScriptedLLM):
    llm_server.reply(
        Reply(
            content="Let me run it.",
            tool_calls=[
                {"name": "run_code", "arguments": {"code": "1+1"}, "id": "call_abc"},
                {"name": "load", "arguments": {"name": "iris"}},
            ],
        )
    )
    result = complete(router(openai_provider(llm_server)), tools=TOOLS)
    assert result.text == "Let me run it." and result.finish_reason == "tool_calls"
    assert result.tool_calls[0] == ToolCall("call_abc", "run_code", '{"code": "1+1"}')
    assert (result.tool_calls[1].name, json.loads(result.tool_calls[1].arguments)) == ("load", {"name": "iris"})
    assert result.usage == {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}


def test_streaming_text_deltas(llm_server: ScriptedLLM):
    llm_server.reply(Reply(content="The mean is 4.2.", chunks=4))
    seen: list[str] = []
    result = complete(router(openai_provider(llm_server)), on_text=seen.append)
    assert len(seen) == 4 and "".join(seen) == result.text == "The mean is 4.2."
    assert result.finish_reason == "stop" and result.usage["total_tokens"] == 15
    assert llm_server.requests[0]["stream"] is True


def test_streaming_with_an_async_callback(llm_server: ScriptedLLM):
    llm_server.reply(text("abcdef"))
    seen: list[str] = []

    async def on_text(delta: str) -> None:
        await asyncio.sleep(0)
        seen.append(delta)

    assert complete(router(openai_provider(llm_server)), on_text=on_text).text == "abcdef"
    assert seen == ["ab", "cd", "ef"]


def test_streamed_tool_calls_are_assembled(llm_server: ScriptedLLM):
    arguments = {"code": "import pandas as pd\nprint(pd.__version__)", "label": "ünïcode"}
    llm_server.reply(
        Reply(
            content="Running.",
            chunks=5,
            tool_calls=[
                {"name": "run_code", "arguments": arguments},
                {"name": "noop", "arguments": {}},
                {"name": "raw", "arguments": '{"broken": '},
            ],
        )
    )
    seen: list[str] = []
    result = complete(router(openai_provider(llm_server)), on_text=seen.append, tools=TOOLS)
    assert "".join(seen) == "Running." and result.finish_reason == "tool_calls"
    assert [c.name for c in result.tool_calls] == ["run_code", "noop", "raw"]
    assert json.loads(result.tool_calls[0].arguments) == arguments
    assert result.tool_calls[1].arguments == "{}"
    assert result.tool_calls[2].arguments == '{"broken": '  # exactly as sent, even when not JSON
    assert len({c.id for c in result.tool_calls}) == 3 and all(c.id.startswith("call_") for c in result.tool_calls)


def test_finish_reason_length_is_passed_on(llm_server: ScriptedLLM):
    llm_server.reply(Reply(content="cut", finish_reason="length"), Reply(content="cut", finish_reason="length"))
    assert complete(router(openai_provider(llm_server))).finish_reason == "length"
    assert complete(router(openai_provider(llm_server)), on_text=lambda _t: None).finish_reason == "length"


# -- Anthropic -----------------------------------------------------------------------------------

CONVERSATION = [
    {"role": "system", "content": "You analyse data."},
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "What is in this chart?"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
        ],
    },
    {
        "role": "assistant",
        "content": "Checking.",
        "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "run_code", "arguments": '{"code": "1+1"}'}},
            {"id": "call_2", "type": "function", "function": {"name": "run_code", "arguments": '{"code": "2"}'}},
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "2"},
    {"role": "tool", "tool_call_id": "call_2", "content": "2"},
    {"role": "user", "content": "And now?"},
]

EXPECTED_ANTHROPIC = [
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "What is in this chart?"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
        ],
    },
    {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Checking."},
            {"type": "tool_use", "id": "call_1", "name": "run_code", "input": {"code": "1+1"}},
            {"type": "tool_use", "id": "call_2", "name": "run_code", "input": {"code": "2"}},
        ],
    },
    {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "call_1", "content": "2"},
            {"type": "tool_result", "tool_use_id": "call_2", "content": "2"},
            {"type": "text", "text": "And now?"},
        ],
    },
]


def test_anthropic_conversion_round_trip_over_http(llm_server: ScriptedLLM):
    llm_server.reply(
        Reply(content="A bar chart.", tool_calls=[{"name": "run_code", "arguments": {"code": "df.describe()"}}])
    )
    result = complete(router(anthropic_provider(llm_server)), messages=CONVERSATION, tools=TOOLS, max_tokens=500)
    [sent] = llm_server.requests
    assert llm_server.paths == ["/v1/messages"]
    assert sent["system"] == "You analyse data." and sent["messages"] == EXPECTED_ANTHROPIC
    assert sent["tools"] == [
        {"name": "run_code", "description": "Run Python.", "input_schema": TOOLS[0]["function"]["parameters"]}
    ]
    assert sent["max_tokens"] == 500 and sent["model"] == "claude-x"
    assert result.text == "A bar chart." and result.finish_reason == "tool_calls"
    [call] = result.tool_calls
    assert call.name == "run_code" and json.loads(call.arguments) == {"code": "df.describe()"}
    assert result.usage == {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    assert (result.provider, result.model) == ("claude", "claude-x")


def test_anthropic_streaming(llm_server: ScriptedLLM):
    llm_server.reply(Reply(content="Streaming works.", tool_calls=[{"name": "noop", "arguments": {}}]))
    seen: list[str] = []
    result = complete(router(anthropic_provider(llm_server)), on_text=seen.append)
    assert len(seen) == 3 and "".join(seen) == result.text == "Streaming works."
    assert [(c.name, json.loads(c.arguments)) for c in result.tool_calls] == [("noop", {})]
    assert result.finish_reason == "tool_calls" and result.usage["total_tokens"] == 15
    assert llm_server.requests[0]["max_tokens"] == 4096  # Anthropic requires one


def test_anthropic_errors_and_fallback(llm_server: ScriptedLLM):
    llm_server.reply(error(529, retry_after_ms=1, message="overloaded"), model="claude-x")
    llm_server.reply(text("openai side"), model="m")
    r = router(anthropic_provider(llm_server), openai_provider(llm_server), max_retries=0)
    assert complete(r).provider == "local"
    llm_server.reply(error(401, message="bad key"), model="claude-x")
    with pytest.raises(NiniError) as caught:
        complete(router(anthropic_provider(llm_server), max_retries=0))
    assert caught.value.code is ErrorCode.UPSTREAM_ERROR and "401" in caught.value.message
    assert caught.value.details["status"] == 401


def test_anthropic_system_only_text_parts_and_plain_user():
    system, turns = to_anthropic_messages(
        [
            {"role": "system", "content": [{"type": "text", "text": "a"}]},
            {"role": "system", "content": "b"},
            {"role": "user", "content": "hello"},
            {"role": "assistant", "content": ""},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "x", "type": "function", "function": {"name": "f", "arguments": "not json"}}],
            },
        ]
    )
    assert system == "a\n\nb"
    assert turns == [
        {"role": "user", "content": [{"type": "text", "text": "hello"}]},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "x", "name": "f", "input": {"_raw_arguments": "not json"}}],
        },
    ]


# -- replay --------------------------------------------------------------------------------------


def write_script(path: Path, responses: dict) -> Path:
    path.write_text(json.dumps({"responses": responses}), encoding="utf-8")
    return path


def test_replay_per_purpose_queues_then_the_shared_one(tmp_path: Path):
    script = write_script(
        tmp_path / "demo.json",
        {
            "title_generation": [{"content": "Iris summary"}],
            "*": [
                {"content": "Let me look.", "tool_calls": [{"name": "run_code", "arguments": {"code": "df.head()"}}]},
                {"content": "Done.", "tool_calls": []},
            ],
        },
    )
    r = router({"name": "demo", "kind": "replay", "model": "recorded", "script": str(script)})

    async def run() -> list:
        seen: list[str] = []
        results = [
            await r.complete("title_generation", USER),
            await r.complete("chat", USER, on_text=seen.append),
            await r.complete("title_generation", USER),  # its own queue is empty now: "*"
        ]
        with pytest.raises(NiniError) as caught:
            await r.complete("chat", USER)
        return [results, seen, caught.value]

    results, seen, err = asyncio.run(run())
    assert [c.text for c in results] == ["Iris summary", "Let me look.", "Done."]
    assert "".join(seen) == "Let me look." and len(seen) == 3
    assert results[1].tool_calls == [ToolCall("call_1", "run_code", '{"code": "df.head()"}')]
    assert results[1].finish_reason == "tool_calls" and results[2].finish_reason == "stop"
    assert (results[0].provider, results[0].model) == ("demo", "recorded")
    assert err.code is ErrorCode.UPSTREAM_ERROR
    assert err.message == f"replay script {script} has no reply left for purpose chat; try nini models test demo"


def test_replay_keeps_its_place_across_event_loops_and_aclose(tmp_path: Path):
    script = write_script(tmp_path / "demo.json", {"*": [{"content": "one"}, {"content": "two"}]})
    r = router({"name": "demo", "kind": "replay", "model": "recorded", "script": str(script)})
    assert complete(r).text == "one"  # complete() closes the router after its loop
    assert complete(r).text == "two"


def test_replay_script_relative_to_nini_home(nini_home: Path):
    from nini.config import load_settings

    nini_home.mkdir(parents=True)
    write_script(nini_home / "demo.json", {"*": [{"content": "hello"}]})
    (nini_home / "settings.json").write_text(
        json.dumps({"llm": {"providers": [{"name": "demo", "kind": "replay", "model": "r", "script": "demo.json"}]}})
    )
    assert complete(ModelRouter(load_settings().llm, environ={})).text == "hello"


# -- keys never leak -----------------------------------------------------------------------------


def test_api_key_is_sent_but_never_logged_explained_or_raised(llm_server: ScriptedLLM, tmp_path: Path, nini_logger):
    log_path = configure_logging(tmp_path / "logs", "DEBUG")
    keyed = openai_provider(llm_server, name="keyed", api_key_env="NINI_TEST_API_KEY")
    r = router(keyed, environ={"NINI_TEST_API_KEY": SECRET}, max_retries=0)
    # the upstream echoes the key in its error text, as some servers do
    llm_server.reply(text("fine"), error(401, message=f"Incorrect API key provided: {SECRET}"))

    async def run() -> NiniError:
        await r.complete("chat", [{"role": "user", "content": "PROMPT-TEXT-42"}])
        with pytest.raises(NiniError) as caught:
            await r.complete("chat", USER)
        await r.aclose()
        return caught.value

    err = asyncio.run(run())
    assert [h["authorization"] for h in llm_server.request_headers] == [f"Bearer {SECRET}"] * 2
    for handler in nini_logger.handlers:
        handler.flush()
    logged = log_path.read_text(encoding="utf-8")
    surfaces = [logged, json.dumps(r.explain("chat")), str(err), json.dumps(err.to_dict()), repr(r)]
    for surface in surfaces:
        assert SECRET not in surface
    assert "PROMPT-TEXT-42" not in logged and "fine" not in logged
    calls = [json.loads(line)["data"] for line in logged.splitlines() if json.loads(line)["logger"] == "nini.agent.llm"]
    assert [c["outcome"] for c in calls] == ["ok", "UPSTREAM_ERROR"]
    assert calls[0]["purpose"] == "chat" and calls[0]["provider"] == "keyed" and calls[0]["model"] == "m"
    assert calls[0]["usage"]["total_tokens"] == 15 and isinstance(calls[0]["duration_ms"], int)
