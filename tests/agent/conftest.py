"""Fixtures of the agent tests: one scripted model server per module, and a Runtime (with real
kernels) pointed at it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from nini.cli import app
from tests.conftest import runtime_harness, scripted_model_settings, write_settings
from tests.llm_server import ScriptedLLM


@pytest.fixture(scope="module")
def llm() -> Iterator[ScriptedLLM]:
    with ScriptedLLM() as server:
        yield server


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory, llm: ScriptedLLM) -> Iterator[Any]:
    yield from runtime_harness(tmp_path_factory, scripted_model_settings(llm))


@pytest.fixture
def nini(project_dir: Path, nini_home: Path, llm_server: ScriptedLLM) -> Any:
    """The CLI in-process (``nini("ask", ...)``), its NINI_HOME pointed at the test's scripted model."""
    write_settings(nini_home, scripted_model_settings(llm_server))
    runner = CliRunner()

    def run(*args: str) -> Any:
        return runner.invoke(app, ["--project-dir", str(project_dir), *args])

    return run


@pytest.fixture
def fresh_script(llm: ScriptedLLM) -> Iterator[None]:
    """Each test starts with no recorded requests and must use every reply it scripted."""
    llm.requests.clear()
    yield
    assert llm.pending() == 0, "the test left scripted replies unused"


def run_turn(harness: Any, session: Any, message: str, runner: Any = None) -> Any:
    """One agent turn, run to its end on the harness's loop: a ``RunResult``."""
    return harness.loop.run_until_complete((runner or harness.runtime.agent).run(session, message))
