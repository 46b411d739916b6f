"""run_code through a Jupyter Kernel Gateway versus a local kernel, in the same run.

Two real ``jupyter server``s with nini, on 127.0.0.1: one started with ``--gateway-url`` of a real
``jupyter kernelgateway`` (token auth; nini's kernels run there, the workspace mirrored over the
kernel protocol), one with nini's own local kernels (sandboxed where bubblewrap works). Reported:
p50 and p95 of the REST round trip of run_code ``x = 1`` on a warm kernel, the first call (kernel
start included) of each, and the gateway/local ratio of the p50s.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from jupyter_ext.serve import ServerProcess  # noqa: E402
from tests.gateway_lab import gateway_lab, new_session, run_code  # noqa: E402

ROUND_TRIPS = 100
CODE = "x = 1"


def measure(server: ServerProcess) -> tuple[float, list[float]]:
    """(seconds of the first call, seconds of each warm call)."""
    session_id = new_session(server)
    started = time.perf_counter()
    assert run_code(server, session_id, CODE)["success"]
    first = time.perf_counter() - started
    warm = []
    for _ in range(ROUND_TRIPS):
        started = time.perf_counter()
        reply = run_code(server, session_id, CODE)
        warm.append(time.perf_counter() - started)
        assert reply["success"], reply
    return first, warm


def report(name: str, first: float, warm: list[float]) -> float:
    p50 = statistics.median(warm)
    p95 = statistics.quantiles(warm, n=20)[-1]
    print(f"{name:8} first call {first * 1000:7.0f} ms   warm p50 {p50 * 1000:6.1f} ms   p95 {p95 * 1000:6.1f} ms")
    return p50


def main() -> int:
    with gateway_lab() as lab:
        gateway_first, gateway_warm = measure(lab.server)
    with tempfile.TemporaryDirectory(prefix="nini-bench-local-") as tmp:
        root = Path(tmp)
        (root / "home").mkdir()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("NINI_", "JUPYTER_"))}
        env.update(
            NINI_HOME=str(root / "home"),
            JUPYTER_CONFIG_DIR=str(root / "config"),
            JUPYTER_RUNTIME_DIR=str(root / "runtime"),
        )
        server = ServerProcess.start(root_dir=root, env=env)
        try:
            local_first, local_warm = measure(server)
        finally:
            server.stop()
    print(f"run_code {CODE!r} over REST, {ROUND_TRIPS} warm calls each")
    local = report("local", local_first, local_warm)
    gateway = report("gateway", gateway_first, gateway_warm)
    print(f"gateway / local (p50): {gateway / local:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
