"""Data over REST (issue 22): a file uploaded into the session workspace, its name reduced to a plain
file name, a link in the way refused, the size limit applied, and loaded as a dataset on request."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from traitlets.config import Config

from tests.jupyter_ext.conftest import new_session

CSV = b"region,revenue\nnorth,10\nsouth,12\n"


@pytest.fixture
def jp_server_config(nini_home: Path) -> Config:
    (nini_home).mkdir(parents=True, exist_ok=True)
    (nini_home / "settings.json").write_text('{"server": {"max_upload_bytes": 4096}}')
    return Config(
        {"ServerApp": {"jpserver_extensions": {"jupyter_ext": True}}, "NiniExtensionApp": {"nini_home": str(nini_home)}}
    )


async def upload(api: Any, session_id: str, name: str, data: bytes, **params: str) -> Any:
    return await api("POST", "sessions", session_id, "files", body=data, params={"name": name, **params})


async def test_an_upload_lands_in_the_workspace_and_loads_as_a_dataset(api: Any, nini_home: Path) -> None:
    session_id = await new_session(api)
    stored = await upload(api, session_id, "../../sales.csv", CSV, load="1")
    assert stored.status == 201, stored.body
    assert (stored.data["path"], stored.data["size_bytes"]) == ("uploads/sales.csv", len(CSV))
    assert stored.data["dataset"]["name"] == "sales" and stored.data["dataset"]["shape"] == [2, 2]
    workspace = nini_home / "sessions" / session_id / "workspace"
    assert (workspace / "uploads" / "sales.csv").read_bytes() == CSV
    assert not (nini_home / "sessions" / "sales.csv").exists() and str(nini_home) not in str(stored.body)
    listed = (await api("GET", "sessions", session_id)).data
    assert [d["name"] for d in listed["datasets"]] == ["sales"]


async def test_bad_names_links_and_large_files_are_refused(api: Any, nini_home: Path, tmp_path: Path) -> None:
    session_id = await new_session(api)
    for name in ("", "..", "/"):
        bad = await upload(api, session_id, name, CSV)
        assert (bad.status, bad.error["code"]) == (400, "INVALID_ARGUMENT"), name
    too_large = await upload(api, session_id, "big.csv", b"x" * 5000)
    assert (too_large.status, too_large.error["code"]) == (413, "TOO_LARGE")
    workspace = nini_home / "sessions" / session_id / "workspace"
    (workspace / "uploads").mkdir(parents=True, exist_ok=True)
    outside = tmp_path / "outside.csv"
    outside.write_bytes(b"keep me")
    os.symlink(outside, workspace / "uploads" / "linked.csv")
    replaced = await upload(api, session_id, "linked.csv", CSV)  # the link is replaced, never followed
    assert replaced.status == 201 and outside.read_bytes() == b"keep me"
    assert not (workspace / "uploads" / "linked.csv").is_symlink()

    other = await new_session(api)
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    other_workspace = nini_home / "sessions" / other / "workspace"
    other_workspace.mkdir(parents=True, exist_ok=True)
    os.symlink(folder, other_workspace / "uploads")  # the uploads folder itself a link out
    refused = await upload(api, other, "a.csv", CSV)
    assert refused.status >= 400 and refused.error["code"] in ("POLICY_VIOLATION", "INVALID_ARGUMENT")
    assert list(folder.iterdir()) == [] and str(tmp_path) not in refused.error["message"]
    assert (await upload(api, "nosuchsession", "a.csv", CSV)).status == 404


async def test_an_upload_in_gbk_with_semicolons_loads_detected_or_as_the_query_says(api: Any) -> None:
    """Issue 35, item 6: the sidebar's uploads read files as load_dataset does, and say how."""
    session_id = await new_session(api)
    sales = "地区;销售额\n华北;1,5\n华南;2,25\n".encode("gbk")
    detected = await upload(api, session_id, "sales.csv", sales, load="1")
    assert detected.status == 201, detected.body
    dataset = detected.data["dataset"]
    assert (dataset["columns"], dataset["shape"]) == (["地区", "销售额"], [2, 2])
    assert dataset["dtypes"]["销售额"] == "float64" and dataset["decimal"] == ","
    assert dataset["encoding"] in ("gbk", "gb18030") and dataset["encoding_detected"] is True
    assert (dataset["sep"], dataset["sep_detected"]) == (";", True)

    given = await upload(api, session_id, "sales.csv", sales, load="1", encoding="GBK", sep=";")
    assert (given.data["dataset"]["encoding"], given.data["dataset"]["encoding_detected"]) == ("gbk", False)
    assert given.data["dataset"]["sep_detected"] is False

    noise = await upload(api, session_id, "noise.csv", bytes(range(256)) * 8, load="1")
    assert (noise.status, noise.error["code"]) == (400, "INVALID_ARGUMENT")
    assert "'noise.csv'" in noise.error["message"] and "encoding=" in noise.error["message"]
