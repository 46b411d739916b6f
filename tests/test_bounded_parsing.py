"""nini's own process never parses a data file (issue 32, item 4): through the real CLI and a real
Jupyter server, a Parquet bomb described by the agent, a large CSV given with ``--data`` and a large
upload with ``load=1`` leave the peak memory of nini's process (VmHWM of the CLI or server process)
far below what parsing them there took; running out of memory is TOO_LARGE naming the limit, in
the limited reader, the kernel and the R worker, never "damaged".

The memory limit is lowered (``execution.memory_limit_mb`` 512; R keeps its 1 GiB) so that each
file fails fast.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nini.skills.builtin.run_r import r_status
from tests.conftest import Harness, runtime_harness, scripted_model_settings, write_settings
from tests.llm_server import text, tool_call
from tests.timeouts import timeout

NINI = Path(sys.executable).with_name("nini")
LIMIT_MB = 512
LIMITED = {"NINI_EXECUTION__MEMORY_LIMIT_MB": str(LIMIT_MB)}
# nini's process (CLI or server) may grow by this much at most while a file is read: parsing the
# files below in it took 1 GB and more (the bomb decodes to 1 GB of text, the CSV to 1.9 GB peak)
GROWTH_BOUND = 256 * 2**20
UPLOAD_GROWTH_BOUND = 64 * 2**20  # the server, while a 150 MB upload is stored and loaded
pytestmark = pytest.mark.slow


def write_bomb(path: Path, rows: int = 1_000_000, width: int = 1000) -> None:
    """A Parquet file of about 100 KB whose one text column decodes to ``rows * width`` bytes: a
    single dictionary value, its indices run-length encoded; no Arrow schema stored, so readers
    decode it to plain text, not a category."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    column = pa.DictionaryArray.from_arrays(pa.array(np.zeros(rows, np.int8)), pa.array(["x" * width]))
    pq.write_table(pa.table({"a": column}), path, store_schema=False, compression="zstd")
    assert path.stat().st_size < 256 * 1024


def write_csv(path: Path, megabytes: int) -> None:
    """A CSV of two columns, four bytes a row: pandas needs several times its size in memory."""
    block = b"1,x\n" * (256 * 1024)  # 1 MiB
    with path.open("wb") as file:
        file.write(b"n,s\n")
        for _ in range(megabytes):
            file.write(block)


def peak_bytes(pid: int) -> int:
    """VmHWM of process ``pid`` (its peak resident memory), or 0 once it is gone."""
    try:
        with open(f"/proc/{pid}/status") as status:
            line = next(line for line in status if line.startswith("VmHWM:"))
    except (OSError, StopIteration):
        return 0
    return int(line.split()[1]) * 1024


def nini(
    *args: str, stdin: str | None = None, env: dict[str, str] | None = None
) -> tuple[subprocess.CompletedProcess[str], int]:
    """Run the real ``nini`` command (its project: a folder of NINI_HOME's, not the checkout); its
    result and the peak memory of its own process, read from /proc while it runs (VmHWM only
    grows, so the last reading is the peak up to then)."""
    project = Path(os.environ["NINI_HOME"]).parent / "project"
    project.mkdir(exist_ok=True)
    process = subprocess.Popen(
        [str(NINI), "--project-dir", str(project), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )
    readings = [0]
    done = threading.Event()

    def watch() -> None:
        while not done.wait(0.02):
            readings.append(max(readings[-1], peak_bytes(process.pid)))

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        stdout, stderr = process.communicate(stdin, timeout=timeout(300))
    finally:
        done.set()
        watcher.join()
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr), readings[-1]


def tool_results(llm: Any) -> list[dict[str, Any]]:
    """The tool results the model was shown, as the JSON they were sent as."""
    messages = llm.requests[-1]["messages"]
    return [json.loads(m["content"]) for m in messages if m.get("role") == "tool"]


def test_a_parquet_bomb_the_agent_describes_is_too_large_and_the_cli_stays_small(
    nini_home: Path, tmp_path: Path, llm_server: Any
) -> None:
    write_settings(nini_home, scripted_model_settings(llm_server))
    small = tmp_path / "small.csv"
    small.write_text("a\nx\ny\n")
    llm_server.reply(tool_call("describe_dataset", name="small"), text("loaded"))
    loaded, usual = nini("ask", "--session", "bomb", "--new", "--data", str(small), "load it", env=LIMITED)
    assert loaded.returncode == 0, loaded.stderr
    assert tool_results(llm_server)[-1]["shape"] == [2, 1]
    # agent code can write anything into its workspace, the dataset's file too
    (stored,) = (nini_home / "sessions" / "bomb" / "workspace" / "datasets").glob("small@*.parquet")
    write_bomb(stored)

    llm_server.reply(tool_call("describe_dataset", name="small", rows=3), text("described"))
    asked, peak = nini("ask", "--session", "bomb", "--new", "describe small", env=LIMITED)
    assert asked.returncode == 0, asked.stderr
    error = tool_results(llm_server)[-1]["error"]
    assert (
        error["code"] == "TOO_LARGE"
        and f"the limit of {LIMIT_MB:,} MiB (execution.memory_limit_mb)" in error["message"]
    ), error
    assert "damaged" not in error["message"] and str(nini_home) not in error["message"]
    assert peak < usual + GROWTH_BOUND, (peak, usual)


def test_a_large_csv_given_with_data_is_too_large_or_too_slow_and_the_cli_stays_small(tmp_path: Path) -> None:
    english = {**LIMITED, "NINI_UI__LANGUAGE": "en"}
    broken = tmp_path / "broken.parquet"  # a truly malformed file keeps its own code
    broken.write_bytes(b"\x00not parquet\xff" * 40)
    refused, usual = nini("run-code", "-", "--session", "big", "--new", "--data", str(broken), stdin="1", env=english)
    assert refused.returncode == 1 and refused.stderr.startswith(
        "error [INVALID_ARGUMENT]: broken.parquet could not be read"
    )

    big = tmp_path / "big.csv"
    write_csv(big, 240)
    done, peak = nini(
        "run-code", "-", "--session", "big", "--new", "--data", str(big), stdin="print(len(df))", env=english
    )
    assert done.returncode == 1, done.stderr
    assert done.stderr == (
        f"error [TOO_LARGE]: reading 'big.csv' needs more memory than the limit of {LIMIT_MB:,} MiB "
        "(execution.memory_limit_mb); use a smaller file, or raise the limit\n"
    )
    assert peak < usual + GROWTH_BOUND, (peak, usual)

    slow = {**english, "NINI_EXECUTION__MEMORY_LIMIT_MB": "4096", "NINI_EXECUTION__TIMEOUT_S": "1"}
    stopped, _ = nini("run-code", "-", "--session", "big", "--new", "--data", str(big), stdin="1", env=slow)
    assert stopped.returncode == 1 and stopped.stderr == (
        "error [TIMEOUT]: reading 'big.csv' took longer than 1 s (execution.timeout_s) and was stopped\n"
    )


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Harness]:
    yield from runtime_harness(tmp_path_factory, {"execution": {"memory_limit_mb": LIMIT_MB}})  # R keeps its 1 GiB


def test_a_dataset_too_large_for_the_kernel_or_the_r_worker_is_too_large_not_damaged(
    harness: Harness, tmp_path: Path
) -> None:
    session = harness.session()
    small = tmp_path / "small.csv"
    small.write_text("a\nx\ny\n")
    assert harness.call(session, "load_dataset", path=session.upload(small), name="small").success
    write_bomb(session.workspace.root / session.dataset_file("small"))  # what agent code can do

    as_df = harness.call(session, "run_code", code="print(len(df))", dataset_name="small")
    by_name = harness.call(session, "run_code", code="frame = datasets['small']")
    described = harness.call(session, "describe_dataset", name="small")
    limit_named = f"dataset 'small' cannot be read: it needs more memory than the limit of {LIMIT_MB:,} MiB"
    assert as_df.error["code"] == "TOO_LARGE" and as_df.error["message"].startswith(limit_named), as_df.error
    assert "(execution.memory_limit_mb)" in as_df.error["message"]
    assert by_name.error["code"] == "CODE_ERROR" and limit_named in by_name.error["message"], by_name.error
    assert described.error["code"] == "TOO_LARGE" and f"{LIMIT_MB:,} MiB" in described.error["message"]
    errors = [as_df.error, by_name.error, described.error]
    if r_status(harness.runtime.settings)[0]:
        in_r = harness.call(session, "run_r_code", code="print(nrow(df))", dataset_name="small")
        r_limit = f"{harness.runtime.settings.r.memory_limit_mb:,} MiB (r.memory_limit_mb)"
        assert in_r.error["code"] == "TOO_LARGE" and r_limit in in_r.error["message"], in_r.error
        errors.append(in_r.error)
    assert not any("damaged" in e["message"] for e in errors)
    # the kernel goes on: the next run that does not read the dataset works
    assert harness.call(session, "run_code", code="print(1 + 1)").result["stdout"] == "2\n"


def upload(server: Any, session_id: str, name: str, path: Path) -> tuple[int, dict[str, Any]]:
    """POST the file at ``path`` with load=1, streamed from disk (the test holds none of it)."""
    url = f"{server.url}nini/api/sessions/{session_id}/files?name={name}&load=1"
    with path.open("rb") as body:
        headers = {
            **server.headers,
            "Content-Length": str(path.stat().st_size),
            "Content-Type": "application/octet-stream",
        }
        request = urllib.request.Request(url, data=body, method="POST", headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=timeout(300)) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read())


def test_an_upload_loaded_as_a_dataset_keeps_the_server_small(nini_home: Path, tmp_path: Path) -> None:
    from jupyter_ext.serve import ServerProcess
    from tests.jupyter_ext.conftest import nini_env

    small, big = tmp_path / "small.csv", tmp_path / "big.csv"
    write_csv(small, 1)
    write_csv(big, 150)
    env = nini_env(nini_home, tmp_path) | LIMITED | {"NINI_UI__LANGUAGE": "en"}
    server = ServerProcess.start(root_dir=tmp_path, env=env, output=(tmp_path / "server.log").open("wb"))
    try:
        session_id = call(server, "POST", "nini/api/sessions", {"title": "uploads"})["data"]["id"]
        status, loaded = upload(server, session_id, "small.csv", small)  # the server has done this once
        assert status == 201 and loaded["data"]["dataset"]["shape"] == [256 * 1024, 2], loaded
        pid = server.process.pid
        Path(f"/proc/{pid}/clear_refs").write_text("5")  # VmHWM starts again from what it holds now
        before = peak_bytes(pid)
        status, refused = upload(server, session_id, "big.csv", big)
        grown = peak_bytes(pid) - before
    finally:
        server.stop()
    assert status == 413 and refused["error"]["code"] == "TOO_LARGE", refused
    assert f"the limit of {LIMIT_MB:,} MiB" in refused["error"]["message"]
    # the 150 MB body went to a file as it came, and only a reader child parsed it
    assert grown < UPLOAD_GROWTH_BOUND, grown
    workspace = nini_home / "sessions" / session_id / "workspace"
    assert (workspace / "uploads" / "big.csv").stat().st_size == big.stat().st_size


def call(server: Any, method: str, path: str, body: Any = None) -> Any:
    data = json.dumps(body).encode() if body is not None else (b"" if method == "POST" else None)
    request = urllib.request.Request(server.url + path, data=data, method=method, headers=server.headers)
    with urllib.request.urlopen(request, timeout=timeout(120)) as response:
        return json.loads(response.read())
