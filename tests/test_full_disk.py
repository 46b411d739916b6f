"""A full disk is NO_SPACE on every path (issue 36, item 6), through the real ``nini`` CLI on real full
disks: a small tmpfs mounted as the sessions' folder or as NINI_HOME and filled. The message says the
disk is full and what to do, names no host path and never blames the code; once space is freed,
everything works again and nothing earlier was lost.

We run as root in CI; where ``mount`` is not permitted these tests are skipped.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nini.execution.sandbox import probe_bwrap
from tests.conftest import record_sessions
from tests.timeouts import timeout

NINI = Path(sys.executable).with_name("nini")
pytestmark = [
    pytest.mark.skipif(not probe_bwrap()[0], reason=f"no working bubblewrap: {probe_bwrap()[1]}"),
    pytest.mark.slow,
]
ADVICE = "free some space"


@contextlib.contextmanager
def small_disk(folder: Path, size_mb: int) -> Iterator[Path]:
    """A tmpfs of ``size_mb`` MiB mounted at ``folder`` (made), unmounted afterwards."""
    folder.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size_mb}m", "tmpfs", str(folder)], capture_output=True, text=True
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip() or mounted.returncode}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)  # lazy: a kernel may still sit in it


def fill(folder: Path, leave: int = 0) -> Path:
    """Write ``folder/filler`` until the disk is full, then give back ``leave`` bytes; the filler."""
    filler = folder / "filler"
    with open(filler, "ab", buffering=0) as handle:
        try:
            while True:
                handle.write(b"\0" * (1 << 16))
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
    if leave:
        os.truncate(filler, max(0, filler.stat().st_size - leave))
    return filler


def nini(
    home: Path,
    *args: str,
    code: str | None = None,
    cwd: Path | None = None,
    **settings: str,
) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "NINI_HOME": str(home),
        "NINI_UI__LANGUAGE": "en",
        "NINI_EXECUTION__PYTHON_POLICY": "off",
        **settings,
    }
    return subprocess.run(
        [str(NINI), *args], input=code, capture_output=True, text=True, timeout=timeout(180), env=env, cwd=cwd
    )


def run(home: Path, session: str, code: str, *args: str, new: bool = False) -> tuple[int, dict[str, Any] | None, str]:
    """``nini run-code - --json`` in ``session``: exit code, the JSON result (None when the command
    failed before a result), stderr."""
    done = nini(home, "run-code", "-", "--session", session, *(["--new"] if new else []), "--json", *args, code=code)
    try:
        result = json.loads(done.stdout)
    except ValueError:
        result = None
    return done.returncode, result, done.stderr


def assert_no_space(message: str, *roots: Path) -> None:
    """A NO_SPACE message: the disk is full, what to do, no host path, not the code's fault."""
    assert "the disk is full" in message and ADVICE in message, message
    for root in roots:
        assert str(root) not in message, message
    assert not re.search(r"(^|[\s'(])/(tmp|root|home|var)/", message), message


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def test_code_that_fills_the_workspace_disk_is_no_space_and_not_blamed(home: Path, tmp_path: Path) -> None:
    code, first, _ = run(home, "s1", "print('kept')", new=True)
    assert code == 0 and first is not None
    with small_disk(home / "sessions" / "s2", 16) as disk:
        code, result, stderr = run(
            home,
            "s2",
            "with open('big.bin', 'wb') as f:\n    for _ in range(64):\n        f.write(b'x' * 2**20)\n",
            new=True,
        )
        assert code == 1 and result is not None, stderr
        error = result["error"]
        assert error["code"] == "NO_SPACE" and error["line"] in (1, 3), error  # where it happened stays
        assert "not at fault" in error["message"] and "No space left on device" in error["message"]
        assert_no_space(error["message"], tmp_path)
        assert "CODE_ERROR" not in json.dumps(result)

        big = next(disk.rglob("big.bin"))
        big.unlink()  # space freed: the same session runs again
        code, again, stderr = run(home, "s2", "print('again')")
        assert code == 0 and again is not None and again["result"]["stdout"] == "again\n", stderr
    shown = nini(home, "sessions", "show", "s1", "--json")
    assert shown.returncode == 0 and "kept" in shown.stdout  # the earlier session is intact


def test_the_sandboxs_own_tmp_filling_up_is_its_limit_not_a_full_disk(home: Path) -> None:
    """The sandbox's /tmp is a tmpfs of execution.tmp_size_mb: filling it is nini's limit (TOO_LARGE
    naming the setting), not a full disk for an administrator to free (the workspace's has room)."""
    done = nini(
        home,
        "run-code",
        "-",
        "--session",
        "s1",
        "--new",
        "--json",
        NINI_EXECUTION__TMP_SIZE_MB="16",
        code="with open('/tmp/big.bin', 'wb') as f:\n    for _ in range(64):\n        f.write(b'x' * 2**20)\n",
    )
    error = json.loads(done.stdout)["error"]
    assert done.returncode == 1 and error["code"] == "TOO_LARGE", error
    assert "execution.tmp_size_mb" in error["message"] and "16 MiB" in error["message"]


def test_loading_saving_and_a_report_on_a_full_disk_are_no_space(home: Path, tmp_path: Path) -> None:
    data = tmp_path / "sales.csv"
    data.write_text("region,revenue\n" + "".join(f"r{n},{n}\n" for n in range(20_000)))
    record_sessions("s1", home=home)  # a precondition: a CLI run made it at the cost of a kernel start
    with small_disk(home / "sessions" / "s1", 32) as disk:
        # the folder is empty now: what the session made before lies beneath the mount
        code, made, stderr = run(home, "s1", "print('ready')")
        assert code == 0, stderr
        filler = fill(disk)

        code, result, stderr = run(home, "s1", "print(df.shape)", "--data", str(data))
        assert code == 1 and result is None and "error [NO_SPACE]" in stderr, stderr
        assert_no_space(stderr, tmp_path, data)

        reported = nini(home, "report", "--session", "s1")
        assert reported.returncode == 1 and "error [NO_SPACE]" in reported.stderr, reported.stderr
        assert_no_space(reported.stderr, tmp_path)

        filler.unlink()
        fill(disk, leave=256 << 10)  # room for the run's own files, not for the dataset it saves
        code, result, stderr = run(
            home,
            "s1",
            "import numpy as np, pandas as pd\n"
            "output_df = pd.DataFrame(np.random.rand(400_000, 4), columns=list('abcd'))\n",
            "--save-as",
            "noise",
        )
        assert code == 1 and result is not None, stderr
        assert result["error"]["code"] == "NO_SPACE", result["error"]
        assert_no_space(result["error"]["message"], tmp_path)
        assert not [p for p in (disk / "workspace" / "datasets").iterdir() if p.name.startswith("noise@")]

        filler.unlink()  # space freed: load, save and report work again
        code, result, stderr = run(home, "s1", "output_df = df.head(10)", "--data", str(data), "--save-as", "top")
        assert code == 0 and result is not None and result["result"]["datasets_saved"] == ["top"], stderr
        reported = nini(home, "report", "--session", "s1")
        assert reported.returncode == 0, reported.stderr


def test_a_full_nini_home_is_no_space_naming_the_database_and_the_library(home: Path, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    with small_disk(home, 48) as disk:
        code, _, stderr = run(home, "s1", "print('before')", new=True)
        assert code == 0, stderr
        assert nini(home, "prefs", "add", "report.decimals", "2", cwd=project).returncode == 0
        filler = fill(disk)

        code, result, stderr = run(home, "s1", "print('during')")
        assert code == 1 and "error [NO_SPACE]" in stderr and "$NINI_HOME/nini.db" in stderr, stderr
        assert_no_space(stderr, tmp_path)

        pref = nini(home, "prefs", "add", "report.title", "Sales", cwd=project)
        assert pref.returncode == 1 and "error [NO_SPACE]" in pref.stderr and "$NINI_HOME/nini.db" in pref.stderr
        kept = nini(
            home,
            "remember",
            "--add",
            "always show the sample size next to a mean because small groups mislead, instead of hiding it",
            "--level",
            "team",
            "--yes",
            cwd=project,
        )
        assert kept.returncode == 1 and "error [NO_SPACE]" in kept.stderr, kept.stderr
        assert "team experience library" in kept.stderr and "nothing was changed" in kept.stderr
        assert_no_space(kept.stderr, tmp_path)

        doctor = nini(home, "doctor")
        assert doctor.returncode == 1 and re.search(r"FAIL\s+disk of NINI_HOME\s+full", doctor.stdout), doctor.stdout

        filler.unlink()  # space freed: every write works again, nothing earlier was lost
        code, result, stderr = run(home, "s1", "print('after')")
        assert code == 0 and result is not None, stderr
        assert nini(home, "prefs", "add", "report.title", "Sales", cwd=project).returncode == 0
        listed = nini(home, "prefs", "list", cwd=project).stdout
        assert "report.decimals" in listed and "report.title" in listed
        shown = nini(home, "sessions", "show", "s1", "--json").stdout
        assert "before" in shown and "after" in shown
        assert re.search(
            r"(OK|WARN)\s+disk of NINI_HOME\s+(nearly full|\d)", nini(home, "doctor").stdout
        )  # 48 MiB: nearly


def test_postgresql_on_a_full_disk_is_no_space_naming_the_server() -> None:
    """PostgreSQL's data on a small tmpfs, filled: its "could not extend file" (SQLSTATE 53100) is
    NO_SPACE naming host:port/database, never DB_ERROR or the driver's raw error; freed, it works."""
    from nini.errors import NiniError
    from nini.history.store import HistoryStore
    from tests import pg_cluster

    if (reason := pg_cluster.unavailable()) is not None:
        pytest.skip(reason)
    import shutil
    import tempfile

    outside = Path(tempfile.mkdtemp(prefix="nini-pg-disk-"))  # the postgres user cannot reach pytest's 0700 folders
    outside.chmod(0o755)
    with contextlib.ExitStack() as cleanup, small_disk(outside / "disk", 96) as disk:
        cleanup.callback(shutil.rmtree, outside, True)
        disk.chmod(0o777)  # the cluster belongs to the postgres user under root
        cluster = pg_cluster.start(disk)
        try:
            store = HistoryStore(cluster.create_database())
            try:
                session_id = store.create_session()["id"]
                store.add_message(session_id, "user", "before")
                filler = fill(disk)
                codes = set()
                for _ in range(50):
                    try:
                        store.add_message(session_id, "user", os.urandom(200_000).hex())
                    except NiniError as exc:
                        codes.add(exc.code.value)
                        assert f"127.0.0.1:{cluster.port}/" in exc.message and ADVICE in exc.message, exc.message
                assert codes == {"NO_SPACE"}
                filler.unlink()
                assert store.add_message(session_id, "user", "after")["content"] == "after"
                assert [m["content"] for m in store.list_messages(session_id)][
                    :: len(store.list_messages(session_id)) - 1
                ] == ["before", "after"]
            finally:
                store.close()
        finally:
            cluster.stop()


def test_loading_a_workspace_file_onto_a_full_disk_is_no_space(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """load_dataset of a file already in the workspace: its Parquet, written by the limited reader
    child, meets the full disk (was INVALID_ARGUMENT "x.csv could not be read", then INTERNAL)."""
    import asyncio

    from nini.config import load_settings
    from nini.runtime import Runtime
    from nini.skills.invoke import invoke

    monkeypatch.setenv("NINI_HOME", str(home))
    with small_disk(home / "sessions", 8) as disk:

        async def scenario() -> tuple[Any, Any, list[str]]:
            async with Runtime(load_settings(), project_dir=tmp_path) as runtime:
                session = runtime.create_session()
                uploads = session.workspace.root / "uploads"
                uploads.mkdir(parents=True)
                (uploads / "x.csv").write_text("a,b\n" + "".join(f"{n},{n * 1.5}\n" for n in range(100_000)))
                filler = fill(disk)
                refused = await invoke(session, "load_dataset", {"path": "uploads/x.csv"})
                left = sorted(os.listdir(session.workspace.root / "datasets"))
                filler.unlink()
                return refused, await invoke(session, "load_dataset", {"path": "uploads/x.csv"}), left

        refused, loaded, left = asyncio.run(scenario())
    assert not refused.success and refused.error["code"] == "NO_SPACE", refused.error
    assert_no_space(refused.error["message"], tmp_path)
    assert left == [] and loaded.success and loaded.result["shape"] == [100_000, 2]
