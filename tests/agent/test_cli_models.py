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
    added = run(
        "models",
        "add",
        "local",
        "--kind",
        "openai",
        "--base-url",
        llm_server.base_url,
        "--model",
        "m",
        "--api-key-env",
        "",
    )
    assert added.exit_code == 0, added.output
    [saved] = json.loads((nini_home / "settings.json").read_text())["llm"]["providers"]
    assert (saved["name"], saved["kind"], saved["base_url"], saved["model"]) == (
        "local",
        "openai",
        llm_server.base_url,
        "m",
    )
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
    assert (
        refused.exit_code == 1
        and refused.stdout.startswith("FAIL  local/m  UPSTREAM_ERROR")
        and "401" in refused.stdout
    )

    assert run("models", "remove", "local").exit_code == 0
    assert run("models", "test").exit_code == 1 and "no model to test" in run("models", "test").stdout


def test_an_unreachable_endpoint_and_the_doctor(project_dir: Path, nini_home: Path) -> None:
    run = cli(project_dir)
    assert (
        run(
            "models", "add", "gone", "--kind", "openai", "--base-url", dead_url(), "--model", "m", "--api-key-env", ""
        ).exit_code
        == 0
    )
    tested = run("models", "test", "gone")
    assert tested.exit_code == 1 and "FAIL  gone/m  UPSTREAM_ERROR: cannot reach provider gone" in tested.stdout
    doctor = {c["name"]: c for c in json.loads(run("doctor", "--check-models", "--json").stdout)}
    assert doctor["model call gone/m"]["ok"] is False and "cannot reach" in doctor["model call gone/m"]["detail"]


def test_add_asks_nothing_takes_its_defaults_and_never_takes_a_key(project_dir: Path, nini_home: Path) -> None:
    run = cli(project_dir)
    # no terminal, no prompt: what is missing is refused, naming how to give it; nothing is saved
    missing = run("models", "add", "ds", "--base-url", "https://api.deepseek.com/v1", input="")
    assert missing.exit_code == 1 and "INVALID_ARGUMENT" in missing.output and "--model" in missing.output
    assert not (nini_home / "settings.json").exists() or "ds" not in (nini_home / "settings.json").read_text()
    bad_url = run("models", "add", "ds", "--base-url", "api.deepseek.com", "--model", "deepseek-chat")
    assert bad_url.exit_code == 1 and "'api.deepseek.com'" in bad_url.output
    asked = run(
        "models",
        "add",
        "ds",
        "--base-url",
        "https://api.deepseek.com/v1",
        "--model",
        "deepseek-chat",
        "--api-key-env",
        "DEEPSEEK_API_KEY",
        input="",
    )
    assert asked.exit_code == 0, asked.output
    [saved] = json.loads((nini_home / "settings.json").read_text())["llm"]["providers"]
    assert (saved["kind"], saved["model"], saved["api_key_env"]) == ("openai", "deepseek-chat", "DEEPSEEK_API_KEY")
    key = run(
        "models",
        "add",
        "leak",
        "--kind",
        "openai",
        "--base-url",
        "https://x/v1",
        "--model",
        "m",
        "--api-key-env",
        "sk-" + "a" * 40,
    )
    assert key.exit_code == 1 and "sk-aaaa" not in key.output
