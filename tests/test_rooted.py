"""RootedDir (nini/rooted.py): nini's own process never follows a link planted in a workspace.

Each test plays agent code (which writes the workspace from inside the sandbox) against nini's
host-side reads and writes: links in every position, special files, and names swapped for links
while nini works (``renameat2(RENAME_EXCHANGE)``, as an attacker would). Both resolvers run:
``openat2`` and the per-component ``O_NOFOLLOW`` walk used where the kernel lacks openat2.
"""

from __future__ import annotations

import ctypes
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from nini import rooted
from nini.errors import ErrorCode, NiniError
from nini.execution.workspace import Workspace
from nini.rooted import RootedDir

SECRET = b"host secret: sk-live-000"
_libc = ctypes.CDLL(None, use_errno=True)


@pytest.fixture(params=["openat2", "walk"])
def resolver(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run the test with each resolver (``walk`` is what kernels without openat2 get)."""
    if request.param == "openat2" and not rooted.openat2_available():
        pytest.skip("this kernel has no openat2")
    monkeypatch.setattr(rooted, "_openat2_state", request.param == "openat2")
    return request.param


@pytest.fixture
def layout(tmp_path: Path, resolver: str) -> tuple[Workspace, Path]:
    """A workspace, and a host folder outside it holding a secret (what the sandbox cannot see)."""
    host = tmp_path / "host"
    host.mkdir()
    (host / "secret.txt").write_bytes(SECRET)
    workspace = Workspace(tmp_path / "sessions" / "s1" / "workspace").ensure()
    return workspace, host


def exchange(a: Path, b: Path) -> None:
    """Atomically swap two names (renameat2 RENAME_EXCHANGE), like agent code racing nini."""
    if _libc.renameat2(-100, os.fsencode(a), -100, os.fsencode(b), 2) != 0:
        raise OSError(ctypes.get_errno(), "renameat2")


def refused(call: object, *args: object, **kwargs: object) -> NiniError:
    with pytest.raises(NiniError) as caught:
        call(*args, **kwargs)  # type: ignore[operator]
    return caught.value


@pytest.mark.parametrize("folder", ["executions", "artifacts", "reports", "datasets"])
def test_a_folder_replaced_by_a_link_is_never_written_through(layout: tuple[Workspace, Path], folder: str) -> None:
    workspace, host = layout
    target = workspace.root / folder
    if target.exists():
        target.rmdir()
    target.symlink_to(host)
    error = refused(workspace.fs.write_bytes, f"{folder}/x1/stdout.txt", b"data")
    assert error.code is ErrorCode.POLICY_VIOLATION and "link" in error.message
    assert str(host) not in error.message and str(workspace.root) not in error.message
    error = refused(workspace.fs.write_bytes, f"{folder}/plain.txt", b"data")
    assert error.code is ErrorCode.POLICY_VIOLATION
    assert sorted(p.name for p in host.iterdir()) == ["secret.txt"]


def test_a_link_in_any_component_is_refused_for_reading(layout: tuple[Workspace, Path]) -> None:
    workspace, host = layout
    (workspace.root / "artifacts" / "deep").mkdir()
    (workspace.root / "artifacts" / "deep" / "via").symlink_to(host)
    (workspace.root / "artifacts" / "chart.png").symlink_to(host / "secret.txt")
    for path in ("artifacts/deep/via/secret.txt", "artifacts/chart.png"):
        error = refused(workspace.fs.read_bytes, path)
        assert error.code is ErrorCode.POLICY_VIOLATION
        assert not workspace.fs.is_file(path)
    assert refused(workspace.fs.listdir, "artifacts/deep/via").code is ErrorCode.POLICY_VIOLATION


def test_a_link_even_pointing_inside_is_refused(layout: tuple[Workspace, Path]) -> None:
    workspace, _host = layout
    (workspace.root / "real.txt").write_text("inside")
    (workspace.root / "alias.txt").symlink_to(workspace.root / "real.txt")
    assert workspace.fs.read_bytes("real.txt") == b"inside"
    assert refused(workspace.fs.read_bytes, "alias.txt").code is ErrorCode.POLICY_VIOLATION


def test_writing_over_a_link_replaces_the_link_not_its_target(layout: tuple[Workspace, Path]) -> None:
    workspace, host = layout
    (workspace.root / "artifacts" / "out.html").symlink_to(host / "secret.txt")
    workspace.fs.write_bytes("artifacts/out.html", b"<p>new</p>")
    assert (host / "secret.txt").read_bytes() == SECRET
    assert not (workspace.root / "artifacts" / "out.html").is_symlink()
    assert (workspace.root / "artifacts" / "out.html").read_bytes() == b"<p>new</p>"


def test_special_files_are_refused_without_blocking(layout: tuple[Workspace, Path]) -> None:
    workspace, _host = layout
    os.mkfifo(workspace.root / "artifacts" / "pipe.png")
    error = refused(workspace.fs.read_bytes, "artifacts/pipe.png")  # must not wait for a writer
    assert error.code is ErrorCode.POLICY_VIOLATION and "regular file" in error.message
    assert refused(workspace.fs.read_bytes, "artifacts").code in (
        ErrorCode.POLICY_VIOLATION,
        ErrorCode.INVALID_ARGUMENT,
    )


def test_paths_that_leave_the_root_are_invalid(layout: tuple[Workspace, Path]) -> None:
    workspace, _host = layout
    for path in ("../x", "/etc/passwd", "a/../../x", "a\x00b"):
        assert refused(workspace.fs.read_bytes, path).code is ErrorCode.INVALID_ARGUMENT
        assert refused(workspace.fs.write_bytes, path, b"").code is ErrorCode.INVALID_ARGUMENT


def test_create_new_never_overwrites_and_unlink_removes_only_the_link(layout: tuple[Workspace, Path]) -> None:
    workspace, host = layout
    assert workspace.fs.create_new("reports/r.md", b"first") is True
    assert workspace.fs.create_new("reports/r.md", b"second") is False
    assert workspace.fs.read_bytes("reports/r.md") == b"first"
    (workspace.root / "reports" / "l.md").symlink_to(host / "secret.txt")
    assert workspace.fs.create_new("reports/l.md", b"x") is False
    workspace.fs.unlink("reports/l.md")
    assert (host / "secret.txt").read_bytes() == SECRET
    assert sorted(os.listdir(workspace.root / "reports")) == ["r.md"]  # no temp file left behind


def test_a_failed_write_leaves_nothing_and_keeps_the_old_file(layout: tuple[Workspace, Path]) -> None:
    workspace, _host = layout
    workspace.fs.write_bytes("artifacts/a.txt", b"old")

    def broken(handle: object) -> None:
        raise OSError(28, "No space left on device")

    error = refused(workspace.fs.write_with, "artifacts/a.txt", broken)
    assert error.code is ErrorCode.NO_SPACE  # a full disk (issue 36); TOO_LARGE is nini's own limits
    assert "'a.txt' in the session workspace" in error.message and "/" not in error.message.split(";")[0]
    assert workspace.fs.read_bytes("artifacts/a.txt") == b"old"
    assert os.listdir(workspace.root / "artifacts") == ["a.txt"]


def test_usage_counts_files_once_and_follows_no_link(layout: tuple[Workspace, Path]) -> None:
    workspace, host = layout
    (host / "big.bin").write_bytes(b"x" * 1_000_000)
    (workspace.root / "artifacts" / "big").symlink_to(host)
    (workspace.root / "datasets" / "d.bin").write_bytes(b"y" * 100_000)
    assert 100_000 <= workspace.fs.usage()[0] < 200_000


@pytest.fixture
def swapping(layout: tuple[Workspace, Path]) -> Iterator[tuple[Workspace, Path, Path, Path]]:
    """A thread that keeps swapping a workspace name with a link to the host secret."""
    workspace, host = layout
    stop = threading.Event()
    decoy_dir = workspace.root / "artifacts" / "race"
    decoy_dir.mkdir()
    (decoy_dir / "secret.txt").write_bytes(b"harmless")
    link_dir = workspace.root / "artifacts" / "race-link"
    link_dir.symlink_to(host)
    chart = workspace.root / "artifacts" / "chart.png"
    chart.write_bytes(b"\x89PNG harmless")
    link_file = workspace.root / "artifacts" / "chart-link"
    link_file.symlink_to(host / "secret.txt")

    def swap() -> None:
        while not stop.is_set():
            exchange(decoy_dir, link_dir)
            exchange(chart, link_file)

    thread = threading.Thread(target=swap, daemon=True)
    thread.start()
    try:
        yield workspace, host, decoy_dir, chart
    finally:
        stop.set()
        thread.join()


def test_racing_a_swap_never_reads_the_host_file(swapping: tuple[Workspace, Path, Path, Path]) -> None:
    workspace, _host, _folder, _chart = swapping
    outcomes: dict[str, int] = {}
    for _ in range(400):
        for path in ("artifacts/race/secret.txt", "artifacts/chart.png"):
            try:
                data = workspace.fs.read_bytes(path)
            except NiniError as exc:
                outcomes[exc.code.value] = outcomes.get(exc.code.value, 0) + 1
                continue
            assert SECRET not in data
            outcomes["read"] = outcomes.get("read", 0) + 1
    assert outcomes.get("read", 0) > 0  # the race ran both ways: some reads happened


def test_racing_a_swap_never_writes_outside(swapping: tuple[Workspace, Path, Path, Path]) -> None:
    workspace, host, _folder, _chart = swapping
    for n in range(400):
        try:
            workspace.fs.write_bytes(f"artifacts/race/out-{n}.txt", b"nini")
        except NiniError as exc:
            assert exc.code is ErrorCode.POLICY_VIOLATION
    assert sorted(p.name for p in host.iterdir()) == ["secret.txt"]
    assert (host / "secret.txt").read_bytes() == SECRET


def test_rooted_dir_of_a_plain_folder(tmp_path: Path) -> None:
    folder = RootedDir(tmp_path, label="the report folder")
    folder.write_bytes("a/b/c.txt", b"deep")
    assert folder.read_bytes("a/b/c.txt") == b"deep" and folder.listdir("a") == ["b"]
    assert "the report folder" in refused(folder.read_bytes, "missing.txt").message
