"""``nini ask`` in a real pseudo-terminal against the scripted model: the answer rendered as Markdown
under a spinner that counts the seconds, colours off with NO_COLOR, and plain text when piped."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import scripted_model_settings, write_settings
from tests.llm_server import Reply, ScriptedLLM
from tests.timeouts import timeout

pytestmark = pytest.mark.slow
NINI = str(Path(sys.executable).parent / "nini")
ANSWER = "**Total** revenue is 12.\n\n- north: 5\n- south: 7\n"
COLOUR = re.compile(r"\x1b\[(?:3[0-9]|9[0-7]|38;)")  # a foreground colour
ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# the count reached a second or more: it counts from the question, so on a loaded machine, where the
# event loop may draw its second frame late, it can jump past 1 s
THINKING_COUNTED = re.compile(r"thinking… [1-9]\d* s")


def text_of(shown: str) -> str:
    return ESCAPES.sub("", shown)


def ask(tmp_path: Path, llm: ScriptedLLM, *, terminal: bool, **env: str) -> str:
    home = tmp_path / f"home-{terminal}-{len(env)}"
    write_settings(home, scripted_model_settings(llm))
    llm.reply(Reply(content=ANSWER, delay_s=1.6))
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("NINI_", "NO_COLOR"))}
    environ.update(NINI_HOME=str(home), COLUMNS="80", LINES="24", TERM="xterm-256color", **env)
    command = [NINI, "--project-dir", str(tmp_path), "ask", "What is the total?"]
    if not terminal:
        done = subprocess.run(command, env=environ, capture_output=True, text=True, timeout=timeout(120))
        assert done.returncode == 0, done.stderr
        return done.stdout
    return in_terminal(command, environ)


def in_terminal(command: list[str], environ: dict[str, str]) -> str:
    """What ``command`` writes to a real pseudo-terminal (stdout and stderr both), until it exits 0."""
    leader, follower = pty.openpty()
    process = subprocess.Popen(command, env=environ, stdin=subprocess.DEVNULL, stdout=follower, stderr=follower)
    os.close(follower)
    chunks: list[bytes] = []
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        ready, _, _ = select.select([leader], [], [], 0.5)
        if ready:
            try:
                data = os.read(leader, 65536)
            except OSError:  # the terminal closed: the process is gone
                break
            if not data:
                break
            chunks.append(data)
        elif process.poll() is not None:
            break
    os.close(leader)
    assert process.wait(timeout=timeout(30)) == 0
    return b"".join(chunks).decode("utf-8", errors="replace")


def test_a_terminal_shows_a_spinner_then_the_answer_as_markdown(tmp_path: Path, llm_server: ScriptedLLM) -> None:
    shown = ask(tmp_path, llm_server, terminal=True)
    assert THINKING_COUNTED.search(shown), shown  # counted while the model took 1.6 s
    assert "**Total**" not in shown and "\x1b[1mTotal" in shown  # Markdown rendered: bold, not asterisks
    assert "• north: 5" in text_of(shown) and COLOUR.search(shown)


def test_no_color_keeps_the_rendering_without_colours(tmp_path: Path, llm_server: ScriptedLLM) -> None:
    shown = ask(tmp_path, llm_server, terminal=True, NO_COLOR="1")
    assert "• north: 5" in text_of(shown) and THINKING_COUNTED.search(shown) and not COLOUR.search(shown)


def test_piped_output_is_the_plain_answer(tmp_path: Path, llm_server: ScriptedLLM) -> None:
    assert ask(tmp_path, llm_server, terminal=False) == ANSWER.rstrip("\n") + "\n"


def test_a_notebook_run_for_its_report_shows_a_progress_bar(tmp_path: Path) -> None:
    notebook = tmp_path / "steps.ipynb"
    notebook.write_text(
        json.dumps(
            {
                "nbformat": 4,
                "nbformat_minor": 5,
                "metadata": {},
                "cells": [
                    {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": f"x = {n}"}
                    for n in range(3)
                ],
            }
        )
    )
    environ = {k: v for k, v in os.environ.items() if not k.startswith("NINI_")}
    environ.update(NINI_HOME=str(tmp_path / "home"), COLUMNS="100", TERM="xterm-256color")
    shown = in_terminal([NINI, "report", str(notebook), "--execute", "--out", str(tmp_path / "out")], environ)
    assert "running the notebook" in shown and "3/3" in text_of(shown)
    piped = subprocess.run(
        [NINI, "report", str(notebook), "--execute", "--out", str(tmp_path / "out2")],
        env=environ,
        capture_output=True,
        text=True,
        timeout=timeout(120),
    )
    assert piped.returncode == 0 and "cell 3/3 x = 2" in piped.stderr and "running the notebook" not in piped.stderr


def test_a_step_of_run_code_shows_a_spinner_on_a_terminal_only(tmp_path: Path) -> None:
    """Issue 22: long work anywhere shows progress; a step of nini run-code showed nothing until it ended."""
    script = tmp_path / "slow.py"
    script.write_text("import time\ntime.sleep(1.5)\nprint('done', 6 * 7)\n")
    environ = {k: v for k, v in os.environ.items() if not k.startswith("NINI_")}
    environ.update(NINI_HOME=str(tmp_path / "home"), COLUMNS="100", TERM="xterm-256color")
    shown = text_of(in_terminal([NINI, "--project-dir", str(tmp_path), "run-code", str(script)], environ))
    assert "running Python" in shown and re.search(r"running Python\s+0:00:0[1-9]", shown), shown
    assert "done 42" in shown
    piped = subprocess.run(
        [NINI, "--project-dir", str(tmp_path), "run-code", str(script)],
        env=environ,
        capture_output=True,
        text=True,
        timeout=timeout(120),
    )
    assert piped.returncode == 0 and piped.stdout == "done 42\n" and "running Python" not in piped.stderr
