"""Memory and process limits that count what they mean, through the real ``nini`` CLI (issue 32, item 2).

Each kernel is in a control group of its own (``nini.execution.cgroups``): its memory limit counts
memfds, its tmpfs ``/tmp`` and ``/dev/shm`` (which RLIMIT_AS never saw: 3 GiB were held under a
2 GiB limit), and its process limit counts its own tasks, not every thread of a uid (eight
``nini run-code`` calls on one session at once lost 3 kernels at start). Session uids come from
the store: two sessions a crc32 of the workspace path gave one uid get two. Without cgroups the
RLIMITs still hold. The static policy is off: the operating system's limits are what is tested.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import time
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from nini.execution import cgroups
from nini.execution.sandbox import ROOT_UID_BASE, ROOT_UID_SPAN, probe_bwrap
from tests import timeouts
from tests.test_containment_cli import FORK_FLOOD, NINI, nini, run_code

PLACED = cgroups.placement()
needs_cgroups = pytest.mark.skipif(PLACED.mechanism == "none", reason=f"no cgroup can be made here: {PLACED.detail}")
pytestmark = [
    pytest.mark.skipif(not probe_bwrap()[0], reason=f"no working bubblewrap: {probe_bwrap()[1]}"),
    pytest.mark.slow,
]
MEMORY_ENV = {"NINI_EXECUTION__MEMORY_LIMIT_MB": "512", "NINI_UI__LANGUAGE": "en"}
# 3 GiB in 64 MiB memfds: none of it in the address space (files of the sandbox's tmpfs /tmp and
# /dev/shm count the same: tests/execution/test_cgroups.py)
MEMFDS = (
    "import os\nheld = []\nfor _ in range(48):\n    fd = os.memfd_create('fill')\n"
    "    os.write(fd, b'x' * (64 << 20))\n    held.append(fd)\n"
)


def wait_for(path: Path, timeout: float = 120) -> str:
    """The text of ``path`` once it is there (written by agent code in another process)."""
    deadline = time.monotonic() + timeouts.timeout(timeout)
    while not path.exists():
        assert time.monotonic() < deadline, f"{path.name} never appeared"
        time.sleep(0.05)
    return path.read_text()


def test_eight_concurrent_calls_on_one_session_all_start_their_kernels() -> None:
    code = (
        "import resource, threading\nresult = [threading.active_count(), resource.getrlimit(resource.RLIMIT_NPROC)[0]]"
    )
    with ThreadPoolExecutor(8) as pool:
        outs = list(pool.map(lambda _n: run_code("busy", code), range(8)))
    assert [out["success"] for out in outs] == [True] * 8, [out.get("error") for out in outs]
    if PLACED.holds >= {"pids"}:  # a kernel's own pids cgroup counts its tasks: no RLIMIT_NPROC of 64 on the uid
        assert all(
            out["result"]["result"][1] in (resource.RLIM_INFINITY, resource.getrlimit(resource.RLIMIT_NPROC)[0])
            for out in outs
        ), [out["result"]["result"] for out in outs]


@needs_cgroups
def test_three_gib_in_memfds_stop_at_the_memory_limit(nini_home: Path) -> None:
    out = run_code("fill", MEMFDS, **MEMORY_ENV)
    assert not out["success"], out
    error = out["error"]
    assert error["code"] == "TOO_LARGE", error
    assert "512 MiB" in error["message"] and "execution.memory_limit_mb" in error["message"]
    assert str(nini_home) not in error["message"]
    after = run_code("fill", "import os\nresult = len(os.listdir('/proc/self/fd'))", **MEMORY_ENV)
    assert after["success"], after  # a new kernel: the host and the session go on
    shown = json.loads(nini("sessions", "show", "fill", "--json").stdout)
    calls = [(c["status"], c["error_code"]) for c in shown["tool_calls"]]
    assert calls == [("failed", "TOO_LARGE"), ("succeeded", None)]  # the stopped run kept its record


@needs_cgroups
def test_a_process_flood_holds_its_own_kernel_only_and_colliding_sessions_get_their_own_uids(
    nini_home: Path, tmp_path: Path
) -> None:
    flooder, other = _colliding_session_ids(nini_home)
    release = nini_home / "sessions" / flooder / "workspace" / "release"
    flood = (
        "import os, time\nchildren, stopped = [], None\n"
        "for _ in range(1000):\n"
        "    try:\n        pid = os.fork()\n    except OSError as exc:\n        stopped = exc.errno\n        break\n"
        "    if pid == 0:\n        deadline = time.monotonic() + 180\n"
        "        while not os.path.exists('release') and time.monotonic() < deadline:\n            time.sleep(0.05)\n"
        "        os._exit(0)\n"
        "    children.append(pid)\n"
        "open('held.tmp', 'w').write(f'{os.getuid()} {len(children)} {stopped}')\nos.rename('held.tmp', 'held')\n"
        "for pid in children:\n    os.waitpid(pid, 0)\n"
        "result = [os.getuid(), len(children), stopped]\n"
    )
    threads = (
        "import os, threading\nevent, started = threading.Event(), 0\n"
        "try:\n    for _ in range(1000):\n        threading.Thread(target=event.wait).start()\n        started += 1\n"
        "except RuntimeError:\n    pass\nevent.set()\nresult = [os.getuid(), started]\n"
    )
    script = tmp_path / "flood.py"
    script.write_text(flood)
    env = {**os.environ, "NINI_EXECUTION__PYTHON_POLICY": "off", "NINI_EXECUTION__SANDBOX": "bwrap"}
    holding = subprocess.Popen(
        [str(NINI), "run-code", str(script), "--session", flooder, "--new", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        held_uid, held, stopped = wait_for(release.with_name("held")).split()
        assert stopped == "11" and int(held) < 64  # EAGAIN: the flooding kernel's own pids limit
        meanwhile = run_code(other, threads)  # its kernel starts while the flood holds every process it could
        assert meanwhile["success"], meanwhile
        other_uid, started = meanwhile["result"]["result"]
        assert started < 64  # threads count against its own limit
    finally:
        release.parent.mkdir(parents=True, exist_ok=True)
        release.touch()
        out, err = holding.communicate(timeout=timeouts.timeout(180))
    assert json.loads(out)["success"], err
    if os.geteuid() == 0:
        assert int(held_uid) != other_uid  # under the crc32 of the workspace path both had one uid


def test_without_cgroups_the_rlimits_still_limit() -> None:
    code = (
        (
            "import os, resource\nlimits = [resource.getrlimit(resource.RLIMIT_NPROC)[0], "
            "resource.getrlimit(resource.RLIMIT_AS)[0]]\n"
            "try:\n    block = bytearray(3 << 30)\n    big = 'allocated'\nexcept MemoryError:\n    "
            "big = 'MemoryError'\n"
        )
        + FORK_FLOOD
        + "result = [*limits, big, len(children), stopped]\n"
    )
    out = run_code("rlimits", code, NINI_EXECUTION__CGROUPS="off", NINI_EXECUTION__MAX_PROCESSES="32")
    assert out["success"], out
    nproc, address_space, big, forked, stopped = out["result"]["result"]
    assert nproc == 32 and address_space == 2048 << 20 and big == "MemoryError"
    assert stopped == 11 and forked < 32


def _colliding_session_ids(home: Path) -> tuple[str, str]:
    """Two session ids whose workspaces the former ``sandbox.session_uid`` (a crc32 of the path)
    gave one uid: a birthday search, a few thousand ids."""
    seen: dict[int, str] = {}
    for n in range(1_000_000):
        session_id = f"c{n}"
        workspace = (home / "sessions" / session_id / "workspace").resolve()
        uid = ROOT_UID_BASE + zlib.crc32(os.fsencode(str(workspace))) % ROOT_UID_SPAN
        if uid in seen:
            return seen[uid], session_id
        seen[uid] = session_id
    raise AssertionError("no collision found")
