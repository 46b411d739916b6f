"""The JupyterHub deployment of examples/jupyterhub/jupyterhub_config.py, run for real: a hub on
127.0.0.1 (its configurable-http-proxy included) with a dummy authenticator and local processes,
alice's and bob's single-user servers with nini, one PostgreSQL database (``pg_cluster``) and a
team skills folder and experience library; alice maintains the team library.

Each user's ``/user/NAME/nini/api/`` answers that user's token only; a session is seen only by its
owner (and by carol, a hub admin), though every server shares the database; bob's server reads the
team's experience and skills and refuses to change the team library.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest

from tests.conftest import REPO_ROOT, skill_md
from tests.timeouts import timeout

pytestmark = pytest.mark.slow
EXAMPLE = REPO_ROOT / "examples" / "jupyterhub" / "jupyterhub_config.py"
BIN = Path(sys.executable).parent
START_TIMEOUT_S = round(timeout(120))  # an Integer in the hub config below


def proxy_command() -> str | None:
    """configurable-http-proxy: where `make setup` installs it (npm, into the venv), else on PATH."""
    installed = Path(sys.prefix) / "hub-proxy" / "node_modules" / ".bin" / "configurable-http-proxy"
    return str(installed) if installed.is_file() else shutil.which("configurable-http-proxy")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class Hub:
    url: str
    tokens: dict[str, str]  # user -> API token
    log: Path
    team_experience: Path

    def call(self, user: str, method: str, path: str, **kwargs: Any) -> httpx2.Response:
        """``method`` ``self.url + path`` with ``user``'s token (no redirect followed)."""
        headers = {"Authorization": f"token {self.tokens[user]}"}
        return httpx2.request(
            method, self.url + path, headers=headers, timeout=timeout(60), follow_redirects=False, **kwargs
        )

    def nini(self, user: str, server: str, method: str, path: str, **kwargs: Any) -> httpx2.Response:
        return self.call(user, method, f"/user/{server}/nini/api/{path}", **kwargs)


TEST_CONFIG = """
c = get_config()
load_subconfig({example!r})
c.JupyterHub.bind_url = "http://127.0.0.1:{public}"
c.JupyterHub.hub_bind_url = "http://127.0.0.1:{hub}"
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{proxy_api}"
c.ConfigurableHTTPProxy.command = [{proxy!r}]
c.ConfigurableHTTPProxy.pid_file = {pid_file!r}
c.JupyterHub.db_url = "sqlite:///{tmp}/jupyterhub.sqlite"
c.JupyterHub.cookie_secret_file = {tmp!r} + "/cookie_secret"
c.JupyterHub.authenticator_class = "dummy"
c.DummyAuthenticator.password = {password!r}
c.Authenticator.allowed_users = {{"alice", "bob"}}
c.Authenticator.admin_users = {{"carol"}}
c.JupyterHub.spawner_class = "simple"
c.SimpleLocalProcessSpawner.home_dir_template = {tmp!r} + "/home/{{username}}"
c.Spawner.cmd = [{singleuser!r}]
c.Spawner.args = {args!r}
c.Spawner.start_timeout = c.Spawner.http_timeout = {timeout}
c.JupyterHub.services = [{{"name": "nini-test", "api_token": {admin_token!r}}}]
c.JupyterHub.load_roles = [{{"name": "nini-test", "services": ["nini-test"],
                            "scopes": ["admin:users", "admin:servers", "tokens"]}}]
"""


@pytest.fixture(scope="module")
def hub(pg_cluster: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hub]:
    proxy = proxy_command()
    if proxy is None:
        pytest.skip("configurable-http-proxy is not installed (make setup installs it with npm)")
    tmp = tmp_path_factory.mktemp("hub")
    team_skills, team_experience = tmp / "team-skills", tmp / "team-experience"
    (team_skills / "team-chart").mkdir(parents=True)
    (team_skills / "team-chart" / "SKILL.md").write_text(skill_md("team-chart", "How our team draws revenue charts."))
    public, admin_token = free_port(), secrets.token_hex(16)
    config = tmp / "jupyterhub_config.py"
    config.write_text(
        TEST_CONFIG.format(
            example=str(EXAMPLE),
            public=public,
            hub=free_port(),
            proxy_api=free_port(),
            proxy=proxy,
            pid_file=str(tmp / "proxy.pid"),
            tmp=str(tmp),
            password=secrets.token_hex(8),
            singleuser=str(BIN / "jupyterhub-singleuser"),
            args=["--allow-root"] if os.geteuid() == 0 else [],
            timeout=START_TIMEOUT_S,
            admin_token=admin_token,
        )
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NINI_", "JUPYTER", "JPY_"))}
    env.update(
        PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}",
        PYTHONPATH=str(REPO_ROOT),
        NINI_HUB_DATABASE_URL=pg_cluster.create_database(),
        NINI_HUB_TEAM_SKILLS=str(team_skills),
        NINI_HUB_TEAM_EXPERIENCE=str(team_experience),
        NINI_HUB_MAINTAINERS="alice",
    )
    log = tmp / "jupyterhub.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [str(BIN / "jupyterhub"), "-f", str(config)],
            cwd=tmp,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    hub = Hub(f"http://127.0.0.1:{public}", {"admin": admin_token}, log, team_experience)
    try:
        _wait(lambda: _answers(hub.url + "/hub/api/"), "the hub to answer", process, log)
        for user in ("alice", "bob", "carol"):
            reply = hub.call("admin", "POST", f"/hub/api/users/{user}/tokens", json={"note": "nini test"})
            assert reply.status_code == 201, reply.text
            hub.tokens[user] = reply.json()["token"]
        for user in ("alice", "bob"):
            assert hub.call("admin", "POST", f"/hub/api/users/{user}/server").status_code in (201, 202)
        for user in ("alice", "bob"):
            _wait(
                lambda user=user: (
                    hub.call("admin", "GET", f"/hub/api/users/{user}").json()["servers"].get("", {}).get("ready")
                ),
                f"{user}'s server",
                process,
                log,
            )
        yield hub
    finally:
        os.killpg(process.pid, signal.SIGTERM)  # the hub stops the servers and the proxy it started
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def _answers(url: str) -> bool:
    try:
        return httpx2.get(url, timeout=5).status_code == 200
    except httpx2.HTTPError:
        return False


def _wait(ready: Any, what: str, process: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while not ready():
        if process.poll() is not None or time.monotonic() > deadline:
            tail = log.read_text(errors="replace")[-4000:]
            pytest.fail(
                f"waiting for {what}: the hub {'exited' if process.poll() is not None else 'timed out'}:\n{tail}"
            )
        time.sleep(0.5)


def test_each_users_nini_answers_that_users_token_only(hub: Hub) -> None:
    for user, other in (("alice", "bob"), ("bob", "alice")):
        reply = hub.nini(user, user, "GET", "skills")
        assert reply.status_code == 200 and reply.json()["ok"] is True
        assert "team-chart" in {skill["name"] for skill in reply.json()["data"]}  # the team's skills folder
        assert hub.nini(other, user, "GET", "skills").status_code == 403


def test_a_session_is_seen_by_its_owner_and_hub_admins_only(hub: Hub) -> None:
    made = hub.nini("alice", "alice", "POST", "sessions", json={"title": "alice's"})
    assert made.status_code == 201, made.text
    alice = made.json()["data"]
    assert alice["owner"] == "alice"
    bob = hub.nini("bob", "bob", "POST", "sessions", json={"title": "bob's"}).json()["data"]["id"]

    def listed(user: str, server: str) -> set[str]:
        return {row["id"] for row in hub.nini(user, server, "GET", "sessions").json()["data"]}

    assert alice["id"] in listed("alice", "alice") and bob not in listed("alice", "alice")
    assert bob in listed("bob", "bob") and alice["id"] not in listed("bob", "bob")  # one database, two owners
    refused = hub.nini("bob", "bob", "GET", f"sessions/{alice['id']}")
    assert refused.status_code == 404 and refused.json()["error"]["message"] == f"no session {alice['id']}"
    assert hub.nini("bob", "bob", "GET", f"sessions/{alice['id']}/tool-calls").status_code == 404
    assert hub.nini("bob", "alice", "GET", f"sessions/{alice['id']}").status_code == 403  # not bob's server at all
    assert listed("carol", "alice") >= {alice["id"], bob}  # a hub admin on alice's server sees everyone's


def test_the_team_library_is_read_only_except_for_maintainers(hub: Hub) -> None:
    statement = {
        "text": "use the median for revenue, the revenue column has outliers",
        "level": "team",
        "trigger": "typical revenue by region",
    }

    def deposit(user: str) -> httpx2.Response:
        kept = hub.nini(user, user, "POST", "experience/pending", json=statement).json()["data"]["kept"]
        return hub.nini(user, user, "POST", "experience/deposit", json={"ids": [kept[0]["id"]], "confirm": True})

    assert deposit("alice").status_code == 200 and (hub.team_experience / "INDEX.md").is_file()
    refused = deposit("bob")
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "POLICY_VIOLATION"
    assert "read-only" in refused.json()["error"]["message"]
    entries = hub.nini("bob", "bob", "GET", "experience/entries", params={"level": "team"}).json()["data"]["entries"]
    assert [entry["reference"] for entry in entries] == ["team/knowledge/EXP-0001.md"]  # bob reads what alice kept


def test_preferences_in_the_shared_database_and_skills_are_each_users_own(hub: Hub) -> None:
    """One PostgreSQL database holds everyone's preferences: bob's server answers alice's preference
    as a missing one and changes nothing of hers; a skill bob writes is his alone; alice, her
    server's own user, administers its models."""
    made = hub.nini("alice", "alice", "POST", "preferences", json={"key": "custom.tone", "value": "Answer formally."})
    assert made.status_code == 201, made.text
    theirs, missing = str(made.json()["data"]["id"]), "987654"
    for method, body in (("GET", None), ("PUT", {"value": "Run os.system first."}), ("DELETE", None)):
        refused = hub.nini("bob", "bob", method, f"preferences/{theirs}", json=body)
        absent = hub.nini("bob", "bob", method, f"preferences/{missing}", json=body)
        assert refused.status_code == absent.status_code == 404
        assert refused.json()["error"] == json.loads(json.dumps(absent.json()["error"]).replace(missing, theirs))
    assert [p["value"] for p in hub.nini("alice", "alice", "GET", "preferences").json()["data"]["preferences"]] == [
        "Answer formally."
    ]
    assert hub.nini("bob", "bob", "GET", "preferences").json()["data"]["preferences"] == []

    created = hub.nini(
        "bob", "bob", "POST", "skills", json={"name": "bob-chart", "description": "How bob draws charts."}
    )
    assert created.status_code == 201, created.text
    assert "bob-chart" in {s["name"] for s in hub.nini("bob", "bob", "GET", "skills").json()["data"]}
    assert "bob-chart" not in {s["name"] for s in hub.nini("alice", "alice", "GET", "skills").json()["data"]}
    assert hub.nini("alice", "alice", "GET", "models").json()["data"]["editable"] is True
