"""``nini models add|list|test|remove`` and ``nini doctor --check-models`` against the scripted model
server (real HTTP): OK with latency, a 401, an unreachable endpoint; a key is never accepted."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from nini.cli import app
from tests.llm_server import ScriptedLLM, error, text
from tests.test_cli import _restore_nini_logger  # noqa: F401 - autouse fixture shared with test_cli


def cli(project_dir: Path) -> Any:
    def run(*args: str, input: str | None = None) -> Any:
        return CliRunner().invoke(app, ["--project-dir", str(project_dir), *args], input=input)

    return run


def dead_url() -> str:
    with socket.socket() as probe:  # a port nothing listens on, on this machine only
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}/v1"


def test_add_list_test_and_remove(project_dir: Path, nini_home: Path, llm_server: ScriptedLLM) -> None:
    run = cli(project_dir)
    added = run("models", "add", "local", "--kind", "openai", "--base-url", llm_server.base_url, "--model", "m", "--api-key-env", "")
    assert added.exit_code == 0, added.output
    [saved] = json.loads((nini_home / "settings.json").read_text())["llm"]["providers"]
    assert (saved["name"], saved["kind"], saved["base_url"], saved["model"]) == ("local", "openai", llm_server.base_url, "m")
    assert not saved.get("api_key_env")
    listed = run("models", "list", "--json")
    assert json.loads(listed.stdout)["providers"][0]["usable"] is True

    llm_server.reply(text("OK"))
    tested = run("models", "test")
    assert tested.exit_code == 0, tested.output
    assert tested.stdout.startswith("OK    local/m  ") and " ms (chat, analysis" in tested.stdout
    assert len(llm_server.requests) == 1 and llm_server.requests[0]["max_tokens"] == 5  # one tiny call

    llm_server.reply(error(401, message="invalid api key"))
    refused = run("models", "test", "local")
    assert refused.exit_code == 1 and refused.stdout.startswith("FAIL  local/m  UPSTREAM_ERROR") and "401" in refused.stdout

    assert run("models", "remove", "local").exit_code == 0
    assert run("models", "test").exit_code == 1 and "no model to test" in run("models", "test").stdout


def test_an_unreachable_endpoint_and_the_doctor(project_dir: Path, nini_home: Path) -> None:
    run = cli(project_dir)
    assert run("models", "add", "gone", "--kind", "openai", "--base-url", dead_url(), "--model", "m", "--api-key-env", "").exit_code == 0
    tested = run("models", "test", "gone")
    assert tested.exit_code == 1 and "FAIL  gone/m  UPSTREAM_ERROR: cannot reach provider gone" in tested.stdout
    doctor = {c["name"]: c for c in json.loads(run("doctor", "--check-models", "--json").stdout)}
    assert doctor["model call gone/m"]["ok"] is False and "cannot reach" in doctor["model call gone/m"]["detail"]


def test_add_asks_for_what_is_missing_and_never_takes_a_key(project_dir: Path, nini_home: Path) -> None:
    run = cli(project_dir)
    asked = run("models", "add", "ds", input="openai\nhttps://api.deepseek.com/v1\ndeepseek-chat\nDEEPSEEK_API_KEY\n")
    assert asked.exit_code == 0, asked.output
    assert "Name of the API key's environment variable" in asked.output
    [saved] = json.loads((nini_home / "settings.json").read_text())["llm"]["providers"]
    assert (saved["model"], saved["api_key_env"]) == ("deepseek-chat", "DEEPSEEK_API_KEY")
    key = run("models", "add", "leak", "--kind", "openai", "--base-url", "https://x/v1", "--model", "m", "--api-key-env", "sk-" + "a" * 40)
    assert key.exit_code == 1 and "sk-aaaa" not in key.output
