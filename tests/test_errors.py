"""NiniError and the response envelope: the stable codes of DESIGN.md section 5 and their derived statuses."""

from __future__ import annotations

import json

import pytest

from nini.errors import HTTP_STATUS, ErrorCode, NiniError, error_envelope, ok_envelope

# Copied by hand from DESIGN.md section 5: a code added or removed in either place fails here.
DESIGN_CODES = [
    "INVALID_ARGUMENT",
    "NOT_FOUND",
    "CONFLICT",
    "POLICY_VIOLATION",
    "TIMEOUT",
    "CANCELED",
    "DB_ERROR",
    "KERNEL_DIED",
    "WORKER_DIED",
    "R_UNAVAILABLE",
    "NO_MODEL_AVAILABLE",
    "UPSTREAM_ERROR",
    "SKILL_DEFINITION_UNAVAILABLE",
    "TOO_LARGE",
    "INTERNAL",
    "NO_SPACE",  # issue 36 adds it: a full disk under one code (DESIGN.md's list predates it)
]


def test_codes_are_exactly_the_design_list():
    assert sorted(code.value for code in ErrorCode) == sorted(DESIGN_CODES)
    assert len(DESIGN_CODES) == len(set(DESIGN_CODES))


@pytest.mark.parametrize("code", DESIGN_CODES)
def test_code_value_equals_its_name(code):
    # Clients match on the string; the enum member and its value must be the same text.
    assert ErrorCode[code].value == code
    assert NiniError(code, "m").code is ErrorCode[code]


@pytest.mark.parametrize("code", list(ErrorCode))
def test_every_code_has_an_http_error_status(code):
    error = NiniError(code, "m")
    assert error.http_status == HTTP_STATUS[code]
    assert 400 <= error.http_status <= 599


@pytest.mark.parametrize(
    "code,status",
    [
        ("INVALID_ARGUMENT", 400),
        ("NOT_FOUND", 404),
        ("CONFLICT", 409),
        ("POLICY_VIOLATION", 403),
        ("TOO_LARGE", 413),
        ("INTERNAL", 500),
        ("DB_ERROR", 503),
        ("NO_SPACE", 507),
    ],
)
def test_http_status_of_common_codes(code, status):
    assert NiniError(code, "m").http_status == status


def test_client_errors_are_4xx_and_server_failures_5xx():
    for code in ("INVALID_ARGUMENT", "NOT_FOUND", "CONFLICT", "POLICY_VIOLATION"):
        assert 400 <= NiniError(code, "m").http_status < 500, code
    for code in ("DB_ERROR", "KERNEL_DIED", "WORKER_DIED", "INTERNAL", "UPSTREAM_ERROR", "TIMEOUT"):
        assert 500 <= NiniError(code, "m").http_status < 600, code


@pytest.mark.parametrize("code", list(ErrorCode))
def test_exit_code_is_2_only_for_policy_violation(code):
    expected = 2 if code == "POLICY_VIOLATION" else 1
    assert NiniError(code, "m").exit_code == expected


def test_unknown_code_is_refused():
    with pytest.raises(ValueError):
        NiniError("NO_SUCH_CODE", "m")


def test_error_keeps_code_message_and_details():
    error = NiniError(ErrorCode.NOT_FOUND, "no skill named 'x'", {"name": "x"})
    assert (error.code, error.message, error.details) == (ErrorCode.NOT_FOUND, "no skill named 'x'", {"name": "x"})
    assert "NOT_FOUND" in str(error) and "no skill named 'x'" in str(error)


@pytest.mark.parametrize(
    "details,expected",
    [
        (None, {"code": "CONFLICT", "message": "already there"}),
        ({"path": "/a/b"}, {"code": "CONFLICT", "message": "already there", "details": {"path": "/a/b"}}),
    ],
)
def test_to_dict_shape(details, expected):
    assert NiniError("CONFLICT", "already there", details).to_dict() == expected


def test_to_dict_values_are_plain_strings_and_json_serialisable():
    body = NiniError(ErrorCode.TIMEOUT, "took too long", {"seconds": 30}).to_dict()
    assert type(body["code"]) is str
    assert json.loads(json.dumps(body)) == {"code": "TIMEOUT", "message": "took too long", "details": {"seconds": 30}}


def test_error_envelope_shape():
    envelope = error_envelope(NiniError("NOT_FOUND", "gone", {"name": "x"}))
    assert envelope == {"ok": False, "error": {"code": "NOT_FOUND", "message": "gone", "details": {"name": "x"}}}


def test_error_envelope_omits_details_when_none():
    envelope = error_envelope(NiniError("INTERNAL", "boom"))
    assert envelope == {"ok": False, "error": {"code": "INTERNAL", "message": "boom"}}
    assert "details" not in envelope["error"]


@pytest.mark.parametrize("data", [{"a": 1}, [1, 2], "text", None, 0])
def test_ok_envelope_shape(data):
    assert ok_envelope(data) == {"ok": True, "data": data}
