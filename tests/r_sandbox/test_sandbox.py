"""The worker's sandbox as nini runs it: bwrap (no network, read-only root), and a clean environment."""

from __future__ import annotations

import asyncio
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from nini.execution.sandbox import probe_bwrap
from tests.r_sandbox.conftest import Workers, needs_r, new_session, open_workers, sandboxed_wrap

pytestmark = needs_r


@pytest.fixture(scope="module")
def sandboxed(
    event_loop_for_module: asyncio.AbstractEventLoop, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Workers]:
    works, why = probe_bwrap()
    if not works:
        pytest.skip(f"no working bubblewrap: {why}")
    with open_workers(
        event_loop_for_module, tmp_path_factory.mktemp("rsandbox"), wrap_command=sandboxed_wrap()
    ) as found:
        yield found


@pytest.fixture(scope="module")
def unsandboxed(
    event_loop_for_module: asyncio.AbstractEventLoop, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Workers]:
    with open_workers(event_loop_for_module, tmp_path_factory.mktemp("rplain"), wrap_command=None) as found:
        yield found


@pytest.fixture
def http_server() -> Iterator[str]:
    """A server on the host's loopback that answers every GET."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def environ_of(pid: int) -> list[dict[str, str]]:
    """The environment of ``pid`` and of every process below it (bwrap runs the worker as a child)."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        raw = Path(f"/proc/{current}/environ").read_bytes()
        found.append(dict(item.split("=", 1) for item in raw.decode().split("\0") if "=" in item))
        for task in Path(f"/proc/{current}/task").iterdir():
            todo += [int(child) for child in (task / "children").read_text().split()]
    return found


def test_only_the_workspace_is_writable(sandboxed: Workers, tmp_path: Path) -> None:
    session = new_session()
    outside = tmp_path / "outside.txt"
    code = (
        "can_write <- function(path) {\n"
        "  suppressWarnings(tryCatch({ writeLines('x', path); TRUE }, error = function(e) FALSE))\n"
        "}\n"
        f"result <- list(inside = can_write('out.txt'), outside = can_write('{outside}'),\n"
        "               root = can_write('/usr/nini-test.txt'), wd = getwd())"
    )
    out = sandboxed.run(code, session)
    assert out["success"], out["error"]
    workspace = sandboxed.workspace(session)
    assert out["result"] == {"inside": True, "outside": False, "root": False, "wd": str(workspace)}
    assert (workspace / "out.txt").read_text() == "x\n" and not outside.exists()


def test_no_network_not_even_the_hosts_loopback(sandboxed: Workers, http_server: str) -> None:
    # file() with a URL is url() in disguise; the static policy lets it through, the sandbox does not
    read = f"length(suppressWarnings(readLines(file('{http_server}')))) > 0"
    code = f"result <- tryCatch({read}, error = function(e) 'refused')"
    out = sandboxed.run(code, new_session())
    assert out["success"], out["error"]
    assert out["result"] == "refused"


def test_secrets_of_the_host_do_not_reach_the_worker(sandboxed: Workers, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-secret")
    session = new_session()
    assert sandboxed.run("1", session)["success"]
    environments = environ_of(sandboxed.pool.worker_info(session)["pid"])
    assert len(environments) >= 2  # bwrap and the worker below it
    for env in environments:
        assert "OPENAI_API_KEY" not in env
        assert env["MALLOC_ARENA_MAX"] == "2" and env["ARROW_DEFAULT_MEMORY_POOL"] == "system"
    assert environments[-1]["HOME"] == "/tmp/home"  # the worker's: in the sandbox's own /tmp


def test_unsandboxed_worker_environment_is_an_allowlist(unsandboxed: Workers, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-secret")
    monkeypatch.setenv("NINI_SECRET_THING", "x")
    session = new_session()
    assert unsandboxed.run("1", session)["success"]
    (env,) = environ_of(unsandboxed.pool.worker_info(session)["pid"])
    allowed = {
        "PATH",
        "LANG",
        "LANGUAGE",
        "TZ",
        "R_HOME",
        "HOME",
        "TMPDIR",
        "PYTHONPATH",
        "PYTHONDONTWRITEBYTECODE",
        "ARROW_DEFAULT_MEMORY_POOL",
        "MALLOC_ARENA_MAX",
    }
    assert {k for k in env if not k.startswith("LC_")} <= allowed


@pytest.mark.parametrize(
    "code",
    [
        'result <- tryCatch(base::system("id > pwned.txt", intern = TRUE), error = function(e) conditionMessage(e))',
        'result <- tryCatch({ pdf(file = "|id > pwned.txt"); plot(1); dev.off(); "drawn" },\n'
        "                   error = function(e) conditionMessage(e))",
        'result <- tryCatch(system2("/usr/bin/id", stdout = TRUE), error = function(e) conditionMessage(e))',
    ],
    ids=["base::system", "pdf-pipe", "system2"],
)
def test_no_r_spelling_runs_a_program_past_the_policy(sandboxed: Workers, code: str) -> None:
    """The static policy and the run-time guard are skipped or evaded here: R's capability stubs
    and, below them, the kernel refuse."""
    session = new_session()
    out = sandboxed.run_unchecked(code, session)
    assert not list(sandboxed.workspace(session).glob("pwned*"))
    assert "uid=" not in out["stdout"] and "uid=" not in str(out["result"])
    if out["success"]:  # the message tryCatch caught: R's capability stub, or the kernel's refusal
        assert any(word in str(out["result"]) for word in ("不允许", "popen", "pipe"))
    else:
        assert out["error"]["code"] == "POLICY_VIOLATION"
    assert sandboxed.run("result <- nrow(mtcars)", session)["result"] == 32
