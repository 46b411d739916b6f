"""A scripted OpenAI-compatible (and Anthropic-shaped) HTTP server for tests (DESIGN.md section 7).

No model is reachable from these machines, so tests that cover an LLM path start this server on
127.0.0.1 (random port), script the replies it gives, and configure a provider with its
``base_url`` exactly as a user would configure Ollama. The real SDK client, its retries, timeouts
and streaming are exercised over real HTTP. Standard library only::

    with ScriptedLLM() as llm:
        llm.reply(text("Hello"), tool_call("run_code", code="1+1"))
        llm.reply(error(429, retry_after_ms=1), text("after a retry"), model="gpt-x")
        ...                                   # point a provider at llm.base_url
        assert llm.requests[0]["messages"][-1]["content"] == "hi"

Each request pops the next reply queued for the model it names, else the next one queued for any
model; with nothing queued it answers 500 "script exhausted" so that a test fails visibly.
"""

from __future__ import annotations

import asyncio
import json
import select
import socket
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.timeouts import timeout

__all__ = ["Reply", "ScriptedLLM", "error", "text", "tool_call"]


@dataclass
class Reply:
    """One scripted answer.

    ``tool_calls`` items are ``{"name": str, "arguments": dict | str, "id"?: str}`` (a str is sent
    as the raw arguments text, e.g. to test malformed JSON). ``status != 200`` answers an error in
    the API's error shape with ``error_message`` and ``headers`` (e.g. ``retry-after-ms``). With
    ``status == 200`` and ``error_message`` set, a streamed answer sends its content and then an
    error event instead of finishing (a failure after text was streamed). ``delay_s`` waits before
    answering (timeouts, cancellation); ``hold`` waits until the test sets it (a model that thinks
    exactly as long as a test needs, with no timing); ``chunks`` is how many pieces streamed text
    is split into.
    """

    content: str | None = None
    tool_calls: list[dict] | None = None
    status: int = 200
    delay_s: float = 0.0
    hold: threading.Event | None = None
    headers: dict | None = None
    error_message: str | None = None
    finish_reason: str | None = None
    chunks: int = 3
    usage: dict = field(default_factory=lambda: {"prompt_tokens": 10, "completion_tokens": 5})


def text(content: str, **options: Any) -> Reply:
    """A plain text answer."""
    return Reply(content=content, **options)


def tool_call(name: str, /, **arguments: Any) -> Reply:
    """An answer with no text and one call of ``name`` with ``arguments``."""
    return Reply(content=None, tool_calls=[{"name": name, "arguments": arguments}])


def error(status: int, retry_after_ms: int | None = None, message: str | None = None) -> Reply:
    """An HTTP error answer; ``retry_after_ms`` sets the header the SDKs honour before retrying."""
    headers = {"retry-after-ms": str(retry_after_ms)} if retry_after_ms is not None else None
    return Reply(status=status, headers=headers, error_message=message or f"scripted error {status}")


class ScriptedLLM:
    """The server; a context manager, or ``start()`` / ``stop()``."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.request_headers: list[dict[str, str]] = []
        self.paths: list[str] = []
        # indexes into ``requests`` whose client hung up before its (delayed) answer was sent,
        # e.g. a cancelled or timed-out call; filled when the delay ends
        self.disconnected: list[int] = []
        self._queues: dict[str | None, deque[Reply]] = {None: deque()}
        self._lock = threading.Lock()
        self._arrived = threading.Condition(self._lock)  # notified at each request recorded
        self._stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._ids = 0

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> ScriptedLLM:
        handler = type("Handler", (_Handler,), {"llm": self})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True  # a handler still sleeping in delay_s never blocks stop()
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, name="scripted-llm", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # wakes handlers waiting out a delay
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> ScriptedLLM:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._server is not None, "server not started"
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # -- script ------------------------------------------------------------------------------

    def reply(self, *replies: Reply, model: str | None = None) -> None:
        """Queue ``replies`` for requests naming ``model`` (None: any model)."""
        with self._lock:
            self._queues.setdefault(model, deque()).extend(replies)

    def pending(self) -> int:
        """Replies still queued (all models)."""
        with self._lock:
            return sum(len(q) for q in self._queues.values())

    def clear(self) -> int:
        """Drop every queued reply (a test that stopped a run early); how many there were."""
        with self._lock:
            dropped = sum(len(q) for q in self._queues.values())
            for queue in self._queues.values():
                queue.clear()
        return dropped

    def reset(self) -> None:
        """Forget every request and queued reply: one server shared by a module's tests (each of
        which counts its requests from 0) starts each test as a fresh one would."""
        with self._lock:
            for queue in self._queues.values():
                queue.clear()
            self.requests.clear()
            self.request_headers.clear()
            self.paths.clear()
            self.disconnected.clear()

    def wait_for_requests(self, count: int, timeout_s: float = 60) -> None:
        """Until ``count`` requests have arrived in all: a model call is under way once its request is
        here (the event a test waits on instead of sleeping while the call starts)."""
        with self._arrived:
            if not self._arrived.wait_for(lambda: len(self.requests) >= count, timeout(timeout_s)):
                raise TimeoutError(f"{len(self.requests)} of {count} model requests arrived")

    async def async_wait_for_requests(self, count: int, timeout_s: float = 60) -> None:
        """:meth:`wait_for_requests` from a test on an event loop, which keeps running meanwhile."""
        await asyncio.to_thread(self.wait_for_requests, count, timeout_s)

    def _next_reply(self, model: str | None) -> Reply | None:
        with self._lock:
            for key in (model, None):
                queue = self._queues.get(key)
                if queue:
                    return queue.popleft()
        return None

    def _record(self, path: str, body: dict, headers: dict[str, str]) -> int:
        with self._lock:
            self.paths.append(path)
            self.requests.append(body)
            self.request_headers.append(headers)
            self._arrived.notify_all()
            return len(self.requests) - 1

    def _new_id(self, prefix: str) -> str:
        with self._lock:
            self._ids += 1
            return f"{prefix}{self._ids}"

    def _models(self) -> list[str]:
        with self._lock:
            return sorted(m for m in self._queues if m is not None)


class _Handler(BaseHTTPRequestHandler):
    llm: ScriptedLLM
    protocol_version = "HTTP/1.1"
    # headers and body go out in separate writes: without this, TCP delayed-ACK adds ~40 ms to each answer
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:  # keep pytest output clean
        pass

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            data = [{"id": m, "object": "model", "owned_by": "scripted"} for m in self.llm._models()]
            self._send_json(200, {"object": "list", "data": data})
        else:
            self._send_json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            body = {"_raw": raw.decode("utf-8", "replace")}
        index = self.llm._record(self.path, body, {k.lower(): v for k, v in self.headers.items()})
        anthropic = self.path.rstrip("/").endswith("/messages")
        if not anthropic and not self.path.rstrip("/").endswith("/chat/completions"):
            self._send_json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
            return
        reply = self.llm._next_reply(body.get("model"))
        if reply is None:
            reply = Reply(status=500, error_message="script exhausted", headers={"x-should-retry": "false"})
        if reply.delay_s or reply.hold is not None:
            if not self._wait(reply):
                return  # the server is stopping: drop the connection
            if self._client_gone():
                with self.llm._lock:
                    self.llm.disconnected.append(index)
                return
        try:
            if reply.status != 200:
                self._send_error(reply, anthropic)
            elif anthropic:
                self._send_anthropic(reply, body)
            else:
                self._send_openai(reply, body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client went away (timeout or cancellation)

    # -- shared ------------------------------------------------------------------------------

    def _wait(self, reply: Reply) -> bool:
        """Wait out ``delay_s``, then until ``hold`` is set; False when the server stops meanwhile."""
        if reply.delay_s and self.llm._stopping.wait(reply.delay_s):
            return False
        while reply.hold is not None and not reply.hold.wait(0.05):
            if self.llm._stopping.is_set():
                return False
        return True

    def _client_gone(self) -> bool:
        """Whether the client closed the connection (readable with nothing to read is EOF)."""
        readable, _, _ = select.select([self.connection], [], [], 0)
        if not readable:
            return False
        try:
            return self.connection.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True

    def _send_json(self, status: int, payload: dict, headers: dict | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, str(value))
        self.end_headers()
        self.wfile.write(data)

    def _send_error(self, reply: Reply, anthropic: bool) -> None:
        message = reply.error_message or f"scripted error {reply.status}"
        if anthropic:
            payload = {"type": "error", "error": {"type": "api_error", "message": message}}
        else:
            payload = {
                "error": {"message": message, "type": "scripted_error", "param": None, "code": str(reply.status)}
            }
        self._send_json(reply.status, payload, reply.headers)

    def _start_sse(self, headers: dict | None) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("connection", "close")
        for key, value in (headers or {}).items():
            self.send_header(key, str(value))
        self.end_headers()
        self.close_connection = True

    def _event(self, data: dict | str, event: str | None = None) -> None:
        text = data if isinstance(data, str) else json.dumps(data)
        prefix = f"event: {event}\n" if event else ""
        self.wfile.write(f"{prefix}data: {text}\n\n".encode())
        self.wfile.flush()

    def _calls(self, reply: Reply, prefix: str) -> list[dict]:
        calls = []
        for call in reply.tool_calls or []:
            arguments = call.get("arguments", {})
            calls.append(
                {
                    "id": call.get("id") or self.llm._new_id(prefix),
                    "name": call["name"],
                    "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
                    "input": arguments if isinstance(arguments, dict) else {},
                }
            )
        return calls

    # -- OpenAI chat completions -------------------------------------------------------------

    def _send_openai(self, reply: Reply, body: dict) -> None:
        model = body.get("model") or "scripted"
        calls = self._calls(reply, "call_")
        finish = reply.finish_reason or ("tool_calls" if calls else "stop")
        usage = {**reply.usage, "total_tokens": sum(reply.usage.values())}
        base = {"id": self.llm._new_id("chatcmpl-"), "created": int(time.time()), "model": model}
        if not body.get("stream"):
            message: dict[str, Any] = {"role": "assistant", "content": reply.content}
            if calls:
                message["tool_calls"] = [
                    {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
                    for c in calls
                ]
            choice = {"index": 0, "message": message, "finish_reason": finish, "logprobs": None}
            self._send_json(
                200, {**base, "object": "chat.completion", "choices": [choice], "usage": usage}, reply.headers
            )
            return

        def chunk(delta: dict, finish_reason: str | None = None) -> dict:
            choice = {"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}
            return {**base, "object": "chat.completion.chunk", "choices": [choice]}

        self._start_sse(reply.headers)
        self._event(chunk({"role": "assistant", "content": ""}))
        for piece in _split(reply.content or "", reply.chunks):
            self._event(chunk({"content": piece}))
        for index, call in enumerate(calls):
            pieces = _split(call["arguments"], max(reply.chunks, 2))
            first = {
                "index": index,
                "id": call["id"],
                "type": "function",
                "function": {"name": call["name"], "arguments": pieces[0] if pieces else ""},
            }
            self._event(chunk({"tool_calls": [first]}))
            for piece in pieces[1:]:
                self._event(chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}))
        if reply.error_message:
            self._event({"error": {"message": reply.error_message, "type": "server_error"}})
            return
        self._event(chunk({}, finish))
        if (body.get("stream_options") or {}).get("include_usage"):
            self._event({**base, "object": "chat.completion.chunk", "choices": [], "usage": usage})
        self._event("[DONE]")

    # -- Anthropic messages ------------------------------------------------------------------

    def _send_anthropic(self, reply: Reply, body: dict) -> None:
        model = body.get("model") or "scripted"
        calls = self._calls(reply, "toolu_")
        stop = reply.finish_reason or ("tool_use" if calls else "end_turn")
        usage = {
            "input_tokens": reply.usage.get("prompt_tokens", 0),
            "output_tokens": reply.usage.get("completion_tokens", 0),
        }
        blocks: list[dict] = [{"type": "text", "text": reply.content}] if reply.content else []
        blocks += [{"type": "tool_use", "id": c["id"], "name": c["name"], "input": c["input"]} for c in calls]
        message = {
            "id": self.llm._new_id("msg_"),
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": blocks,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": usage,
        }
        if not body.get("stream"):
            self._send_json(200, message, reply.headers)
            return
        self._start_sse(reply.headers)
        start = {**message, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 0}}
        self._event({"type": "message_start", "message": start}, "message_start")
        for index, block in enumerate(blocks):
            if block["type"] == "text":
                empty, kind, key, pieces = (
                    {"type": "text", "text": ""},
                    "text_delta",
                    "text",
                    _split(block["text"], reply.chunks),
                )
            else:
                empty = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
                kind, key, pieces = "input_json_delta", "partial_json", _split(json.dumps(block["input"]), reply.chunks)
            self._event({"type": "content_block_start", "index": index, "content_block": empty}, "content_block_start")
            for piece in pieces:
                delta = {"type": "content_block_delta", "index": index, "delta": {"type": kind, key: piece}}
                self._event(delta, "content_block_delta")
            self._event({"type": "content_block_stop", "index": index}, "content_block_stop")
        if reply.error_message:
            self._event({"type": "error", "error": {"type": "api_error", "message": reply.error_message}}, "error")
            return
        end = {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}, "usage": usage}
        self._event(end, "message_delta")
        self._event({"type": "message_stop"}, "message_stop")


def _split(text: str, pieces: int) -> list[str]:
    """``text`` in up to ``pieces`` consecutive non-empty parts (none for an empty text)."""
    if not text:
        return []
    size = max(1, -(-len(text) // max(1, pieces)))
    return [text[i : i + size] for i in range(0, len(text), size)]
