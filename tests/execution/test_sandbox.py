"""The bubblewrap sandbox with real kernels: no network, only the workspace writable, private /tmp."""

from __future__ import annotations

import asyncio
import socket
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from nini.errors import ErrorCode, NiniError
from nini.execution.sandbox import _hidden_dirs, bwrap_command, probe_bwrap, resolve_mode

from .conftest import Kernels, make_kernels, needs_bwrap

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def sandboxed(
    event_loop_for_module: asyncio.AbstractEventLoop, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Kernels]:
    if not probe_bwrap()[0]:
        pytest.skip(f"no working bubblewrap: {probe_bwrap()[1]}")
    yield from make_kernels(event_loop_for_module, tmp_path_factory.mktemp("sandboxed"), sandbox="bwrap")


@pytest.fixture
def listening_server() -> Iterator[int]:
    """A TCP server on the host's 127.0.0.1; its port."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    try:
        yield server.getsockname()[1]
    finally:
        server.close()


@needs_bwrap
def test_sandboxed_kernel_runs_code(sandboxed: Kernels) -> None:
    out = sandboxed.run("import pandas as pd\nresult = int(pd.Series([1, 2]).sum())")
    assert out.success, out.error
    assert out.result == 3
    assert sandboxed.pool.kernel_info("shared")["sandbox"] == "bwrap"


@needs_bwrap
@pytest.mark.parametrize("address", ["1.1.1.1:53", "host-loopback"])
def test_network_is_blocked(sandboxed: Kernels, listening_server: int, address: str) -> None:
    host, port = ("127.0.0.1", listening_server) if address == "host-loopback" else ("1.1.1.1", 53)
    with socket.create_connection(("127.0.0.1", listening_server), timeout=2):
        pass  # the host itself reaches its server: only the sandbox is cut off
    out = sandboxed.run(f"import socket\ns = socket.socket()\ns.settimeout(3)\ns.connect(({host!r}, {port}))")
    assert not out.success
    assert out.error["ename"] in ("ConnectionRefusedError", "OSError", "TimeoutError")
    assert out.error["line"] == 4


@needs_bwrap
@pytest.mark.parametrize("where", ["etc", "repo", "home", "nini_home"])
def test_writing_outside_the_workspace_does_not_reach_the_host(sandboxed: Kernels, where: str) -> None:
    session = "writer"
    workspace = sandboxed.workspace(session)
    nini_home = workspace.root.parents[2]
    folder = {"etc": Path("/etc"), "repo": REPO_ROOT, "home": Path.home(), "nini_home": nini_home}[where]
    target = folder / f"nini-sandbox-probe-{uuid.uuid4().hex[:8]}"
    try:
        sandboxed.run(f"open({str(target)!r}, 'w').write('escaped')", session)
        assert not target.exists()
    finally:
        target.unlink(missing_ok=True)


@needs_bwrap
def test_read_only_places_fail_loudly(sandboxed: Kernels) -> None:
    out = sandboxed.run(f"open({str(Path.home() / 'probe.txt')!r}, 'w')")
    assert out.error["ename"] == "OSError" and "Read-only file system" in out.error["message"]


@needs_bwrap
def test_writing_inside_the_workspace_works(sandboxed: Kernels) -> None:
    out = sandboxed.run("open('notes.txt', 'w').write('kept')\nopen('artifacts/a.txt', 'w').write('x')", "inside")
    assert out.success, out.error
    assert (sandboxed.workspace("inside").root / "notes.txt").read_text() == "kept"


@needs_bwrap
def test_tmp_is_private(sandboxed: Kernels, tmp_path: Path) -> None:
    host_file = Path("/tmp") / f"nini-host-{uuid.uuid4().hex[:8]}"
    inner_name = f"/tmp/nini-inner-{uuid.uuid4().hex[:8]}"
    host_file.write_text("host")
    try:
        out = sandboxed.run(
            f"import os\nopen({inner_name!r}, 'w').write('inner')\nresult = os.path.exists({str(host_file)!r})"
        )
        assert out.success, out.error
        assert out.result is False
        assert not Path(inner_name).exists()
    finally:
        host_file.unlink()


@needs_bwrap
def test_other_sessions_and_settings_are_hidden(sandboxed: Kernels) -> None:
    other = sandboxed.workspace("other-session")
    (other.root / "secret.txt").write_text("theirs")
    settings = other.root.parents[2] / "settings.json"
    settings.write_text('{"api_key": "sk-secret"}')
    out = sandboxed.run(
        f"import os\nresult = [os.path.exists({str(other.root / 'secret.txt')!r}), os.path.exists({str(settings)!r})]",
        "mine",
    )
    assert out.result == [False, False]


@needs_bwrap
def test_interrupt_works_in_the_sandbox(sandboxed: Kernels) -> None:
    sandboxed.run("kept = 3", "interrupted")
    out = sandboxed.run("while True:\n    pass", "interrupted", timeout_s=1)
    assert out.error["code"] == "TIMEOUT" and "keeps its variables" in out.error["message"]
    assert sandboxed.run("print(kept)", "interrupted").stdout == "3\n"


@needs_bwrap
def test_dead_sandboxed_kernel_is_replaced(sandboxed: Kernels) -> None:
    out = sandboxed.run("import os\nos._exit(3)", "dies")
    assert out.error["code"] == "KERNEL_DIED"
    assert sandboxed.run("print('alive')", "dies").stdout == "alive\n"


def test_hidden_dirs_cover_home_tmp_and_nini_home() -> None:
    workspace = Path("/srv/nini/sessions/abc/workspace")
    hidden = _hidden_dirs(workspace)
    assert Path("/tmp") in hidden and Path.home().resolve() in hidden and Path("/srv/nini") in hidden
    cmd = bwrap_command(["python"], workspace, Path("/tmp/nini-kernel-x"))
    assert cmd.index("--tmpfs") < cmd.index("--bind")  # mount points are made inside the tmpfs
    assert cmd[cmd.index("--unsetenv") + 1] == "JPY_PARENT_PID"
    assert cmd[-2:] == ["--", "python"]


def test_sandbox_setting_resolution(monkeypatch: pytest.MonkeyPatch) -> None:
    assert resolve_mode("none") == "none"
    monkeypatch.setenv("PATH", "/nonexistent")
    probe_bwrap.cache_clear()
    try:
        assert resolve_mode("auto") == "none"
        with pytest.raises(NiniError) as caught:
            resolve_mode("bwrap")
        assert caught.value.code is ErrorCode.INTERNAL
        assert "bwrap" in caught.value.message and "auto" in caught.value.message
    finally:
        probe_bwrap.cache_clear()
