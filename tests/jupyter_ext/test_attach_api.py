"""A file of the Jupyter root read as text the way nini reads data (issue 35, item 6: the sidebar's
attachments in any encoding): ``GET /nini/api/files/text`` through the real Jupyter server.

GBK, Latin-1 and UTF-8 files come back decoded with the encoding load_dataset detects for the same
bytes (checked by uploading them and loading them as datasets); a binary file is refused as not
text; ``..``, a link (to a file, or a folder on the way) and a hidden file are refused, and no
reply names a host path. The contents API itself fails on the GBK file: the reason for this endpoint.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from jupyter_server.auth import Authorizer
from tornado.httpclient import HTTPClientError

from tests.jupyter_ext.conftest import new_session

GBK = "地区,销售额\n华北,10\n华南,12\n".encode("gbk")
LATIN1 = "ville;café\nSão Paulo;1\nZürich;2\n".encode("latin-1")
UTF8 = b"region\tsales\nnorth\t10\n"
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 4


async def text_of(api: Any, path: str) -> Any:
    return await api("GET", "files", "text", params={"path": path})


async def loaded_encoding(api: Any, session_id: str, name: str, data: bytes) -> str:
    """The encoding load_dataset detects for ``data``, uploaded to the session as ``name``."""
    loaded = await api("POST", "sessions", session_id, "files", body=data, params={"name": name, "load": "1"})
    assert loaded.status == 201, loaded.body
    return loaded.data["dataset"]["encoding"]


async def test_text_in_any_encoding_reads_as_load_dataset_reads_it(api: Any, jp_fetch: Any, jp_root_dir: Path) -> None:
    folder = jp_root_dir / "data"
    folder.mkdir()
    files = {"data/sales_gbk.csv": GBK, "data/villes.csv": LATIN1, "notes.tsv": UTF8}
    for path, data in files.items():
        (jp_root_dir / path).write_bytes(data)
    with pytest.raises(
        HTTPClientError
    ) as contents:  # Jupyter's contents API reads UTF-8 only: why the sidebar asks here
        await jp_fetch("api", "contents", "data", "sales_gbk.csv", params={"format": "text", "type": "file"})
    assert contents.value.code == 400

    gbk = (await text_of(api, "data/sales_gbk.csv")).data
    assert gbk["text"] == GBK.decode("gbk") and gbk["encoding"] == "gb18030" and gbk["sep"] == ","
    assert (gbk["path"], gbk["size_bytes"], gbk["truncated"]) == ("data/sales_gbk.csv", len(GBK), False)
    latin = (await text_of(api, "/data/villes.csv")).data  # a leading / as the contents API allows
    assert latin["text"] == LATIN1.decode("latin-1") and latin["encoding"] == "cp1252" and latin["sep"] == ";"
    utf8 = (await text_of(api, "notes.tsv")).data
    assert (utf8["text"], utf8["encoding"], utf8["sep"]) == (UTF8.decode(), "utf-8", "\t")

    session_id = await new_session(api)  # the agent loading the same file later detects the same encoding
    for path, reply in (("data/sales_gbk.csv", gbk), ("data/villes.csv", latin), ("notes.tsv", utf8)):
        assert await loaded_encoding(api, session_id, path.rsplit("/", 1)[-1], files[path]) == reply["encoding"], path


async def test_a_large_file_is_read_to_the_limit_only(api: Any, jp_root_dir: Path) -> None:
    cities = ["北京", "上海", "广州", "深圳", "杭州", "南京", "成都", "武汉"]
    table = "城市,数量,备注\n" + "".join(f"{cities[i % 8]},{i},第{i}行的说明\n" for i in range(110_000))
    data = table.encode("gbk")  # ~2.5 MB
    (jp_root_dir / "big.csv").write_bytes(data)
    reply = (await text_of(api, "big.csv")).data
    assert reply["truncated"] is True and reply["size_bytes"] == len(data) and reply["encoding"] == "gb18030"
    assert table.startswith(reply["text"]) and len(reply["text"].encode("gbk")) in (2_000_000, 1_999_999)
    assert "\ufffd" not in reply["text"]  # the cut does not leave half a character


async def test_binary_files_are_refused_as_not_text(api: Any, jp_root_dir: Path) -> None:
    (jp_root_dir / "chart.png").write_bytes(PNG)
    (jp_root_dir / "nul.csv").write_bytes(b"a,b\n\x00\x00\x00\x01,2\n")
    for name in ("chart.png", "nul.csv"):
        refused = await text_of(api, name)
        assert (refused.status, refused.error["code"]) == (400, "INVALID_ARGUMENT"), name
        assert f"'{name}' is not text" in refused.error["message"]


async def test_paths_outside_the_root_links_and_hidden_files_are_refused(
    api: Any, jp_root_dir: Path, tmp_path: Path
) -> None:
    secret = tmp_path / "outside" / "secret.csv"
    secret.parent.mkdir()
    secret.write_text("password,hunter2\n")
    (jp_root_dir / "sub").mkdir()
    os.symlink(secret, jp_root_dir / "linked.csv")
    os.symlink(secret.parent, jp_root_dir / "sub" / "out")  # a folder on the way is a link
    (jp_root_dir / ".hidden.csv").write_text("a,b\n")
    cases = {
        "../outside/secret.csv": "INVALID_ARGUMENT",
        "sub/../../outside/secret.csv": "INVALID_ARGUMENT",
        "linked.csv": "POLICY_VIOLATION",
        "sub/out/secret.csv": "POLICY_VIOLATION",
        ".hidden.csv": "NOT_FOUND",
        "missing.csv": "NOT_FOUND",
        "sub": "POLICY_VIOLATION",
        "": "INVALID_ARGUMENT",
    }
    for path, code in cases.items():
        refused = await text_of(api, path)
        assert refused.error["code"] == code, (path, refused.body)
        assert "hunter2" not in str(refused.body) and str(tmp_path) not in str(refused.body), path
    assert (await text_of(api, str(secret))).error[
        "code"
    ] == "NOT_FOUND"  # an absolute path is the root's, as Jupyter's


async def test_refusals_follow_the_clients_language(api: Any, jp_root_dir: Path) -> None:
    (jp_root_dir / "chart.png").write_bytes(PNG)
    refused = await api("GET", "files", "text", params={"path": "chart.png"}, headers={"X-Nini-Language": "zh"})
    assert refused.error["message"] == "'chart.png' 不是文本（没有哪种编码能读它，是二进制文件），不能作为文本附加"


class NiniOnlyAuthorizer(Authorizer):
    """May use nini, may not read the server's files."""

    def is_authorized(self, handler: Any, user: Any, action: str, resource: str) -> bool:
        return resource == "nini"


@pytest.mark.parametrize("allowed", [True, False])
async def test_reading_a_file_needs_the_contents_permission(
    api: Any, jp_root_dir: Path, jp_serverapp: Any, allowed: bool
) -> None:
    (jp_root_dir / "a.csv").write_text("x,y\n1,2\n")
    if not allowed:
        jp_serverapp.web_app.settings["authorizer"] = NiniOnlyAuthorizer(parent=jp_serverapp)
    reply = await text_of(api, "a.csv")
    assert reply.status == (200 if allowed else 403)
