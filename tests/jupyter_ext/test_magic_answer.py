"""The ``%%nini`` answer in a real kernel, against the scripted model answering with XSS payloads:
every display of it (while it streams and once whole) is sanitized HTML with the Markdown as its
plain form, never ``text/markdown`` (which JupyterLab renders as trusted, raw HTML and all); and the
model's words in a step's block are escaped text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from jupyter_ext.ask_view import Step
from nini.rooted import RootedDir
from tests.conftest import execute_in_kernel
from tests.jupyter_ext.test_magic_ask import AskKernel, kernel  # noqa: F401 - the fixture
from tests.llm_server import ScriptedLLM, text
from tests.test_safe_html import PAYLOADS, inspect

ANSWER = "\n\n".join(["North sold **5.0**.", "| region | amount |\n|---|---|\n| n | 5.0 |", *PAYLOADS.values()])


@pytest.mark.slow
def test_the_answer_is_sanitized_html_while_it_streams_and_once_whole(
    kernel: AskKernel, llm_server: ScriptedLLM
) -> None:  # noqa: F811
    displays: list[dict[str, Any]] = []

    def collect(message: dict[str, Any]) -> None:
        if message["msg_type"] in ("display_data", "update_display_data", "execute_result"):
            displays.append(message["content"]["data"])

    llm_server.reply(text(ANSWER, chunks=6))
    execute_in_kernel(kernel.manager, kernel.client, "%%nini\nWhat does the CSV header say?", collect)
    answers = [data for data in displays if "nini-answer" in data.get("text/html", "")]
    assert len(answers) >= 2  # streamed in pieces, then whole
    assert not [data for data in displays if "text/markdown" in data]
    for data in answers:
        assert inspect(data["text/html"]).found == [], data["text/html"]
    whole = answers[-1]
    assert whole["text/plain"] == ANSWER
    assert "<p>North sold <strong>5.0</strong>.</p>" in whole["text/html"] and "<td>5.0</td>" in whole["text/html"]


@pytest.mark.parametrize("attack", PAYLOADS.values(), ids=PAYLOADS.keys())
def test_model_words_in_a_step_block_are_escaped(tmp_path: Path, attack: str) -> None:
    """A step's block is nini's own markup (pygments' inline colours included): the label, code,
    output, table and task summary the model or its data wrote are text in it."""
    step = Step(
        "run_code",
        {"code": attack, "label": attack},
        stdout=attack,
        stderr=attack,
        summary=attack,
        table={"columns": [attack], "rows": [[attack]], "shape": [1, 1]},
    )
    step.ended = {"success": False, "error": {"code": "CODE_ERROR", "message": attack}}
    shown = step.html(RootedDir(tmp_path))
    assert [found for found in inspect(shown).found if not found.endswith("[style]")] == [], shown
