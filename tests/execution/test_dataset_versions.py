"""Datasets are versioned and immutable: a save writes a new file, the record's commit makes it
current, readers open the file the record names, and a killed or concurrent save never leaves a
file that disagrees with the record (issue 18). Real CLI processes, real SIGKILL."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pandas as pd
import pytest

from nini.config import load_settings
from nini.history.store import HistoryStore
from tests.conftest import write_settings
from tests.timeouts import timeout

NINI = str(Path(sys.executable).with_name("nini"))
WRITERS = 5  # concurrent saves: more than the 2 cores, so they interleave; each is a kernel start


def _run(env: dict[str, str], cwd: Path, code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [NINI, "run-code", "-", "--session", "s", "--new", *args],
        input=code,
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout(180),
    )


def _save(writer: int) -> str:
    return f"import pandas as pd\noutput_df = pd.DataFrame({{'writer': [{writer}] * 3}})\n"


def _record(home: Path) -> tuple[str, dict]:
    """The file the record names for dataset ``ds`` and the execution that saved it."""
    store = HistoryStore.from_settings(load_settings(home=home))
    try:
        row = store.get_dataset("s", "ds")
        return row["path"], store.get_execution(row["source_execution_id"])
    finally:
        store.close()


def _datasets_folder(home: Path) -> Path:
    return home / "sessions" / "s" / "workspace" / "datasets"


@pytest.fixture
def env(nini_home: Path) -> dict[str, str]:
    return {**os.environ, "NINI_HOME": str(nini_home)}


def test_each_save_is_a_new_file_and_readers_open_the_recorded_one(env, nini_home: Path, tmp_path: Path) -> None:  # noqa: ANN001
    assert _run(env, tmp_path, _save(1), "--save-as", "ds").returncode == 0
    first, _ = _record(nini_home)
    assert _run(env, tmp_path, _save(2), "--save-as", "ds").returncode == 0
    second, execution = _record(nini_home)
    folder = _datasets_folder(nini_home)
    assert first != second and first.startswith("datasets/ds@") and "writer': [2]" in execution["code"]
    assert sorted(p.name for p in folder.iterdir()) == [second.removeprefix("datasets/")]  # the replaced one is gone
    # a complete version nothing recorded (a save killed before its commit, by a nini still alive)
    started = Path(f"/proc/{os.getpid()}/stat").read_text().rsplit(")", 1)[1].split()[19]
    stray = folder / f"ds@{os.getpid()}-{started}-0000abcd.parquet"
    pd.DataFrame({"writer": [99]}).to_parquet(stray)
    read = _run(env, tmp_path, "print(int(df['writer'].iloc[0]), sorted(datasets))", "--dataset", "ds")
    assert read.returncode == 0 and read.stdout == "2 ['ds']\n"
    assert stray.exists()  # its writer lives: it may still be recorded


@pytest.mark.slow
def test_concurrent_saves_all_land_and_the_record_names_the_file_with_its_writers_data(
    env,
    nini_home: Path,
    tmp_path: Path,  # noqa: ANN001
) -> None:
    # concurrent kernels of one session share its sandbox user, whose process limit (execution.max_processes,
    # 64 threads and processes) could stop some of them starting: that is the limit working, not this test's
    write_settings(nini_home, {"execution": {"max_processes": 1024}})
    assert _run(env, tmp_path, "x = 1").returncode == 0  # the session exists
    with ThreadPoolExecutor(WRITERS) as pool:
        done = list(pool.map(lambda writer: _run(env, tmp_path, _save(writer), "--save-as", "ds"), range(WRITERS)))
    assert [d.returncode for d in done] == [0] * WRITERS, [d.stderr[-500:] for d in done]
    path, execution = _record(nini_home)
    saved = pd.read_parquet(nini_home / "sessions" / "s" / "workspace" / path)
    assert f"[{int(saved['writer'].iloc[0])}] * 3" in execution["code"]  # the file holds the recorded writer's data
    assert sorted(p.name for p in _datasets_folder(nini_home).iterdir()) == [path.removeprefix("datasets/")]


@pytest.mark.slow
def test_a_save_killed_between_the_file_and_the_record_leaves_the_record_true(
    env,
    nini_home: Path,
    tmp_path: Path,  # noqa: ANN001
) -> None:
    """SIGKILL the moment the new version's file appears (before, or just after, the commit):
    the record and the file it names agree, and the next start leaves no stray file."""
    assert _run(env, tmp_path, _save(0), "--save-as", "ds").returncode == 0
    folder = _datasets_folder(nini_home)
    for writer in (1, 2):  # two kills, each the moment its file appears
        before = set(os.listdir(folder))
        cli = subprocess.Popen(
            [NINI, "run-code", "-", "--session", "s", "--new", "--save-as", "ds"],
            stdin=subprocess.PIPE,
            env=env,
            cwd=tmp_path,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        cli.stdin.write((_save(writer) + "import time\ntime.sleep(0.5)\n").encode())
        cli.stdin.close()
        deadline = time.monotonic() + 120
        while not (set(os.listdir(folder)) - before - {n for n in os.listdir(folder) if n.endswith(".tmp")}):
            assert time.monotonic() < deadline and cli.poll() is None, "the save never happened"
            time.sleep(0.001)
        cli.send_signal(signal.SIGKILL)
        cli.wait()
        path, execution = _record(nini_home)
        recorded = pd.read_parquet(nini_home / "sessions" / "s" / "workspace" / path)
        assert f"[{int(recorded['writer'].iloc[0])}] * 3" in execution["code"]
        # the next start reads what the record names and sweeps the killed writer's leftovers
        read = _run(env, tmp_path, "print(int(df['writer'].iloc[0]))", "--dataset", "ds")
        assert read.returncode == 0 and read.stdout == f"{int(recorded['writer'].iloc[0])}\n"
        assert sorted(os.listdir(folder)) == [_record(nini_home)[0].removeprefix("datasets/")]
    assert json.loads((nini_home / "sessions" / "s" / "workspace" / ".nini-datasets.json").read_text())["files"] == {
        "ds": _record(nini_home)[0]
    }


@pytest.mark.slow
def test_charts_of_a_run_killed_while_saving_them_are_removed_by_the_next_start(
    env,
    nini_home: Path,
    tmp_path: Path,  # noqa: ANN001
) -> None:
    artifacts = nini_home / "sessions" / "s" / "workspace" / "artifacts"
    kept = _run(env, tmp_path, "import matplotlib.pyplot as plt\nplt.plot([1, 2])\n", "--label", "kept")
    assert kept.returncode == 0 and sorted(os.listdir(artifacts)) == ["kept.png", "kept.svg"]  # no list left behind
    cli = subprocess.Popen(
        [NINI, "run-code", "-", "--session", "s", "--new", "--label", "flood"],
        stdin=subprocess.PIPE,
        env=env,
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    cli.stdin.write(
        b"import matplotlib.pyplot as plt\nfor i in range(150):\n    plt.figure(); plt.plot(range(i + 2))\n"
    )
    cli.stdin.close()
    deadline = time.monotonic() + 120
    while not any(name.startswith("flood") for name in os.listdir(artifacts)):
        assert time.monotonic() < deadline and cli.poll() is None, "no chart was saved"
        time.sleep(0.01)
    cli.send_signal(signal.SIGKILL)
    cli.wait()
    assert any(name.startswith("flood") for name in os.listdir(artifacts))  # written, never recorded
    assert _run(env, tmp_path, "x = 1").returncode == 0  # the next start sweeps
    assert sorted(os.listdir(artifacts)) == ["kept.png", "kept.svg"]
