"""GET /nini/api/sessions/{id}/artifacts/{path}: workspace files, right type, nothing outside."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from jupyter_ext.handlers.artifacts import ARTIFACT_CSP
from tests.jupyter_ext.conftest import new_session, workspace


@pytest.fixture
def raw_get(http_server_client: Any, jp_base_url: str, jp_auth_header: dict) -> Any:
    """GET an exact, already-encoded path below the base URL (no client-side quoting)."""

    async def get(path: str) -> Any:
        return await http_server_client.fetch(jp_base_url + path, headers=jp_auth_header, raise_error=False)

    return get


async def test_a_chart_from_run_code_is_served_as_png(api: Any) -> None:
    session_id = await new_session(api)
    code = "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.title('line')"
    result = (await api("POST", "sessions", session_id, "run-code", body={"code": code, "label": "line"})).data
    png = next(a for a in result["result"]["artifacts"] if a["format"] == "png")
    reply = await api("GET", "sessions", session_id, "artifacts", *png["path"].split("/"))
    assert reply.status == 200 and reply.headers["Content-Type"] == "image/png"
    assert reply.raw.startswith(b"\x89PNG")
    assert reply.headers["X-Content-Type-Options"] == "nosniff"
    assert reply.headers["Content-Security-Policy"] == ARTIFACT_CSP
    listed = (await api("GET", "sessions", session_id)).data["artifacts"]
    assert png["path"] in [a["path"] for a in listed]


@pytest.mark.parametrize(
    ("name", "content_type"),
    [
        ("report.html", "text/html; charset=utf-8"),
        ("chart.svg", "image/svg+xml"),
        ("table.csv", "text/csv; charset=utf-8"),
        ("data.parquet", "application/vnd.apache.parquet"),
        ("blob.xyz123", "application/octet-stream"),
    ],
)
async def test_content_types_and_the_restrictive_policy(
    api: Any, nini_home: Path, name: str, content_type: str
) -> None:
    session_id = await new_session(api)
    target = workspace(nini_home, session_id) / "artifacts" / name
    target.write_text("<script>alert(1)</script>" if name.endswith((".html", ".svg")) else "a,b\n1,2\n")
    reply = await api("GET", "sessions", session_id, "artifacts", "artifacts", name)
    assert reply.status == 200 and reply.headers["Content-Type"] == content_type
    csp = reply.headers["Content-Security-Policy"]
    assert "default-src 'none'" in csp and "sandbox" in csp and "script-src" not in csp
    assert reply.headers["X-Content-Type-Options"] == "nosniff"


async def test_a_large_file_arrives_whole(api: Any, nini_home: Path) -> None:
    session_id = await new_session(api)
    payload = os.urandom(1_500_000)
    (workspace(nini_home, session_id) / "artifacts" / "big.bin").write_bytes(payload)
    assert (await api("GET", "sessions", session_id, "artifacts", "artifacts", "big.bin")).raw == payload


@pytest.mark.parametrize(
    "path",
    [
        "../../../../etc/passwd",
        "artifacts/../../secret.txt",
        "%2e%2e/secret.txt",
        "%2e%2e%2fsecret.txt",
        "artifacts%2f%2e%2e%2f%2e%2e%2fsecret.txt",
        "%2Fetc%2Fpasswd",
        "/etc/passwd",
        "..%5csecret.txt",
        "out-link",
        "artifacts/inner-link.txt",
        "dir-link/secret.txt",
        "artifacts",
        "missing.png",
    ],
)
async def test_nothing_outside_the_workspace(api: Any, raw_get: Any, nini_home: Path, path: str) -> None:
    session_id = await new_session(api)
    root = workspace(nini_home, session_id)
    secret = root.parent / "secret.txt"  # the session folder, just outside the workspace
    secret.write_text("TOP-SECRET-CONTENT")
    (root / "artifacts" / "real.txt").write_text("inside")
    (root / "out-link").symlink_to(secret)
    (root / "artifacts" / "inner-link.txt").symlink_to(root / "artifacts" / "real.txt")
    (root / "dir-link").symlink_to(root.parent, target_is_directory=True)
    reply = await raw_get(f"nini/api/sessions/{session_id}/artifacts/{path}")
    assert reply.code == 404, (path, reply.body[:200])
    assert b"TOP-SECRET-CONTENT" not in reply.body and b"root:" not in reply.body
    assert reply.headers["Content-Type"].startswith("application/json")


async def test_artifacts_of_an_unknown_session(api: Any) -> None:
    reply = await api("GET", "sessions", "nope", "artifacts", "artifacts", "a.png")
    assert reply.status == 404 and reply.error["code"] == "NOT_FOUND"
