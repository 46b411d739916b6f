"""Control groups of agent processes (``nini.execution.cgroups``) on this machine's real cgroups:
entered before anything runs, removed when the agent ends (and after a killed nini, never a live
one's), memory counted with tmpfs files, one session's flood kept from another's kernel in one
nini, and the same limits for a non-root nini in a delegated cgroup."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from nini.config import Settings
from nini.execution import cgroups
from nini.execution.outcome import CodeRequest
from nini.execution.runtime_dirs import process_start
from nini.skills.builtin.run_r import r_status
from tests.timeouts import timeout

from .conftest import Kernels, make_kernels, needs_bwrap, new_session

PLACED = cgroups.placement()
pytestmark = pytest.mark.skipif(PLACED.mechanism == "none", reason=f"no cgroup can be made here: {PLACED.detail}")
NINI = Path(sys.executable).with_name("nini")
MIB = 1024 * 1024


def bases() -> list[Path]:
    return list(dict.fromkeys(base for _controller, base in PLACED.bases))


def trees_of(pid: int) -> list[Path]:
    return [entry for base in bases() for entry in base.glob(f"nini-{pid}-*")]


@pytest.fixture
def group() -> Iterator[cgroups.AgentGroup]:
    made = cgroups.new_group(PLACED, "test", f"agent-{os.urandom(4).hex()}", memory_bytes=256 * MIB, max_processes=16)
    assert made is not None
    yield made
    made.release()


@pytest.fixture
def outside_tmp() -> Iterator[Path]:
    """A folder other users may enter (pytest's own are 0700)."""
    folder = Path(tempfile.mkdtemp(prefix="nini-cgroups-", dir="/var/tmp"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def limited(
    event_loop_for_module: asyncio.AbstractEventLoop, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Kernels]:
    """Sandboxed kernels with 512 MiB each and tmpfs folders larger than that (so the memory limit,
    not their size, is what stops a fill)."""
    yield from make_kernels(
        event_loop_for_module,
        tmp_path_factory.mktemp("limited"),
        sandbox="bwrap",
        memory_limit_mb=512,
        tmp_size_mb=4096,
    )


@pytest.mark.skipif(PLACED.mechanism == "systemd", reason="a systemd scope is named, not a folder of nini's")
def test_the_process_is_in_its_group_before_it_runs_anything(group: cgroups.AgentGroup) -> None:
    shown = subprocess.run(
        group.command(["cat", "/proc/self/cgroup"]), capture_output=True, text=True, check=True
    ).stdout
    for path in group.paths:
        assert any(line.endswith(path.name) and path.parent.name in line for line in shown.splitlines()), shown
    for path in group.paths:
        assert (path / "cgroup.procs").read_text() == ""  # it ended: nothing of it is left


@pytest.mark.skipif(PLACED.mechanism == "systemd", reason="a systemd scope is named, not a folder of nini's")
def test_a_group_that_cannot_be_entered_runs_nothing_and_names_no_path(
    group: cgroups.AgentGroup, tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    broken = cgroups.AgentGroup(PLACED, group.name, (tmp_path / "missing",))
    done = subprocess.run(broken.command(["touch", str(marker)]), capture_output=True, text=True)
    assert done.returncode == 125 and not marker.exists()
    assert "could not enter its control group" in done.stderr and str(tmp_path) not in done.stderr


@pytest.mark.skipif(PLACED.mechanism == "systemd", reason="a systemd scope is named, not a folder of nini's")
def test_release_kills_what_is_left_and_removes_the_empty_groups() -> None:
    first = cgroups.new_group(PLACED, "rel", "one", memory_bytes=256 * MIB, max_processes=16)
    second = cgroups.new_group(PLACED, "rel", "two", memory_bytes=256 * MIB, max_processes=16)
    assert first is not None and second is not None
    straggler = subprocess.Popen(first.command(["sleep", "600"]))
    try:
        deadline = time.monotonic() + 30
        while not (first.paths[0] / "cgroup.procs").read_text().strip():
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert first.release()
        assert straggler.wait(timeout=timeout(30)) == -9  # killed: the agent is over
        assert not any(path.exists() for path in first.paths)
        assert all(path.parent.is_dir() for path in second.paths)  # the session still has an agent
    finally:
        straggler.kill()
        second.release()
    assert not any(path.parent.exists() for path in second.paths)  # the session's group went with its last agent
    assert trees_of(os.getpid()) == []  # and this process's tree with its last session


@pytest.mark.skipif(PLACED.mechanism == "systemd", reason="systemd removes its own scopes")
def test_the_groups_of_a_nini_that_is_gone_are_removed_at_the_next_start_a_live_ones_kept() -> None:
    gone = subprocess.Popen(["true"])
    gone_token = f"{gone.pid}-{process_start(gone.pid)}"
    gone.wait()
    alive = subprocess.Popen(["sleep", "600"])
    try:
        live_token = f"{alive.pid}-{process_start(alive.pid)}"
        made = []
        for token in (gone_token, live_token):
            for base in bases():
                leaf = base / f"nini-{token}" / "s-session" / "nini-kernel-x"
                leaf.mkdir(parents=True)
                made.append(leaf)
        cgroups.placement.cache_clear()
        assert cgroups.placement() == PLACED  # a nini starting: the placement again, and the sweep
        assert [leaf.exists() for leaf in made] == [False] * len(bases()) + [True] * len(bases())
    finally:
        alive.kill()
        alive.wait()
        for base in bases():
            for folder in sorted((base / f"nini-{live_token}").glob("**/"), key=lambda p: -len(p.parts)):
                folder.rmdir()


def test_doctor_says_which_mechanism_holds_and_what_the_fallback_misses() -> None:
    from nini.doctor import _resource_limits

    held = _resource_limits(Settings())
    assert held.ok and held.detail.startswith(PLACED.mechanism) and "counted for it alone" in held.detail
    fallback = _resource_limits(Settings(execution={"cgroups": "off"}))
    assert not fallback.ok and fallback.detail.startswith("RLIMITs only (execution.cgroups is 'off')")
    assert "memfds" in fallback.detail and "RLIMIT_NPROC" in fallback.detail


@needs_bwrap
@pytest.mark.parametrize("where", ["/dev/shm", "/tmp"])
def test_files_in_the_sandbox_tmpfs_count_against_the_kernel_memory(limited: Kernels, where: str) -> None:
    session = new_session()
    assert limited.run("kept = 1", session).success
    fill = f"with open('{where}/fill', 'wb') as f:\n    for _ in range(48):\n        f.write(b'x' * (64 << 20))\n"
    out = limited.run(fill, session, timeout_s=120)
    assert not out.success and out.error["code"] == "TOO_LARGE", out.error
    assert "512 MiB" in out.error["message"] and "execution.memory_limit_mb" in out.error["message"]
    assert limited.pool.kernel_info(session)["restarts"] == 1
    after = limited.run(f"import os\nresult = ['kept' in dir(), 'fill' in os.listdir('{where}')]", session)
    assert after.success and after.result == [False, False]  # a new kernel, with a fresh tmpfs


@needs_bwrap
def test_a_flood_in_one_session_leaves_another_sessions_kernel_to_start(limited: Kernels) -> None:
    flooder, other = new_session(), new_session()
    release = limited.workspace(flooder).root / "release"
    flood = (
        "import os, time\nchildren, stopped = [], None\n"
        "for _ in range(1000):\n"
        "    try:\n        pid = os.fork()\n    except OSError as exc:\n        stopped = exc.errno\n        break\n"
        "    if pid == 0:\n        deadline = time.monotonic() + 120\n"
        "        while not os.path.exists('release') and time.monotonic() < deadline:\n            time.sleep(0.05)\n"
        "        os._exit(0)\n"
        "    children.append(pid)\n"
        "open('held', 'w').close()\n"
        "for pid in children:\n    os.waitpid(pid, 0)\n"
        "result = [len(children), stopped]\n"
    )

    async def both() -> tuple[object, object]:
        holding = asyncio.ensure_future(
            limited.pool.run(flooder, limited.workspace(flooder), CodeRequest(flood, timeout_s=150))
        )
        try:
            while not release.with_name("held").exists():
                assert not holding.done(), holding.result()
                await asyncio.sleep(0.05)
            meanwhile = await limited.pool.run(other, limited.workspace(other), CodeRequest("result = 2 + 2"))
        finally:
            release.touch()
        return await holding, meanwhile

    held, meanwhile = limited.wait(both())
    assert meanwhile.success and meanwhile.result == 4, meanwhile.error  # started while the other was full
    assert held.success and held.result[1] == 11 and held.result[0] < 64  # EAGAIN at its own limit


@needs_bwrap
@pytest.mark.slow
@pytest.mark.skipif(not r_status(Settings())[0], reason=f"R unavailable: {r_status(Settings())[1]}")
def test_an_r_worker_past_its_memory_limit_fails_with_the_limit_named(tmp_path: Path) -> None:
    code = (
        'con <- file("/tmp/fill", "wb")\nblock <- as.raw(rep(1L, 8 * 2^20))\n'
        "for (i in 1:384) writeBin(block, con)\nclose(con)\n"
    )  # 3 GiB in its tmpfs /tmp, 8 MiB at a time
    env = {
        **os.environ,
        "NINI_R__MEMORY_LIMIT_MB": "512",
        "NINI_EXECUTION__TMP_SIZE_MB": "4096",
        "NINI_UI__LANGUAGE": "en",
    }
    done = subprocess.run(
        [str(NINI), "run-r", "-", "--session", "rfill", "--new", "--json"],
        input=code,
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout(300),
    )
    out = json.loads(done.stdout)
    assert not out["success"] and out["error"]["code"] == "TOO_LARGE", out
    assert "512 MiB" in out["error"]["message"] and "r.memory_limit_mb" in out["error"]["message"]
    again = subprocess.run(
        [str(NINI), "run-r", "-", "--session", "rfill", "--new", "--json"],
        input="result <- 1 + 1",
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout(300),
    )
    assert json.loads(again.stdout)["success"], again.stdout


@needs_bwrap
@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="preparing a cgroup delegated to another user needs root")
@pytest.mark.skipif(PLACED.mechanism != "cgroup v1", reason="the delegated folders made here are cgroup v1's")
@pytest.mark.skipif(
    shutil.which("setpriv") is None or shutil.which("unshare") is None, reason="needs setpriv and unshare"
)
def test_a_non_root_nini_holds_the_same_limits_in_a_delegated_cgroup(outside_tmp: Path) -> None:
    """nini as uid 65534 (bwrap in a user namespace) with cgroup folders delegated to it (chowned,
    as an administrator would): its kernel's threads stop at max_processes with no RLIMIT_NPROC,
    and 3 GiB in memfds stop at the 512 MiB memory limit. The interpreter may sit in a folder that
    user cannot enter (/root/.pyenv): the child then sees it through a private mount namespace."""
    home = outside_tmp / "nobody"
    home.mkdir()
    os.chown(home, 65534, 65534)
    delegated = [base / f"nini-delegated-{os.getpid()}" for base in bases()]
    for folder in delegated:
        folder.mkdir()
        for entry in [folder, *folder.iterdir()]:
            os.chown(entry, 65534, 65534)
    env = {
        "HOME": str(home),
        "NINI_HOME": str(home / "nini"),
        "PATH": os.environ["PATH"],
        "NINI_UI__LANGUAGE": "en",
        "NINI_EXECUTION__PYTHON_POLICY": "off",
        "NINI_EXECUTION__SANDBOX": "bwrap",
        "NINI_EXECUTION__MEMORY_LIMIT_MB": "512",
        "NINI_EXECUTION__CGROUP_FOLDERS": json.dumps([str(f) for f in delegated]),
    }
    threads = (
        "import os, resource, threading\nevent, started = threading.Event(), 0\n"
        "try:\n    for _ in range(1000):\n        threading.Thread(target=event.wait).start()\n        started += 1\n"
        "except RuntimeError:\n    pass\nevent.set()\nresult = [started, "
        "resource.getrlimit(resource.RLIMIT_NPROC)[0]]\n"
    )
    memfd = (
        "import os\nheld = []\nfor _ in range(48):\n    fd = os.memfd_create('fill')\n"
        "    os.write(fd, b'x' * (64 << 20))\n    held.append(fd)\n"
    )
    try:
        counted = _as_nobody(env, home, threads)
        assert counted["success"], counted
        started, nproc = counted["result"]["result"]
        assert started < 64 and nproc != 64  # its pids cgroup stopped it, not RLIMIT_NPROC
        filled = _as_nobody(env, home, memfd)
        assert not filled["success"] and filled["error"]["code"] == "TOO_LARGE", filled
        assert "512 MiB" in filled["error"]["message"]
        assert all(list(folder.glob("nini-*")) == [] for folder in delegated)  # its groups went with it
    finally:
        for folder in delegated:
            for inner in sorted(folder.glob("**/"), key=lambda p: -len(p.parts)):
                inner.rmdir()


def _as_nobody(env: dict[str, str], home: Path, code: str) -> dict:
    """``nini run-code`` as uid 65534, the interpreter's folder visible to it (see the test)."""
    interpreter = Path(sys.executable).resolve()
    hidden = next(
        (p for p in reversed(interpreter.parents) if not p.stat().st_mode & 0o001), None
    )  # others may not pass
    script = home / "code.py"
    script.write_text(code)
    os.chown(script, 65534, 65534)
    run = [
        "setpriv",
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
        str(NINI),
        "run-code",
        str(script),
        "--session",
        "nobody",
        "--new",
        "--json",
    ]
    if hidden is not None:  # e.g. /root (0700) above /root/.pyenv: a tmpfs there in a mount namespace of its own
        inner = next(p for p in interpreter.parents if p.parent == hidden)
        view = home.parent / "interpreter-view"
        view.mkdir(exist_ok=True)
        shell = (
            f"mount --bind {inner} {view} && mount -t tmpfs -o mode=0755 tmpfs {hidden} && mkdir -p {inner} && "
            f'mount --bind {view} {inner} && exec "$@"'
        )
        run = ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", shell, "sh", *run]
    done = subprocess.run(run, capture_output=True, text=True, env=env, cwd=home, timeout=timeout(300))
    assert done.returncode in (0, 1) and done.stdout.startswith("{"), (done.returncode, done.stdout, done.stderr)
    return json.loads(done.stdout)
