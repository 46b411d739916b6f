"""Mistakes that guide (issue 35, item 5), through the real ``nini`` console script.

A mistyped ``--session`` used to start an empty session silently (the user then saw ``NameError:
name 'df' is not defined``); a run outside any project left a ``.nini/`` behind; a failed command
left an empty session; code ran unsandboxed without a word outside ``nini doctor``; model errors
said what, not where or how to fix it; ``nini models add`` prompted and aborted without a terminal.
Each case runs the installed script in a subprocess with the test's NINI_HOME, in English and in
Chinese by the locale (``LANG``), and models are the scripted server of tests/llm_server.py on
127.0.0.1 (an unreachable one is a port this test bound and closed). Sessions a case needs to exist,
and the check of which sessions exist after it, go through the history store in this process: the
CLI's commands are what is tested, not how the sessions got there (a ``nini run-code --new`` each
started and stopped a sandboxed kernel, most of this module's time).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from nini.config import Settings, load_settings
from nini.history.store import HistoryStore
from nini.skills.builtin.run_r import r_status
from tests.conftest import REPO_ROOT, record_sessions, scripted_model_settings, write_settings
from tests.llm_server import ScriptedLLM, error, text, tool_call
from tests.timeouts import timeout

NINI = Path(sys.executable).with_name("nini")
HAS_R = r_status(Settings())[0]
SALES = REPO_ROOT / "examples" / "data" / "sales.csv"
EN, ZH = "en_US.UTF-8", "zh_CN.UTF-8"
NO_MODEL = {
    EN: "error [NO_MODEL_AVAILABLE]: no model is configured; add one, e.g. "
    "nini models add ollama --base-url http://127.0.0.1:11434/v1 --model qwen2.5:7b\n",
    ZH: "error [NO_MODEL_AVAILABLE]: 尚未配置任何模型；请添加一个，例如 "
    "nini models add ollama --base-url http://127.0.0.1:11434/v1 --model qwen2.5:7b\n",
}
UNSANDBOXED = "warning: code runs without the sandbox: "


def nini(
    *args: str, cwd: Path, lang: str = EN, stdin: str | None = None, **env: str
) -> subprocess.CompletedProcess[str]:
    """``nini ARGS`` in ``cwd`` under the locale ``lang``, stdin closed unless given: no terminal to prompt on."""
    environ = {k: v for k, v in os.environ.items() if k not in ("LC_ALL", "LC_MESSAGES", "LANG")}
    environ.update(LANG=lang, **env)
    result = subprocess.run(
        [str(NINI), *args],
        cwd=cwd,
        env=environ,
        input=stdin if stdin is not None else "",
        capture_output=True,
        text=True,
        timeout=timeout(300),
    )
    assert "Traceback (most recent call last):" not in result.stderr, result.stderr  # nini's own; agent code's may show
    return result


def session_ids() -> list[str]:
    """The ids of the recorded sessions, all of them (what ``nini sessions list`` lists), from the store
    of the test's NINI_HOME: the one every ``nini`` command here uses (their settings come from
    NINI_HOME, not from the folder they run in)."""
    store = HistoryStore.from_settings(load_settings())
    try:
        return [row["id"] for row in store.list_sessions(limit=10_000)]
    finally:
        store.close()


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A folder that is no project: nothing of nini's in it, before or after."""
    path = tmp_path / "outside"
    path.mkdir()
    return path


def closed_port_url() -> str:
    """The URL of a port on 127.0.0.1 that nothing listens on: bound by this test, then closed."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


# -- an unknown --session -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "lang, closest",
    [
        (EN, "no session sales-q1; closest: sales-q3, sales-q2\n"),
        (ZH, "没有会话 sales-q1；最接近的：sales-q3, sales-q2\n"),
    ],
)
def test_an_unknown_session_is_not_found_with_the_closest_ids_and_nothing_is_made(
    folder: Path, lang: str, closest: str
) -> None:
    record_sessions("sales-q2", "sales-q3", "weather")
    before = session_ids()
    for command in (["run-code", "-"], *([["run-r", "-"]] if HAS_R else []), ["ask", "what is df?"], ["mcp"]):
        refused = nini(*command, "--session", "sales-q1", cwd=folder, lang=lang, stdin="print(df)\n")
        assert refused.returncode == 1, (command, refused.stderr)
        assert refused.stderr.splitlines()[-1] + "\n" == f"error [NOT_FOUND]: {closest}", (command, refused.stderr)
        assert refused.stdout == ""
    far = nini("run-code", "-", "--session", "zzzzzzzz", cwd=folder, lang=lang, stdin="1\n")
    assert far.returncode == 1 and len(far.stderr.splitlines()) == 1
    assert "nini sessions list" in far.stderr and "sales" not in far.stderr  # none is close: how to list them
    assert sorted(session_ids()) == sorted(before)


def test_new_creates_the_named_session_and_finds_it_the_next_time(folder: Path) -> None:
    first = nini(
        "run-code", "-", "--session", "mine", "--new", "--data", str(SALES), cwd=folder, stdin="print(len(df))\n"
    )
    assert first.returncode == 0 and first.stdout == "144\n", first.stderr
    again = nini(
        "run-code", "-", "--session", "mine", cwd=folder, stdin="print(datasets['sales']['units'].sum() > 0)\n"
    )
    assert again.returncode == 0 and again.stdout == "True\n", again.stderr
    assert nini("run-code", "-", "--session", "mine", "--new", cwd=folder, stdin="print(3)\n").stdout == "3\n"
    assert session_ids() == ["mine"]


# -- no .nini/ and no empty session from a command that failed ---------------------------------------


def test_a_run_outside_any_project_leaves_no_nini_folder(
    folder: Path, nini_home: Path, llm_server: ScriptedLLM
) -> None:
    write_settings(nini_home, scripted_model_settings(llm_server))
    llm_server.reply(tool_call("run_code", code="print(6 * 7)"), text("It is 42."))
    asked = nini("ask", "what is six times seven?", cwd=folder)
    assert asked.returncode == 0 and asked.stdout.strip() == "It is 42.", asked.stderr
    assert nini("run-code", "-", cwd=folder, stdin="print(1)\n").returncode == 0
    assert list(folder.iterdir()) == []


def test_a_failed_command_leaves_no_empty_session(folder: Path, nini_home: Path) -> None:
    bad_data = nini("run-code", "-", "--data", str(folder / "missing.csv"), cwd=folder, stdin="print(1)\n")
    assert bad_data.returncode == 1 and "error [NOT_FOUND]" in bad_data.stderr
    refused = nini("run-code", "-", "--session", "fresh", "--new", cwd=folder, stdin="import subprocess\n")
    # refused code is kept on the record, with its session (a refusal at run time follows what ran)
    assert (
        refused.returncode == 2 and "POLICY_VIOLATION" in refused.stderr and refused.stderr.endswith("session: fresh\n")
    )
    assert nini("ask", "anything?", cwd=folder).stderr == NO_MODEL[EN]
    write_settings(
        nini_home,
        {"llm": {"providers": [{"name": "gone", "base_url": closed_port_url(), "model": "m"}], "max_retries": 0}},
    )
    unreachable = nini("ask", "anything?", cwd=folder)
    assert unreachable.returncode == 1 and "UPSTREAM_ERROR" in unreachable.stderr
    assert session_ids() == ["fresh"]
    # a failure after code ran keeps the session: what ran is recorded
    ran = nini("run-code", "-", "--session", "kept", "--new", cwd=folder, stdin="print(df)\n")
    assert ran.returncode == 1 and "NameError" in ran.stderr and ran.stderr.endswith("session: kept\n")
    assert sorted(session_ids()) == ["fresh", "kept"]
    assert list(folder.iterdir()) == []


# -- running unsandboxed -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "lang, words",
    [
        (EN, "execution.sandbox is none; install bubblewrap (apt install bubblewrap) or see nini doctor"),
        (ZH, "execution.sandbox 设为 none；请安装 bubblewrap（apt install bubblewrap），或查看 nini doctor"),
    ],
)
def test_code_run_without_the_sandbox_says_so_once(folder: Path, lang: str, words: str) -> None:
    prefix = UNSANDBOXED if lang == EN else "warning: 代码在沙箱之外运行："
    ran = nini("run-code", "-", cwd=folder, lang=lang, stdin="print(1)\n", NINI_EXECUTION__SANDBOX="none")
    assert ran.returncode == 0 and ran.stdout == "1\n"
    assert [line for line in ran.stderr.splitlines() if line.startswith("warning")] == [prefix + words]


def test_the_unsandboxed_warning_can_be_silenced_and_only_commands_that_run_code_give_it(folder: Path) -> None:
    """Once, in English: silencing is decided before the words' language (``unsandboxed_warning``), and
    both languages' lines start with ``warning``."""
    quiet = nini(
        "run-code",
        "-",
        cwd=folder,
        stdin="print(1)\n",
        NINI_EXECUTION__SANDBOX="none",
        NINI_EXECUTION__WARN_UNSANDBOXED="false",
    )
    assert quiet.returncode == 0 and quiet.stdout == "1\n" and "warning" not in quiet.stderr
    listed = nini("sessions", "list", cwd=folder, NINI_EXECUTION__SANDBOX="none")
    assert listed.returncode == 0 and "warning" not in listed.stderr  # only commands that run code


def test_bubblewrap_out_of_reach_is_named_as_the_reason(folder: Path) -> None:
    """execution.sandbox auto where no bwrap is on PATH: the probe finds none, the code runs unsandboxed."""
    sandboxed = nini("run-code", "-", "--json", cwd=folder, stdin="print(1)\n")
    if json.loads(sandboxed.stdout)["isolation"] != "sandbox":
        pytest.skip("no working bubblewrap here to take out of reach")
    assert "warning" not in sandboxed.stderr
    ran = nini("run-code", "-", "--json", cwd=folder, stdin="print(1)\n", PATH=str(NINI.parent))
    assert ran.returncode == 0 and json.loads(ran.stdout)["isolation"] != "sandbox", ran.stderr
    assert (
        ran.stderr.splitlines()[0] == UNSANDBOXED + "bubblewrap is not installed; install bubblewrap "
        "(apt install bubblewrap) or see nini doctor"
    )


# -- model errors say what to do next and show the URL ------------------------------------------------


@pytest.mark.parametrize("lang", [EN, ZH])
def test_ask_with_no_model_says_how_to_add_one(folder: Path, lang: str) -> None:
    asked = nini("ask", "how many rows?", "--data", str(SALES), cwd=folder, lang=lang)
    assert (asked.returncode, asked.stdout, asked.stderr) == (1, "", NO_MODEL[lang])
    assert session_ids() == []


def test_an_unreachable_model_names_its_url_and_what_to_do(folder: Path, nini_home: Path) -> None:
    url = closed_port_url()
    added = nini("models", "add", "local", "--base-url", url, "--model", "m", cwd=folder)
    assert added.returncode == 0, added.stderr
    tested = nini("models", "test", "local", cwd=folder)
    assert tested.returncode == 1 and f"check that the server at {url} is running" in tested.stdout
    asked = nini("ask", "anything?", cwd=folder, NINI_LLM__MAX_RETRIES="0")
    assert asked.returncode == 1
    assert asked.stderr.splitlines()[-1].startswith("error [UPSTREAM_ERROR]: cannot reach provider local")
    assert asked.stderr.splitlines()[-1].endswith(
        f"; check that the server at {url} is running; try nini models test local"
    )
    zh = nini("ask", "anything?", cwd=folder, lang=ZH, NINI_LLM__MAX_RETRIES="0")
    assert zh.stderr.splitlines()[-1].endswith(f"；请确认 {url} 上的服务器正在运行；用 nini models test local 试一试")


def test_a_refused_key_and_a_missing_key_say_which_variable(
    folder: Path, nini_home: Path, llm_server: ScriptedLLM
) -> None:
    values = scripted_model_settings(llm_server)
    values["llm"]["providers"][0]["api_key_env"] = "NINI_GUIDANCE_KEY"
    write_settings(nini_home, values)
    unset = nini("ask", "anything?", cwd=folder)
    assert unset.returncode == 1 and unset.stderr.startswith("error [NO_MODEL_AVAILABLE]: ")
    assert unset.stderr.rstrip().endswith("set the variable NINI_GUIDANCE_KEY")
    llm_server.reply(error(401, message="invalid api key"))
    refused = nini("ask", "anything?", cwd=folder, NINI_GUIDANCE_KEY="wrong-key-value")
    line = refused.stderr.splitlines()[-1]
    assert line.startswith("error [UPSTREAM_ERROR]: provider local answered HTTP 401: invalid api key"), refused.stderr
    assert f"(provider local at {llm_server.base_url})" in line
    assert line.endswith("; check the API key in the variable NINI_GUIDANCE_KEY; try nini models test local")
    assert "wrong-key-value" not in refused.stderr
    assert session_ids() == []


# -- nini models add asks nothing ---------------------------------------------------------------------


def test_models_add_asks_nothing_and_takes_the_defaults(folder: Path, nini_home: Path) -> None:
    added = nini(
        "models", "add", "ollama", "--base-url", "http://127.0.0.1:11434/v1", "--model", "qwen2.5:7b", cwd=folder
    )
    assert (added.returncode, added.stderr) == (0, ""), added.stderr
    stored = json.loads((nini_home / "settings.json").read_text())["llm"]["providers"]
    assert stored == [
        {
            "name": "ollama",
            "kind": "openai",
            "base_url": "http://127.0.0.1:11434/v1",
            "model": "qwen2.5:7b",
            "vision_models": [],
            "enabled": True,
        }
    ]


@pytest.mark.parametrize("url", ["localhost:11434", "ftp://127.0.0.1/v1", "http:///v1", "127.0.0.1:11434/v1"])
def test_models_add_refuses_a_base_url_that_is_no_http_url(folder: Path, nini_home: Path, url: str) -> None:
    refused = nini("models", "add", "ollama", "--base-url", url, "--model", "m", cwd=folder)
    assert refused.returncode == 1
    assert (
        refused.stderr == f"error [INVALID_ARGUMENT]: base_url {url!r} is not an http(s) URL with a host, "
        "e.g. http://127.0.0.1:11434/v1\n"
    )
    assert not (nini_home / "settings.json").exists()


@pytest.mark.parametrize(
    "lang, words", [(EN, "a provider of kind openai needs a model"), (ZH, "openai 类提供方需要一个模型")]
)
def test_models_add_without_a_model_says_it_needs_one(folder: Path, nini_home: Path, lang: str, words: str) -> None:
    refused = nini("models", "add", "ollama", "--base-url", "http://127.0.0.1:11434/v1", cwd=folder, lang=lang)
    assert refused.returncode == 1 and refused.stderr.startswith(f"error [INVALID_ARGUMENT]: {words}")
    assert "--model" in refused.stderr
    assert not (nini_home / "settings.json").exists()
    replay = nini("models", "add", "demo", "--kind", "replay", cwd=folder)
    assert "needs a model" not in replay.stderr and "需要一个模型" not in replay.stderr
