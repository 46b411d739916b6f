"""The R worker process: ``python -m r_sandbox.worker --workspace DIR [--memory-mb N] [--packages a,b]
[--language zh|en]``.

One process per nini session embeds R through rpy2 and serves the JSON-lines protocol of
``r_sandbox.protocol`` on private copies of its stdin and stdout. Before anything else it makes
those copies and points file descriptors 0 and 1 elsewhere (/dev/null and the log on stderr): R,
libraries and C code that read the console or print straight to fd 1 can then never eat a request
or corrupt a reply. Then it lowers its own address-space limit (before R and pandas allocate
anything) and starts R.
"""

from __future__ import annotations

import argparse
import os
import resource
import signal
import sys
import time
from pathlib import Path
from typing import IO, Any

from r_sandbox.console import Console
from r_sandbox.protocol import OUTPUT_MAX_BYTES, ErrorCode, decode, encode, error_dict, failure, reply_budget

SITE_PROFILE = Path(__file__).with_name("site_profile.R")


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    requests, replies = _private_pipes()
    _die_with_parent()
    limit_memory(args.memory_mb * 1024 * 1024)
    console = Console(args.output_max_bytes, args.language)
    budget = reply_budget(args.output_max_bytes)
    started = time.monotonic()
    try:
        packages = [p for p in args.packages.split(",") if p]
        session, version = _start_r(Path(args.workspace), packages, console, args.language)
    except MemoryError:
        message = f"the R worker ran out of memory while starting (memory limit {args.memory_mb} MB)"
        _send(replies, {"ready": False, "error": error_dict(ErrorCode.WORKER_DIED, message)})
        return 1
    except Exception as exc:  # ImportError of rpy2, libR missing, R refusing to start
        message = f"R cannot be loaded: {type(exc).__name__}: {exc}"
        _send(replies, {"ready": False, "error": error_dict(ErrorCode.R_UNAVAILABLE, message)})
        return 1
    startup_ms = int((time.monotonic() - started) * 1000)
    _send(replies, {"ready": True, "r_version": version, "pid": os.getpid(), "startup_ms": startup_ms})
    for line in requests:
        if line.strip():
            _send(replies, _handle(session, line, args.memory_mb), budget)
    return 0


def limit_memory(memory_bytes: int) -> None:
    """Lower this process's address-space limit, soft and hard (R cannot raise it back)."""
    _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = memory_bytes if hard == resource.RLIM_INFINITY else min(memory_bytes, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m r_sandbox.worker")
    parser.add_argument("--workspace", required=True, help="the session workspace (R's working directory)")
    parser.add_argument("--memory-mb", type=int, default=1024, help="address-space limit of this process")
    parser.add_argument("--packages", default="", help="packages allowed beyond r_sandbox.rules.DEFAULT_PACKAGES")
    parser.add_argument("--language", default="zh", choices=("zh", "en"), help="the language of policy messages")
    parser.add_argument(
        "--output-max-bytes",
        type=int,
        default=OUTPUT_MAX_BYTES,
        help="characters each of stdout and stderr keeps per run (execution.output_max_mb)",
    )
    return parser.parse_args(argv)


def _private_pipes() -> tuple[IO[bytes], IO[bytes]]:
    """The protocol's own copies of stdin/stdout; fds 0 and 1 then point at /dev/null and stderr."""
    requests = os.fdopen(os.dup(0), "rb")
    replies = os.fdopen(os.dup(1), "wb")
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)  # stray C-level prints land in the worker's log
    return requests, replies


def _die_with_parent() -> None:
    """Ask Linux to kill this process when the client dies (an orphan worker could spin forever)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux
        pass


def _start_r(workspace: Path, packages: list[str], console: Console, language: str = "zh") -> tuple[Any, str]:
    # rpy2 asks an Rscript child for R's LD_LIBRARY_PATH when it loads, only to hand it to R's own
    # child processes (which agent code may not start, and the sandbox refuses to run anyway);
    # skipping it saves ~150 ms per start. It must happen before anything imports rpy2's openrlib.
    import rpy2.situation

    rpy2.situation.r_ld_library_path_from_subprocess = lambda r_home: ""
    # R's site profile: Sys.which() must not fail where programs may not run (see the file)
    os.environ["R_PROFILE"] = str(SITE_PROFILE)
    console.install()  # before rpy2.robjects is imported (r_sandbox.session imports it)
    from rpy2.rinterface_lib import embedded, openrlib

    # Non-interactive like Rscript; 0 keeps R's own C stack limit (rpy2 turns the check off, which
    # would make deep recursion a segfault instead of an R error; R only runs on this thread).
    embedded._DEFAULT_R_INTERACTIVE = False
    embedded._DEFAULT_C_STACK_LIMIT = 0
    import rpy2.rinterface as ri

    # R exits the whole process (status 2) when it cannot find its base package: say why first.
    if not openrlib.R_HOME or not (Path(openrlib.R_HOME) / "library" / "base").is_dir():
        raise RuntimeError(f"R_HOME {openrlib.R_HOME!r} is not an R installation (no library/base in it)")
    ri.initr_simple()
    openrlib.rlib.R_Interactive = False
    from r_sandbox.session import RSession

    for folder in ("artifacts", "datasets"):
        (workspace / folder).mkdir(parents=True, exist_ok=True)
    session = RSession(workspace, packages, console, language)
    version = str(ri.baseenv["R.version.string"][0])
    return session, version


def _handle(session: Any, line: bytes, memory_mb: int) -> dict[str, Any]:
    try:
        message = decode(line)
    except ValueError as exc:
        return {"id": None, "ok": False, "error": error_dict(ErrorCode.INVALID_ARGUMENT, f"bad request: {exc}")}
    ident, op = message.get("id"), message.get("op")
    if op == "ping":
        return {"id": ident, "ok": True}
    if op != "run" or not isinstance(message.get("request"), dict):
        return {"id": ident, "ok": False, "error": error_dict(ErrorCode.INVALID_ARGUMENT, f"unknown op {op!r}")}
    try:
        result = session.run(message["request"], skip_policy=bool(message.get("skip_policy")))
    except MemoryError:  # raised before or after the run's own handling (the policy check)
        result = failure(ErrorCode.CODE_ERROR, f"out of memory (the R worker's limit is {memory_mb} MB)")
    return {"id": ident, "ok": True, "result": result}


def _shrunk(result: dict[str, Any], size: int, budget: int) -> dict[str, Any]:
    """``result`` cut down, for a reply of ``size`` bytes that would not fit the client's line buffer."""
    message = f"the run's output is too large to return ({size / 2**20:.0f} MiB); write large results to a file"
    head = budget // 8
    return failure(
        ErrorCode.CODE_ERROR,
        message,
        stdout=result["stdout"][:head],
        stderr=result["stderr"][:head],
        artifacts=result["artifacts"],
        duration_ms=result["duration_ms"],
    )


def _send(replies: IO[bytes], message: dict[str, Any], budget: int = reply_budget(OUTPUT_MAX_BYTES)) -> None:
    data = encode(message)
    if len(data) > budget and "result" in message:
        data = encode({**message, "result": _shrunk(message["result"], len(data), budget)})
    replies.write(data)
    replies.flush()


if __name__ == "__main__":
    sys.exit(main())
