"""NiniError and the response envelope: the stable codes of DESIGN.md section 5 and their derived statuses."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from nini.errors import HTTP_STATUS, ErrorCode, NiniError, error_dict, error_envelope, ok_envelope
from r_sandbox import protocol
from r_sandbox.errors import RSandboxError

ROOT = Path(__file__).resolve().parent.parent

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
    # issue 37 adds it: the submitted code itself failed (raised, a syntax error, a bad output_df),
    # in Python and R alike. It was emitted from the start (run results, exports, the sidebar, the
    # agent's tool messages) without being in the enum; it is a result's code, a run that ended so
    # is a completed call (200, success false), not a failed request
    "CODE_ERROR",
]
# DESIGN.md lists UNAUTHORIZED too, which nothing emits: a missing token is jupyter_server's 403.


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


# -- one shape: every error dict is built from ErrorCode ----------------------------------------------


def test_error_dict_is_code_message_then_fields():
    assert error_dict(ErrorCode.CODE_ERROR, "NameError: x", line=2, ename="NameError") == {
        "code": "CODE_ERROR",
        "message": "NameError: x",
        "line": 2,
        "ename": "NameError",
    }
    assert type(error_dict(ErrorCode.TIMEOUT, "m")["code"]) is str  # plain JSON, not the enum member


@pytest.mark.parametrize("code", ["NOT_EXECUTED", "ERROR", "code_error"])
def test_error_dict_refuses_a_code_outside_the_enum(code):
    with pytest.raises(ValueError):
        error_dict(code, "m")


def test_r_sandbox_codes_are_all_nini_codes():
    # r_sandbox imports no nini module: its own list must stay inside nini's, or a code it sends
    # would fail ErrorCode(...) when nini reads it
    assert {code.value for code in protocol.ErrorCode} <= {code.value for code in ErrorCode}
    assert protocol.failure(protocol.ErrorCode.CODE_ERROR, "boom", line=3)["error"] == error_dict(
        ErrorCode.CODE_ERROR, "boom", line=3
    )
    with pytest.raises(ValueError):
        RSandboxError("NOT_A_CODE", "m")


@pytest.mark.parametrize(
    "read,expected",
    [("WORKER_DIED", "WORKER_DIED"), ("NOT_A_CODE", "INTERNAL"), (None, "INTERNAL"), (["x"], "INTERNAL")],
)
def test_a_code_off_the_worker_pipe_is_one_of_ours(read, expected):
    # a worker that code took over can write anything on its pipe
    assert protocol.wire_code(read) == expected


CODE_SHAPE = r"[A-Z][A-Z0-9]*(_[A-Z0-9]+)*"
# Callables that take an error code first: a string constant there is a code spelt by hand.
CODE_TAKERS = {"NiniError", "RSandboxError", "failure", "_failure", "error_dict"}


def hand_written_codes(path: Path, text: str | None = None) -> list[str]:
    """``file:line`` of each error code spelt as a string where an error is built: a dict literal's
    ``"code"`` key with a code-shaped string value, or such a string as the code argument of
    ``NiniError``/``failure``/``error_dict``/... (first positional or ``code=``)."""
    import re

    def is_code(node: ast.AST | None) -> bool:
        return isinstance(node, ast.Constant) and isinstance(node.value, str) and re.fullmatch(CODE_SHAPE, node.value)

    tree = ast.parse(path.read_text(encoding="utf-8") if text is None else text)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            pairs = zip(node.keys, node.values, strict=True)
            hit = any(isinstance(k, ast.Constant) and k.value == "code" and is_code(v) for k, v in pairs)
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            first = node.args[0] if node.args and name in CODE_TAKERS else None
            hit = is_code(first) or any(k.arg == "code" and is_code(k.value) for k in node.keywords)
        else:
            continue
        if hit:
            found.append(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}:{node.lineno}")
    return found


def code_base() -> list[Path]:
    return [
        path
        for package in ("nini", "jupyter_ext", "r_sandbox")
        for path in sorted((ROOT / package).rglob("*.py"))
        if "node_modules" not in path.parts
    ]


def test_no_error_code_is_spelt_by_hand():
    files = code_base()
    assert len(files) > 200 and ROOT / "nini" / "errors.py" in files
    found = [where for path in files for where in hand_written_codes(path)]
    assert found == [], "build these with nini.errors.error_dict / ErrorCode (r_sandbox: protocol.ErrorCode)"


@pytest.mark.parametrize(
    "source,flagged",
    [
        ('error = {"code": "TIMEOUT", "message": "late"}', True),
        ('return {"ok": False, "error": {"code": "CODE_ERROR"}}', True),
        ('raise NiniError("INTERNAL", "boom")', True),
        ('CodeOutcome.failure("CANCELED", "stopped")', True),
        ('failure(code="WORKER_DIED", message="gone")', True),
        # what the scan must let through: built from the enum, and "code" meaning source code
        ('error = error_dict(ErrorCode.TIMEOUT, "late")', False),
        ('raise NiniError(ErrorCode.INTERNAL, "boom")', False),
        ('row = {**row, "code": ""}', False),
        ('request = {"code": "print(1)", "language": "python"}', False),
        ('os.environ.get("NINI_HOME")', False),
    ],
)
def test_the_scan_finds_a_hand_written_code(tmp_path, source, flagged):
    # the negative control: the shape the scan forbids is found where it is written, and only it
    module = tmp_path / "planted.py"
    module.write_text(f"def f(row, os):\n    {source}\n", encoding="utf-8")
    assert hand_written_codes(module) == ([f"{module}:2"] if flagged else [])
