"""Who sees a session (``nini.owners.Viewer`` through ``Runtime``), and who may change the team's
experience library (``experience.team_writable``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from nini.config import load_settings
from nini.errors import NiniError
from nini.memory.experience import ExperienceMemory
from nini.owners import Viewer
from nini.runtime import Runtime

ALICE, BOB, CAROL, UNNAMED = Viewer("alice"), Viewer("bob"), Viewer("carol", admin=True), Viewer(None)


@pytest.fixture
def runtime(nini_home: Path, tmp_path: Path) -> Iterator[Runtime]:
    runtime = Runtime(load_settings(), project_dir=tmp_path)
    yield runtime
    runtime.store.close()


def test_a_viewer_sees_their_own_sessions_and_an_admin_all(runtime: Runtime) -> None:
    alice = runtime.create_session(owner="alice").id
    unowned = runtime.create_session().id  # the CLI's, with no NINI_SESSION_OWNER
    assert runtime.session(alice, ALICE).id == alice and runtime.session(alice, CAROL).id == alice
    for viewer, session_id in ((BOB, alice), (UNNAMED, alice), (ALICE, unowned)):
        with pytest.raises(NiniError) as refused:
            runtime.session(session_id, viewer)
        assert (refused.value.code, refused.value.message) == ("NOT_FOUND", f"no session {session_id}")
    assert runtime.session(unowned, UNNAMED).id == unowned and runtime.session(alice).id == alice  # None: the CLI
    assert [row["id"] for row in runtime.list_sessions(10, ALICE)] == [alice]
    assert [row["id"] for row in runtime.list_sessions(10, UNNAMED)] == [unowned]
    assert runtime.list_sessions(10, BOB) == []
    assert {row["id"] for row in runtime.list_sessions(10, CAROL)} == {row["id"] for row in runtime.list_sessions(10)} == {alice, unowned}


def test_session_or_new_makes_it_the_viewers_and_refuses_anothers(runtime: Runtime) -> None:
    made = runtime.session_or_new("s0000000mine", "MCP", ALICE)
    assert runtime.store.get_session(made.id)["owner"] == "alice"
    assert runtime.session_or_new("s0000000mine", "MCP", ALICE).id == made.id
    with pytest.raises(NiniError) as refused:
        runtime.session_or_new("s0000000mine", "MCP", BOB)
    assert refused.value.code == "NOT_FOUND"


def test_session_owner_owns_what_the_cli_makes(nini_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """On a hub the spawner sets NINI_SESSION_OWNER: a user's `nini ask` in their terminal is theirs."""
    monkeypatch.setenv("NINI_SESSION_OWNER", "alice")
    runtime = Runtime(load_settings(), project_dir=tmp_path)
    try:
        assert runtime.store.get_session(runtime.create_session().id)["owner"] == "alice"
        assert runtime.store.get_session(runtime.session_or_new("s00000000cli").id)["owner"] == "alice"
    finally:
        runtime.store.close()


def test_a_read_only_team_library_refuses_changes_before_writing(nini_home: Path, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    monkeypatch.setenv("NINI_EXPERIENCE__TEAM_WRITABLE", "false")
    memory = ExperienceMemory(load_settings(), tmp_path)
    kept = memory.capture_statement("use the median for revenue, the revenue column has outliers", level="team",
                                    trigger="typical revenue by region").kept  # fmt: skip
    for change in (lambda: memory.deposit(memory.plan([kept[0].id]), confirm=True), lambda: memory.library("team")):
        with pytest.raises(NiniError) as refused:
            change()
        assert refused.value.code == "POLICY_VIOLATION" and "experience.team_writable" in refused.value.message
    assert not memory.libraries["team"].root.exists()  # nothing locked, nothing written
    assert memory.library("project").level == "project"  # the project library stays the user's
    assert memory.deposit(memory.plan([kept[0].id], {kept[0].id: "project"}), confirm=True)
