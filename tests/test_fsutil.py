"""Atomic writes: a reader, or the file left after a crash, holds the old content or the new, never a mix."""

from __future__ import annotations

import errno
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nini import fsutil
from nini.errors import ErrorCode, NiniError
from nini.fsutil import atomic_write_bytes, atomic_write_text
from tests.timeouts import timeout


def test_creates_the_file_and_missing_parent_folders(tmp_path: Path):
    path = tmp_path / "a" / "b" / "out.txt"
    atomic_write_text(path, "héllo\n")
    assert path.read_bytes() == "héllo\n".encode()


def test_replaces_existing_content_and_leaves_no_temp_file(tmp_path: Path):
    path = tmp_path / "out.txt"
    path.write_text("a much longer previous content\n" * 10)
    atomic_write_text(path, "new")
    assert path.read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]


def test_bytes_are_written_unchanged(tmp_path: Path):
    data = bytes(range(256)) * 3
    atomic_write_bytes(tmp_path / "blob", data)
    assert (tmp_path / "blob").read_bytes() == data


def _fail(*_args, **_kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")


@pytest.mark.parametrize("failing", ["fsync", "replace"])
def test_failed_write_keeps_previous_content_and_cleans_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failing):
    path = tmp_path / "settings.json"
    path.write_text('{"previous": true}')
    monkeypatch.setattr(fsutil.os, failing, _fail)

    with pytest.raises(NiniError) as caught:
        atomic_write_text(path, '{"new": true}' * 1000)

    assert path.read_text() == '{"previous": true}'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["settings.json"], "temp file left behind"
    error = caught.value  # a full disk is NO_SPACE, naming the file without its host path (issue 36)
    assert error.code is ErrorCode.NO_SPACE
    assert str(path) not in error.message and str(tmp_path) not in str(error.details)
    assert "settings.json" in error.message and "the disk is full" in error.message


def test_failed_first_write_leaves_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(fsutil.os, "fsync", _fail)
    with pytest.raises(NiniError):
        atomic_write_text(tmp_path / "new.txt", "x")
    assert list(tmp_path.iterdir()) == []


def test_unwritable_destination_is_an_internal_error_naming_the_path(tmp_path: Path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("I am a file")
    target = blocker / "out.txt"
    with pytest.raises(NiniError) as caught:
        atomic_write_text(target, "x")
    assert caught.value.code is ErrorCode.INTERNAL
    assert str(target) in caught.value.message
    assert blocker.read_text() == "I am a file"


SIZE = 2 * 1024 * 1024
WRITER = f"""
import sys
from pathlib import Path
from nini.fsutil import atomic_write_bytes

path = Path(sys.argv[1])
contents = [b"a" * {SIZE}, b"b" * {SIZE}]
i = 0
while True:
    atomic_write_bytes(path, contents[i % 2])
    i += 1
    sys.stdout.write("w\\n")
    sys.stdout.flush()
"""


@pytest.mark.parametrize("delay", [0.0, 0.013, 0.031])
def test_kill_during_writes_leaves_one_complete_version(tmp_path: Path, delay: float):
    """SIGKILL a process that keeps rewriting the file; what is left is one whole version."""
    path = tmp_path / "data.bin"
    child = subprocess.Popen([sys.executable, "-c", WRITER, str(path)], stdout=subprocess.PIPE)
    try:
        for _ in range(3):  # wait for three finished writes, so the kill lands mid-loop
            assert child.stdout.readline() == b"w\n", "writer died before writing"
        time.sleep(delay)
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=timeout(10))
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        child.stdout.close()
    assert child.returncode == -signal.SIGKILL
    data = path.read_bytes()
    assert len(data) == SIZE
    assert data in (b"a" * SIZE, b"b" * SIZE)
    # a temp file the kill interrupted may remain, but never under the real name
    assert all(p.name == "data.bin" or p.name.startswith(".data.bin.") for p in tmp_path.iterdir())
