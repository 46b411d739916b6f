"""A session is narrow (issue 37 part S): it knows its process only through ``SessionHost``, and
what skills need from above it (the model router, memory, the agent runner) comes through the
skill registry the runtime builds (``nini.skills.services``), a named user's own registry too."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import runtime_harness

ABOVE_SESSION = ("nini.memory", "nini.report", "nini.skills", "nini.agent", "nini.runtime", "nini.mcp", "jupyter_ext")


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    yield from runtime_harness(tmp_path_factory)


def test_importing_a_session_loads_nothing_above_it() -> None:
    code = f"import sys, nini.session\nprint(sorted(m for m in sys.modules if m.startswith({ABOVE_SESSION!r})))"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout.strip() == "[]"


@pytest.mark.parametrize("owner", [None, "alice"], ids=["server user", "named user"])
def test_a_skill_reaches_the_runtimes_memory_from_any_users_session(harness: Any, owner: str | None) -> None:
    session = harness.runtime.create_session(owner=owner)
    assert (session.registry is harness.runtime.registry) is (owner is None)  # alice has a registry of her own
    # the experience memory answers (the reference is not in its INDEX): no registry without services
    read = harness.call(session, "read_experience", file="team/knowledge/EXP-0404.md")
    assert not read.success
    assert read.error["code"] == "NOT_FOUND", read.error
    assert "not in the team INDEX.md" in read.error["message"]


def test_a_session_hands_on_its_processes_services(harness: Any) -> None:
    session = harness.runtime.create_session(owner="bob")
    runtime = harness.runtime
    assert (session.store, session.events, session.settings) == (runtime.store, runtime.events, runtime.settings)
    assert (session.kernels, session.approvals, session.readers) == (
        runtime.kernels,
        runtime.approvals,
        runtime.readers,
    )
    assert session.owner == "bob"
    assert session.disk_watch is runtime.disk_watch(session)  # one watch per workspace, kept across runs
    listed = harness.call(session, "list_datasets")
    assert listed.success, listed.error
