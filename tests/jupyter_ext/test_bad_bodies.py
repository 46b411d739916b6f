"""Bad input at the REST edge is INVALID_ARGUMENT (or TOO_LARGE), never INTERNAL (issue 36, item 5).

Every route that takes a JSON body (enumerated from ``jupyter_ext.handlers.routes()``, so a new one
must be listed in ``BODY_ROUTES`` or ``NOT_JSON`` below) is sent JSON nested 10,000 deep, a
5,000-digit integer, a lone surrogate, an unknown field, a field of the wrong type and a body that is
no object: each is a 400 INVALID_ARGUMENT envelope naming what was wrong, and the server answers the
next request. Then ids of the wrong shape or length in paths and bodies, typed query arguments
(``since``, ``limit``) of 5,000 digits, and titles and labels over ``limits.*`` (TOO_LARGE).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from jupyter_ext.handlers import UnknownRouteHandler, routes
from jupyter_ext.handlers.files import FilesHandler
from jupyter_ext.handlers.mcp import MCPHandler
from tests.jupyter_ext.conftest import new_session, r_usable

# (route pattern, verb) -> (path below /nini/api/ with {s} for a session id, a body of a wrong type)
BODY_ROUTES: dict[tuple[str, str], tuple[str, Any]] = {
    (r"/nini/api/skills", "post"): ("skills", {"name": 7, "description": "d"}),
    (r"/nini/api/skills/([^/]+)/source", "put"): ("skills/data-quality-check/source", {"content": 7}),
    (r"/nini/api/skills/([^/]+)/enabled", "put"): ("skills/run_code/enabled", {"enabled": "yes"}),
    (r"/nini/api/skills/([^/]+)", "post"): ("skills/refresh", [1]),
    (r"/nini/api/models/test", "post"): ("models/test", {"name": 7}),
    (r"/nini/api/models/key-variable", "post"): ("models/key-variable", {"name": 7}),
    (r"/nini/api/models/providers/?([^/]*)", "put"): ("models/providers/p", {"model": 7}),
    (r"/nini/api/sessions", "post"): ("sessions", {"title": 7}),
    (r"/nini/api/sessions/([^/]+)", "patch"): ("sessions/{s}", {"title": 7}),
    (r"/nini/api/sessions/([^/]+)/run-code", "post"): ("sessions/{s}/run-code", {"code": 7}),
    (r"/nini/api/sessions/([^/]+)/run-r-code", "post"): ("sessions/{s}/run-r-code", {"code": 7}),
    (r"/nini/api/ask", "post"): ("ask", {"message": 7}),
    (r"/nini/api/sessions/([^/]+)/ask", "post"): ("sessions/{s}/ask", {"message": "hi", "stage": 7}),
    (r"/nini/api/sessions/([^/]+)/cancel", "post"): ("sessions/{s}/cancel", "[]"),
    (r"/nini/api/sessions/([^/]+)/approvals/([^/]+)", "post"): ("sessions/{s}/approvals/a123", {"approve": "yes"}),
    (r"/nini/api/sessions/([^/]+)/proposals/([^/]+)", "post"): (
        "sessions/{s}/proposals/p1",
        {"decision": "accept", "ran": "yes"},
    ),
    (r"/nini/api/experience/pending", "post"): ("experience/pending", {"text": 7}),
    (r"/nini/api/experience/pending/([0-9a-f]+)", "put"): ("experience/pending/abc123", {"alternatives": 7}),
    (r"/nini/api/experience/plan", "post"): ("experience/plan", {"ids": "abc"}),
    (r"/nini/api/experience/deposit", "post"): ("experience/deposit", {"ids": ["abc"], "confirm": "yes"}),
    (r"/nini/api/experience/entries/(team|project)/(EXP-\d+)/deprecate", "post"): (
        "experience/entries/team/EXP-0001/deprecate",
        {"confirm": True, "replaced_by": 7},
    ),
    (r"/nini/api/preferences", "post"): ("preferences", {"key": 7, "value": 1}),
    (r"/nini/api/preferences/switches", "put"): ("preferences/switches", {"learning": "yes"}),
    (r"/nini/api/preferences/(\d+)", "put"): ("preferences/1", {"confidence": "high"}),
    (r"/nini/api/feedback", "post"): ("feedback", {"run_id": 7, "action": "accept"}),
    (r"/nini/api/sessions/([^/]+)/report", "post"): ("sessions/{s}/report", {"title": 7}),
}
# Routes whose body is not a JSON object nini reads: an uploaded file's bytes, MCP's JSON-RPC (the SDK's).
NOT_JSON = {FilesHandler, MCPHandler}

DEEP = "[" * 10_000 + "]" * 10_000
BAD_BODIES = {
    "nested 10,000 deep": '{"title": ' + DEEP + "}",
    "a 5,000-digit integer": '{"title": ' + "9" * 5000 + "}",
    "a lone surrogate": '{"title": "\\ud800"}',
    "an unknown field": '{"zzz_unknown": 1}',
    "no object": "[1, 2]",
    "NaN": '{"title": NaN}',
}


def body_routes() -> set[tuple[str, str]]:
    """Every (pattern, verb) of a nini handler that may take a body (POST, PUT, PATCH)."""
    found = set()
    for pattern, handler, *_ in routes():
        if handler is UnknownRouteHandler or handler in NOT_JSON:
            continue
        for verb in ("post", "put", "patch"):
            if callable(getattr(handler, verb, None)) and getattr(handler, verb) is not getattr(
                UnknownRouteHandler.__mro__[1], verb
            ):
                found.add((pattern, verb))
    return found


def test_every_route_that_takes_a_body_is_listed() -> None:
    assert body_routes() == set(BODY_ROUTES)


def assert_invalid(reply: Any, what: str) -> None:
    assert (reply.status, reply.error["code"]) == (400, "INVALID_ARGUMENT"), (what, reply.status, reply.body)


async def still_answers(api: Any) -> None:
    assert (await api("GET", "ui")).status == 200


def skip_r(path: str, case: str) -> bool:
    """run-r-code checks its arguments (the skill's own model) only where R can run."""
    return path.endswith("run-r-code") and case in ("an unknown field", "wrong type") and not r_usable()[0]


async def test_bad_bodies_are_invalid_argument_on_every_route(api: Any) -> None:
    session_id = await new_session(api)
    for (_pattern, verb), (path, wrong) in BODY_ROUTES.items():
        url = path.format(s=session_id).split("/")
        cases = {**BAD_BODIES, "wrong type": wrong if isinstance(wrong, str) else json.dumps(wrong)}
        for case, body in cases.items():
            if skip_r(path, case):
                continue
            reply = await api(verb.upper(), *url, body=body)
            assert_invalid(reply, f"{verb.upper()} {path}: {case}")
            if case != "no object" and case != "wrong type":
                assert reply.error["message"], (path, case)
        await still_answers(api)


async def test_the_field_is_named(api: Any) -> None:
    session_id = await new_session(api)
    deep = await api("PATCH", "sessions", session_id, body='{"title": ' + DEEP + "}")
    assert "64" in deep.error["message"]
    digits = await api("POST", "sessions", body='{"title": ' + "9" * 5000 + "}")
    assert "title" in digits.error["message"] and "64-bit" in digits.error["message"]
    surrogate = await api("POST", "sessions", session_id, "run-code", body='{"code": "x = \\"\\ud800\\""}')
    assert_invalid(surrogate, "surrogate in code")
    assert "code" in surrogate.error["message"] and "surrogate" in surrogate.error["message"]
    unknown = await api("POST", "preferences", body={"key": "k", "value": 1, "colour": "red"})
    assert_invalid(unknown, "unknown preference field")
    assert "colour" in unknown.error["message"]
    assert (await api("GET", "preferences")).data["preferences"] == []  # nothing stored
    nested = await api("POST", "preferences", body={"key": "k", "value": {"a": "\ud800"}})
    assert_invalid(nested, "surrogate deep in a value")
    assert "value.a" in nested.error["message"]


async def test_ids_of_the_wrong_shape_are_invalid_argument(api: Any) -> None:
    session_id = await new_session(api)
    long_id = "a" * 10_000
    cases = [
        ("GET", ["preferences", "9" * 30], None),
        ("PUT", ["preferences", "9" * 30], {"value": 1}),
        ("DELETE", ["preferences", "9" * 30], None),
        ("GET", ["sessions", long_id], None),
        ("POST", ["sessions", session_id, "approvals", long_id], {"decision": "once"}),
        ("POST", ["sessions", session_id, "proposals", long_id], {"decision": "accept"}),
        ("PUT", ["experience", "pending", "a" * 10_000], {"title": "t"}),
        ("DELETE", ["experience", "pending", "a" * 10_000], None),
        ("GET", ["skills", long_id], None),
        ("PUT", ["skills", long_id, "enabled"], {"enabled": True}),
        ("PUT", ["models", "providers", long_id], {"model": "m"}),
        ("POST", ["experience", "entries", "team", "EXP-" + "9" * 30, "deprecate"], {"confirm": True}),
        ("POST", ["sessions"], {"id": long_id}),
        ("POST", ["feedback"], {"run_id": long_id, "action": "accept"}),
        ("POST", ["sessions", session_id, "run-code"], {"code": "x = 1", "kernel_id": long_id}),
        ("POST", ["experience", "plan"], {"ids": [long_id]}),
        ("GET", ["sessions"], {"limit": "9" * 5000}),
        ("GET", ["sessions"], {"limit": "²"}),
    ]
    for method, path, body in cases:
        if method == "GET" and body is not None:
            reply = await api(method, *path, params=body)
        else:
            reply = await api(method, *path, body=body)
        assert_invalid(reply, f"{method} {'/'.join(p[:20] for p in path)}")
        assert len(reply.raw) < 2000, "the refusal does not echo the whole id"
    await still_answers(api)


async def test_a_5000_digit_since_is_refused_before_the_socket(api: Any, jp_ws_fetch: Any) -> None:
    from tornado.httpclient import HTTPClientError

    session_id = await new_session(api)
    for since in ("9" * 5000, "²"):
        with pytest.raises(HTTPClientError) as refused:
            await jp_ws_fetch("nini", "api", "sessions", session_id, "events", params={"since": since})
        assert refused.value.code == 400
    await still_answers(api)


async def test_over_long_titles_and_labels_are_too_large(api: Any, nini_home: Path) -> None:
    session_id = await new_session(api)
    title = "t" * 5_000_000
    for method, path in (("POST", ["sessions"]), ("PATCH", ["sessions", session_id]), ("POST", ["ask"])):
        body = {"title": title} if path != ["ask"] else {"message": "hi", "title": title}
        reply = await api(method, *path, body=body)
        assert (reply.status, reply.error["code"]) == (413, "TOO_LARGE"), (method, path, reply.body)
        assert "limits.max_title_chars" in reply.error["message"]
    label = await api("POST", "sessions", session_id, "run-code", body={"code": "x = 1", "label": "l" * 1_000_000})
    assert (label.status, label.error["code"]) == (413, "TOO_LARGE"), label.body
    assert "limits.max_label_chars" in label.error["message"]
    assert (await api("GET", "sessions", session_id, "tool-calls")).data == []  # nothing recorded
    titles = [row["title"] for row in (await api("GET", "sessions")).data]
    assert titles == ["test"]


async def test_mcp_refuses_bad_json_as_json_rpc(jp_fetch: Any) -> None:
    """/nini/mcp's body is the MCP SDK's to parse (JSON-RPC): the same bad bodies are its 400 parse error."""
    from tornado.httpclient import HTTPClientError

    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    for case, body in BAD_BODIES.items():
        with pytest.raises(HTTPClientError) as refused:
            await jp_fetch("nini", "mcp", method="POST", body=body, headers=headers)
        assert refused.value.code == 400, case
