"""The sweep of a session workspace: dead writers' temp files and unrecorded dataset versions go;
recorded files, a live writer's work, and anything reached through a link stay."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from nini.execution.leftovers import ARTIFACT_TEMP_GRACE_S, sweep_workspace
from nini.execution.runtime_dirs import owner_token, token_alive
from nini.execution.workspace import DATASET_VERSION, Workspace


def _dead_token() -> str:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return f"{child.pid}-1"


def test_owner_tokens_name_live_and_dead_processes() -> None:
    assert token_alive(owner_token()) and not token_alive(_dead_token())
    assert not token_alive(f"{os.getpid()}-1") and not token_alive("garbage") and not token_alive("-1-2")


def test_new_dataset_files_are_versions_of_their_name(tmp_path: Path) -> None:
    workspace = Workspace(tmp_path).ensure()
    first, second = (workspace.new_dataset_file("sales.2024", owner_token()) for _ in range(2))
    assert first != second and all(path.startswith("datasets/sales.2024@") for path in (first, second))
    match = DATASET_VERSION.match(first.removeprefix("datasets/"))
    assert match and match.group("name") == "sales.2024" and match.group("owner") == owner_token()


def test_the_sweep_removes_only_dead_writers_leftovers(tmp_path: Path) -> None:
    workspace = Workspace(tmp_path).ensure()
    datasets, artifacts = workspace.datasets_dir, workspace.artifacts_dir
    dead, live = _dead_token(), owner_token()
    files = {
        "recorded": f"datasets/sales@{dead}-0000aaaa.parquet",  # a dead writer's, but the record names it
        "legacy": "datasets/old.parquet",
        "unrecorded_dead": f"datasets/sales@{dead}-0000bbbb.parquet",
        "unrecorded_live": f"datasets/sales@{live}-0000cccc.parquet",  # about to be recorded
        "temp_dead": f"datasets/.sales@{dead}-0000dddd.parquet.x1y2.tmp",
        "temp_live": f"datasets/.sales@{live}-0000eeee.parquet.x1y2.tmp",
        "temp_ownerless": "datasets/.old.parquet.abc123.tmp",
        "chart_temp_old": "artifacts/.fig.png.q1w2.tmp",
        "chart_temp_new": "artifacts/.fig2.png.q1w2.tmp",
        "chart": "artifacts/fig.png",
    }
    for relative in files.values():
        (tmp_path / relative).write_bytes(b"data")
    stale = time.time() - ARTIFACT_TEMP_GRACE_S - 5
    os.utime(tmp_path / files["chart_temp_old"], (stale, stale))
    outside = tmp_path.parent / f"{tmp_path.name}-outside.parquet"
    outside.write_bytes(b"keep")
    (datasets / f"sales@{dead}-0000ffff.parquet").symlink_to(outside)  # a planted link: removed, never followed

    removed = sweep_workspace(workspace, [files["recorded"], files["legacy"]])

    gone = {"unrecorded_dead", "temp_dead", "temp_ownerless", "chart_temp_old"}
    assert set(removed) == {files[key] for key in gone} | {f"datasets/sales@{dead}-0000ffff.parquet"}
    for key, relative in files.items():
        assert (tmp_path / relative).exists() is (key not in gone), key
    assert outside.read_bytes() == b"keep" and sorted(p.name for p in artifacts.iterdir()) == [
        ".fig2.png.q1w2.tmp",
        "fig.png",
    ]


def test_a_dead_runs_chart_list_removes_the_charts_no_record_names(tmp_path: Path) -> None:
    workspace = Workspace(tmp_path).ensure()
    dead, live = _dead_token(), owner_token()
    for name in ("kept.png", "lost.png", "lost.svg", "other.png", "mine.png"):
        (workspace.artifacts_dir / name).write_bytes(b"png")
    (workspace.artifacts_dir / f".pending-{dead}-00000001.txt").write_text("kept.png\nlost.png\nlost.svg\n../escape\n")
    (workspace.artifacts_dir / f".pending-{live}-00000002.txt").write_text("mine.png\n")  # a run under way
    asked = []

    def recorded() -> set[str]:
        asked.append(1)
        return {"artifacts/kept.png"}

    removed = sweep_workspace(workspace, [], recorded)
    assert sorted(removed) == [
        "artifacts/.pending-" + dead + "-00000001.txt",
        "artifacts/lost.png",
        "artifacts/lost.svg",
    ]
    assert sorted(p.name for p in workspace.artifacts_dir.iterdir()) == [
        f".pending-{live}-00000002.txt",
        "kept.png",
        "mine.png",
        "other.png",
    ]
    assert asked == [1]


def test_a_link_where_a_folder_should_be_is_neither_swept_nor_followed(tmp_path: Path) -> None:
    workspace = Workspace(tmp_path / "ws").ensure()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / f".pending-{_dead_token()}-00000001.txt").write_text("keep.png\n")
    (outside / "keep.png").write_bytes(b"png")
    (outside / ".x.parquet.abc.tmp").write_bytes(b"tmp")
    for folder in (workspace.artifacts_dir, workspace.datasets_dir):
        folder.rmdir()
        folder.symlink_to(outside)
    assert sweep_workspace(workspace, []) == [] and len(list(outside.iterdir())) == 3
