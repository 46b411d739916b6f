"""The JSON-lines protocol between ``RWorkerPool`` and ``python -m r_sandbox.worker``.

One JSON object per line, UTF-8, in both directions over the worker's stdin/stdout pipes:

* worker -> client, once, after R initialised: ``{"ready": true, "r_version", "pid", "startup_ms"}``, or
  ``{"ready": false, "error": {"code", "message"}}`` just before it exits (R_UNAVAILABLE, WORKER_DIED).
* client -> worker: ``{"id": n, "op": "run", "request": {code, dataset_name, save_as, purpose,
  label, timeout_s}}``; ``"skip_policy": true`` only from tests (the run-time guard alone then
  stands between the code and denied functions; nini never sends it). ``{"id": n, "op": "ping"}``.
* worker -> client, one per request: ``{"id": n, "ok": true, "result": <contract dict>}`` or
  ``{"id": n, "ok": false, "error": {"code", "message"}}`` (a request the worker could not take).

The worker answers requests in order, one at a time. A reply can be large (stdout of a chatty run),
so both sides read lines with ``line_limit(output_max_bytes)`` instead of asyncio's 64 KiB default:
the worker keeps each stream to ``output_max_bytes`` (nini's ``execution.output_max_mb``) and its
replies below ``reply_budget``, and the client reads no longer line than that, whatever the worker
(or code that took it over) writes.
"""

from __future__ import annotations

import json
from enum import StrEnum
from typing import Any

OUTPUT_MAX_BYTES = 4 * 1024 * 1024  # of each stream of a run, by default (nini passes its setting)


class ErrorCode(StrEnum):
    """The error codes r_sandbox sends and raises: each one a value of nini's ``ErrorCode`` (r_sandbox
    imports no nini module, so it keeps its own list; tests/r_sandbox/test_worker.py holds it included)."""

    INVALID_ARGUMENT = "INVALID_ARGUMENT"  # a request the worker or the client cannot take
    POLICY_VIOLATION = "POLICY_VIOLATION"  # the code was refused before it ran
    TOO_LARGE = "TOO_LARGE"  # a dataset needs more memory than the worker has
    TIMEOUT = "TIMEOUT"
    CODE_ERROR = "CODE_ERROR"  # the code failed (R error, syntax, bad output_df, out of memory)
    WORKER_DIED = "WORKER_DIED"
    R_UNAVAILABLE = "R_UNAVAILABLE"
    INTERNAL = "INTERNAL"


def wire_code(value: Any) -> ErrorCode:
    """A code read off the pipe as one of ours: INTERNAL for anything else (a worker that code took
    over can write any line, and what it says must not become a code nini does not know)."""
    return ErrorCode(value) if isinstance(value, str) and value in ErrorCode.__members__ else ErrorCode.INTERNAL


def error_dict(code: ErrorCode, message: str, **fields: Any) -> dict[str, Any]:
    """An ``error`` member, ``{"code", "message", **fields}``: the code goes through ``ErrorCode``."""
    return {"code": ErrorCode(code).value, "message": message, **fields}


def reply_budget(output_max_bytes: int) -> int:
    """The longest reply the worker sends: two streams at the cap, JSON's escapes, a result, a preview."""
    return 4 * output_max_bytes + 2 * 1024 * 1024


def line_limit(output_max_bytes: int) -> int:
    """The longest line the client reads; a longer one means the worker is broken (or taken over)."""
    return reply_budget(output_max_bytes) + 1024 * 1024


REQUEST_KEYS = (
    "code",
    "dataset_name",
    "save_as",
    "purpose",
    "label",
    "timeout_s",
    "max_figures",
    "datasets",  # name -> workspace-relative file, as nini's record names them (None: the files by name)
    "save_file",  # the new version file save_as is written to
    "pending_file",  # where chart files are listed before they are put in place
    "language",  # of this run's refusals and notes: zh or en (None: the worker's, from its start)
)
CONTRACT_KEYS = (
    "success",
    "stdout",
    "stderr",
    "result",
    "has_dataframe",
    "dataframe_preview",
    "artifacts",
    "datasets_saved",
    "error",
    "duration_ms",
)  # the same as nini.execution.outcome.CONTRACT_KEYS (a test holds them equal)


def encode(message: dict[str, Any]) -> bytes:
    """One protocol line. NaN/inf are not JSON: values are made JSON-safe before they get here."""
    return json.dumps(message, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode() + b"\n"


def decode(line: bytes) -> dict[str, Any]:
    message = json.loads(line)
    if not isinstance(message, dict):
        raise ValueError(f"protocol line is not an object: {line[:80]!r}")
    return message


def failure(
    code: ErrorCode,
    message: str,
    *,
    line: int | None = None,
    stdout: str = "",
    stderr: str = "",
    artifacts: list[dict[str, Any]] | None = None,
    duration_ms: int = 0,
) -> dict[str, Any]:
    """A contract dict of a run that did not succeed."""
    error = error_dict(code, message, **({"line": line} if line is not None else {}))
    return {
        "success": False,
        "stdout": stdout,
        "stderr": stderr,
        "result": None,
        "has_dataframe": False,
        "dataframe_preview": None,
        "artifacts": artifacts or [],
        "datasets_saved": [],
        "error": error,
        "duration_ms": duration_ms,
    }
