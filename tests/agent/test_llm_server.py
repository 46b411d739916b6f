"""The scripted LLM server itself: queues, error shape, SSE format, shutdown with a sleeping handler."""

from __future__ import annotations

import http.client
import json
import threading
import time
import urllib.error
import urllib.request

import openai
import pytest

from tests.llm_server import Reply, ScriptedLLM, error, text, tool_call
from tests.timeouts import timeout


def post(llm: ScriptedLLM, body: dict, path: str = "/chat/completions") -> tuple[int, dict, dict]:
    request = urllib.request.Request(
        llm.base_url + path, data=json.dumps(body).encode(), headers={"content-type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, dict(response.headers), json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), json.loads(exc.read())


def test_replies_come_from_the_models_queue_then_the_any_model_queue(llm_server: ScriptedLLM):
    llm_server.reply(text("any"))
    llm_server.reply(text("for b"), model="b")
    assert post(llm_server, {"model": "b"})[2]["choices"][0]["message"]["content"] == "for b"
    assert post(llm_server, {"model": "b"})[2]["choices"][0]["message"]["content"] == "any"
    status, _, body = post(llm_server, {"model": "a", "messages": [{"role": "user", "content": "hi"}]})
    assert status == 500 and body["error"]["message"] == "script exhausted"
    assert [r.get("model") for r in llm_server.requests] == ["b", "b", "a"]
    assert llm_server.requests[2]["messages"] == [{"role": "user", "content": "hi"}]
    assert len(llm_server.request_headers) == 3 and llm_server.pending() == 0


def test_errors_have_openai_shape_and_headers(llm_server: ScriptedLLM):
    llm_server.reply(error(429, retry_after_ms=5))
    status, headers, body = post(llm_server, {"model": "m"})
    assert status == 429
    assert {k.lower(): v for k, v in headers.items()}["retry-after-ms"] == "5"
    assert body["error"]["message"] == "scripted error 429"


def test_non_streaming_tool_call_shape(llm_server: ScriptedLLM):
    llm_server.reply(tool_call("run_code", code="1+1"))
    _, _, body = post(llm_server, {"model": "m"})
    choice = body["choices"][0]
    assert choice["finish_reason"] == "tool_calls" and choice["message"]["content"] is None
    [call] = choice["message"]["tool_calls"]
    assert call["type"] == "function" and call["function"]["name"] == "run_code"
    assert json.loads(call["function"]["arguments"]) == {"code": "1+1"}


def test_stream_is_what_the_openai_sdk_reads(llm_server: ScriptedLLM):
    llm_server.reply(Reply(content="Hello world", tool_calls=[{"name": "f", "arguments": {"x": 1}}], chunks=4))
    client = openai.OpenAI(base_url=llm_server.base_url, api_key="k", max_retries=0)
    stream = client.chat.completions.create(model="m", messages=[], stream=True, stream_options={"include_usage": True})
    chunks = list(stream)
    text_parts = [c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content]
    assert "".join(text_parts) == "Hello world" and len(text_parts) == 4
    arguments = "".join(
        tc.function.arguments or "" for c in chunks if c.choices for tc in c.choices[0].delta.tool_calls or []
    )
    assert json.loads(arguments) == {"x": 1}
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "tool_calls"
    assert chunks[-1].usage.total_tokens == 15
    client.close()


def test_anthropic_messages_and_models_list(llm_server: ScriptedLLM):
    llm_server.reply(Reply(content="hi", tool_calls=[{"name": "f", "arguments": {"a": 1}}]), model="claude")
    _, _, body = post(llm_server, {"model": "claude", "messages": []}, path="/messages")
    assert body["type"] == "message" and body["stop_reason"] == "tool_use"
    assert [b["type"] for b in body["content"]] == ["text", "tool_use"] and body["content"][1]["input"] == {"a": 1}
    with urllib.request.urlopen(llm_server.base_url + "/models", timeout=5) as response:
        assert [m["id"] for m in json.loads(response.read())["data"]] == ["claude"]


def test_stop_is_prompt_with_a_handler_sleeping():
    llm = ScriptedLLM().start()
    llm.reply(Reply(content="late", delay_s=600))
    thread = threading.Thread(
        target=lambda: pytest.raises((OSError, http.client.HTTPException), post, llm, {"model": "m"}), daemon=True
    )
    thread.start()
    llm.wait_for_requests(1)
    stopper = threading.Thread(target=llm.stop, daemon=True)
    stopper.start()
    stopper.join(timeout(30))  # the handler sleeps 600 s: a stop that waited for it would still be going
    assert not stopper.is_alive()
    thread.join(timeout(30))
    assert not thread.is_alive()


def test_a_client_that_hangs_up_is_recorded(llm_server: ScriptedLLM):
    hold = threading.Event()  # answered only once the client has given up
    llm_server.reply(Reply(content="late", hold=hold))
    with pytest.raises(TimeoutError):
        post_with_timeout = urllib.request.Request(llm_server.base_url + "/chat/completions", data=b"{}")
        urllib.request.urlopen(post_with_timeout, timeout=0.05)
    hold.set()
    deadline = time.monotonic() + timeout(30)
    while not llm_server.disconnected and time.monotonic() < deadline:
        time.sleep(0.02)
    assert llm_server.disconnected == [0]


def test_a_held_reply_answers_once_the_test_lets_it(llm_server: ScriptedLLM):
    hold = threading.Event()
    llm_server.reply(text("thought long", hold=hold))
    answers: list[dict] = []
    thread = threading.Thread(target=lambda: answers.append(post(llm_server, {"model": "m"})[2]), daemon=True)
    thread.start()
    while not llm_server.requests:
        time.sleep(0.01)
    thread.join(timeout=0.3)
    assert thread.is_alive() and answers == []  # the model is still "thinking"
    hold.set()
    thread.join(timeout(30))
    assert answers[0]["choices"][0]["message"]["content"] == "thought long"
