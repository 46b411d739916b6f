"""Attacks on nini's own process through the real REST API, with agent code racing it from the sandbox.

Agent code (static policy off: the operating system must hold on its own) starts a thread in its
kernel that keeps swapping a workspace name with a link to a host file it cannot see, while the
test asks nini for reports, exports and artifacts hundreds of times: the host file must never come
back. Plus: oversized bodies refused before they are recorded, and no host path in any message.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from tornado.httpclient import HTTPClientError
from traitlets.config import Config

from nini.execution.sandbox import probe_bwrap
from tests.conftest import write_settings
from tests.jupyter_ext.conftest import new_session, workspace

SECRET = b"\x89PNG\r\n\x1a\nTOP-SECRET-HOST-FILE-" + b"Z" * 64
RACE_ROUNDS = 300
needs_bwrap = pytest.mark.skipif(not probe_bwrap()[0], reason=f"no working bubblewrap: {probe_bwrap()[1]}")


@pytest.fixture
def jp_server_config(nini_home: Path) -> Config:
    write_settings(nini_home, {"execution": {"python_policy": "off"}, "server": {"max_body_bytes": 1_000_000}})
    return Config(
        {
            "ServerApp": {"jpserver_extensions": {"jupyter_ext": True}},
            "MultiKernelManager": {"default_kernel_name": "python3"},
            "NiniExtensionApp": {"nini_home": str(nini_home)},
        }
    )


@pytest.fixture
def hidden(tmp_path: Path) -> Path:
    """A host folder the sandbox does not show, holding a secret."""
    folder = tmp_path / "hidden"
    folder.mkdir()
    (folder / "secret.txt").write_bytes(SECRET)
    (folder / "chart.png").write_bytes(SECRET)
    return folder


def swapper(first: str, second: str) -> str:
    """Agent code: a kernel thread swapping two names forever (renameat2 RENAME_EXCHANGE)."""
    return (
        "import ctypes, threading\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "def _swap():\n    while True:\n"
        f"        libc.renameat2(-100, {first!r}.encode(), -100, {second!r}.encode(), 2)\n"
        "threading.Thread(target=_swap, daemon=True).start()\n"
    )


async def run(api: Any, session_id: str, code: str, **arguments: Any) -> dict[str, Any]:
    reply = await api("POST", "sessions", session_id, "run-code", body={"code": code, **arguments})
    assert reply.data["success"], reply.body
    return reply.data


@needs_bwrap
@pytest.mark.slow
async def test_reports_and_exports_never_embed_a_hidden_host_file(api: Any, hidden: Path, nini_home: Path) -> None:
    session_id = await new_session(api)
    await run(api, session_id, "import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])", label="chart")
    plant = f"import os\nos.symlink({str(hidden / 'chart.png')!r}, 'artifacts/chart-link')\n" + swapper(
        "artifacts/chart.png", "artifacts/chart-link"
    )
    await run(api, session_id, plant)
    secret_b64 = base64.b64encode(SECRET).decode()
    embedded = 0
    for round_ in range(RACE_ROUNDS):
        if round_ % 3 == 0:
            reply = await api("POST", "sessions", session_id, "report", body={"formats": ["html", "ipynb"]})
            assert reply.status == 200, reply.body
            for path in reply.data["paths"].values():
                text = (workspace(nini_home, session_id) / path).read_text()
                assert secret_b64 not in text and "TOP-SECRET" not in text
                embedded += "data:image/png;base64," in text
        else:
            exported = await api("GET", "sessions", session_id, "export", params={"format": "ipynb"})
            assert secret_b64 not in exported.raw.decode()
    assert embedded > 0  # the race let the real chart through at times: the reports were not all empty
    assert (hidden / "chart.png").read_bytes() == SECRET


@needs_bwrap
@pytest.mark.slow
async def test_the_artifacts_route_never_serves_a_hidden_host_file(api: Any, hidden: Path) -> None:
    session_id = await new_session(api)
    plant = (
        "import os\nos.makedirs('artifacts/race')\nopen('artifacts/race/secret.txt', 'w').write('decoy')\n"
        f"os.symlink({str(hidden)!r}, 'artifacts/race-link')\n"
        f"os.symlink({str(hidden / 'secret.txt')!r}, 'artifacts/direct.txt')\n"
    ) + swapper("artifacts/race", "artifacts/race-link")
    await run(api, session_id, plant)
    statuses: dict[int, int] = {}
    for _ in range(RACE_ROUNDS):
        reply = await api("GET", "sessions", session_id, "artifacts", "artifacts", "race", "secret.txt")
        assert SECRET not in reply.raw
        statuses[reply.status] = statuses.get(reply.status, 0) + 1
        if reply.status == 404:
            assert reply.error["code"] == "NOT_FOUND" and str(hidden) not in reply.raw.decode()
    assert (
        set(statuses) <= {200, 404} and statuses.get(200, 0) > 0 and statuses.get(404, 0) > 0
    )  # both sides of the race
    direct = await api("GET", "sessions", session_id, "artifacts", "artifacts", "direct.txt")
    assert direct.status == 404 and SECRET not in direct.raw


async def test_a_body_over_the_limit_is_refused_before_it_is_recorded(api: Any) -> None:
    session_id = await new_session(api)
    code = "x = 1\n# " + "y" * 2_000_000
    reply = await api("POST", "sessions", session_id, "run-code", body={"code": code})
    assert reply.status == 413 and reply.error["code"] == "TOO_LARGE" and "max_body_bytes" in reply.error["message"]
    assert (await api("GET", "sessions", session_id, "tool-calls")).data == []
    fine = await api("POST", "sessions", session_id, "run-code", body={"code": "result = 1"})
    assert fine.status == 200 and fine.data["success"]


async def test_a_chunked_body_over_the_limit_is_refused(api: Any, jp_fetch: Any) -> None:
    session_id = await new_session(api)

    async def producer(write: Any) -> None:  # no Content-Length: chunked, the size is known only as it comes
        await write(b'{"code": "x = 1  #')
        for _ in range(20):
            await write(b"#" * 100_000)
        await write(b'"}')

    try:
        response = await jp_fetch(
            "nini",
            "api",
            "sessions",
            session_id,
            "run-code",
            method="POST",
            body_producer=producer,
            headers={"Content-Type": "application/json"},
        )
    except HTTPClientError as exc:
        response = exc.response
    assert response.code == 413 and json.loads(response.body)["error"]["code"] == "TOO_LARGE"
    assert (await api("GET", "sessions", session_id, "tool-calls")).data == []


async def test_messages_name_no_host_path(api: Any, nini_home: Path) -> None:
    session_id = await new_session(api)
    code = "import os\nopen(os.path.abspath('missing.csv'))"
    reply = await api("POST", "sessions", session_id, "run-code", body={"code": code})
    error = reply.data["error"]
    assert error["code"] == "CODE_ERROR" and "'missing.csv'" in error["message"]
    text = json.dumps(reply.body)
    assert str(nini_home) not in text and str(workspace(nini_home, session_id)) not in text
    calls = (await api("GET", "sessions", session_id, "tool-calls")).data
    assert str(nini_home) not in json.dumps(calls[0]["result"]["error"])
    (workspace(nini_home, session_id) / "executions").rmdir()
    (workspace(nini_home, session_id) / "executions").symlink_to("/etc")
    loud = await api("POST", "sessions", session_id, "run-code", body={"code": "print('z' * 20000)"})
    assert loud.data["success"] and "/etc" not in json.dumps(loud.body)
