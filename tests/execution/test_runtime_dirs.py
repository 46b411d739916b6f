"""Runtime folders a killed nini left behind are swept by the next one; a live process's never are."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nini.config import load_settings
from nini.execution import sandbox
from nini.execution.r_workers import R_RUNTIME_BASE
from nini.execution.runtime_dirs import (
    OWNER_FILE,
    make_runtime_dir,
    owner_token,
    process_start,
    sweep_runtime_dirs,
    token_alive,
)
from nini.skills.builtin.run_r import r_status
from tests.timeouts import timeout

NINI = str(Path(sys.executable).with_name("nini"))
R_USABLE, R_WHY = r_status(load_settings(home="/nonexistent-nini-home"))


def test_a_live_owners_folder_stays_and_a_dead_or_reused_pids_goes(tmp_path: Path) -> None:
    live = make_runtime_dir("nini-kernel-", tmp_path)
    assert json.loads((live / OWNER_FILE).read_text()) == {"pid": os.getpid(), "start": process_start(os.getpid())}
    reused = make_runtime_dir("nini-kernel-", tmp_path)  # this pid, but another process's start time
    (reused / OWNER_FILE).write_text(json.dumps({"pid": os.getpid(), "start": "1"}))
    dead = make_runtime_dir("nini-r-", tmp_path)
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    (dead / OWNER_FILE).write_text(json.dumps({"pid": child.pid, "start": "123"}))
    (dead / "home").mkdir()
    (dead / "home" / "big.bin").write_bytes(b"x" * 1000)
    unstamped = tmp_path / "nini-kernel-old"
    unstamped.mkdir()
    kept_target = tmp_path / "precious"
    kept_target.mkdir()
    (kept_target / "data.txt").write_text("keep")
    (tmp_path / "nini-r-link").symlink_to(kept_target)  # a lookalike link is never followed
    forged = make_runtime_dir("nini-r-", tmp_path)
    (forged / OWNER_FILE).unlink()
    (forged / OWNER_FILE).symlink_to(tmp_path / "nowhere")  # a link as the stamp is not read

    assert sorted(sweep_runtime_dirs([tmp_path])) == sorted([reused, dead])
    assert live.is_dir() and unstamped.is_dir() and forged.is_dir() and not reused.exists() and not dead.exists()
    assert (kept_target / "data.txt").read_text() == "keep" and (tmp_path / "nini-r-link").is_symlink()


def _owned_by(base: Path, prefix: str, pid: int) -> Path | None:
    for folder in base.glob(prefix + "*"):
        try:
            if json.loads((folder / OWNER_FILE).read_text())["pid"] == pid:
                return folder
        except (OSError, ValueError, KeyError):
            continue
    return None


def test_a_forked_child_names_itself_in_its_owner_token() -> None:
    """owner_token is read once per process: a child forked after its parent read it (multiprocessing
    and joblib fork) gets one of its own, never the parent's, or its leftovers would pass for the
    parent's while the parent lives."""
    parent = owner_token()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.write(write, owner_token().encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        child = pipe.read().decode()
    os.waitpid(pid, 0)
    assert child == f"{pid}-{child.partition('-')[2]}" and child != parent
    assert token_alive(parent) and not token_alive(child)


@pytest.mark.slow
@pytest.mark.parametrize("language", ["python", "r"])
def test_the_folder_of_a_killed_cli_is_swept_by_the_next_run(language: str, tmp_path: Path, nini_home: Path) -> None:
    if language == "r" and not R_USABLE:
        pytest.skip(f"R cannot be used here: {R_WHY}")
    command, code, base, prefix = {
        "python": (
            "run-code",
            "import time\nopen('here', 'w').close()\ntime.sleep(60)\n",
            sandbox.runtime_base(),
            "nini-kernel-",
        ),
        "r": ("run-r", "invisible(file.create('here')); Sys.sleep(60)\n", R_RUNTIME_BASE, "nini-r-"),
    }[language]
    env = {**os.environ, "NINI_HOME": str(nini_home)}
    cli = subprocess.Popen(
        [NINI, command, "-", "--session", "killed", "--new"],
        stdin=subprocess.PIPE,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=tmp_path,
    )
    cli.stdin.write(code.encode())
    cli.stdin.close()
    deadline = time.monotonic() + timeout(120)
    # a poll: the code writes `here` in its workspace once the kernel or worker runs it
    while not list((nini_home / "sessions").glob("*/workspace/here")):
        assert time.monotonic() < deadline and cli.poll() is None, "the run never started"
        time.sleep(0.1)
    folder = _owned_by(base, prefix, cli.pid)
    assert folder is not None and any(folder.iterdir())
    cli.send_signal(signal.SIGKILL)
    cli.wait()
    assert folder.is_dir()  # nothing could remove it

    after = subprocess.run(
        [NINI, command, "-", "--session", "next", "--new"],
        input=b"1\n" if language == "python" else b"x <- 1\n",
        env=env,
        capture_output=True,
        cwd=tmp_path,
        timeout=timeout(120),
    )
    assert after.returncode == 0, after.stderr
    assert not folder.exists()
