"""Who sees a session (``nini.owners.Viewer`` through ``Runtime``), and who may change the team's
experience library (``experience.team_writable``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from nini.config import load_settings
from nini.errors import NiniError
from nini.memory.experience import ExperienceMemory
from nini.owners import Viewer, owner_dir, owner_key
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
    assert (
        {row["id"] for row in runtime.list_sessions(10, CAROL)}
        == {row["id"] for row in runtime.list_sessions(10)}
        == {alice, unowned}
    )


def test_session_or_new_makes_it_the_viewers_and_refuses_anothers(runtime: Runtime) -> None:
    made = runtime.session_or_new("s0000000mine", "MCP", ALICE)
    assert runtime.store.get_session(made.id)["owner"] == "alice"
    assert runtime.session_or_new("s0000000mine", "MCP", ALICE).id == made.id
    with pytest.raises(NiniError) as refused:
        runtime.session_or_new("s0000000mine", "MCP", BOB)
    assert refused.value.code == "NOT_FOUND"


def test_session_owner_owns_what_the_cli_makes(
    nini_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a hub the spawner sets NINI_SESSION_OWNER: a user's `nini ask` in their terminal is theirs."""
    monkeypatch.setenv("NINI_SESSION_OWNER", "alice")
    runtime = Runtime(load_settings(), project_dir=tmp_path)
    try:
        assert runtime.store.get_session(runtime.create_session().id)["owner"] == "alice"
        assert runtime.store.get_session(runtime.session_or_new("s00000000cli").id)["owner"] == "alice"
    finally:
        runtime.store.close()


def test_a_read_only_team_library_refuses_changes_before_writing(
    nini_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NINI_EXPERIENCE__TEAM_WRITABLE", "false")
    memory = ExperienceMemory(load_settings(), tmp_path)
    kept = memory.capture_statement(
        "use the median for revenue, the revenue column has outliers", level="team", trigger="typical revenue by region"
    ).kept
    for change in (lambda: memory.deposit(memory.plan([kept[0].id]), confirm=True), lambda: memory.library("team")):
        with pytest.raises(NiniError) as refused:
            change()
        assert refused.value.code == "POLICY_VIOLATION" and "experience.team_writable" in refused.value.message
    assert not memory.libraries["team"].root.exists()  # nothing locked, nothing written
    assert memory.library("project").level == "project"  # the project library stays the user's
    assert memory.deposit(memory.plan([kept[0].id], {kept[0].id: "project"}), confirm=True)


def test_a_named_users_skills_are_their_own_and_the_server_users_stay_in_nini_home(
    runtime: Runtime, nini_home: Path
) -> None:
    from nini.skills.editing import save_markdown_skill
    from nini.skills.function import skill
    from tests.conftest import skill_md

    bobs = runtime.registry_for("bob")
    assert runtime.registry_for(None) is runtime.registry and runtime.registry_for("bob") is bobs
    save_markdown_skill(bobs, "data-quality-check", skill_md("data-quality-check", "Bob's version."))
    assert (owner_dir(nini_home, "bob") / "skills" / "data-quality-check" / "SKILL.md").is_file()
    assert bobs.get_record("data-quality-check").metadata["source"] == "user"
    for others in (runtime.registry, runtime.registry_for("alice")):
        assert others.get_record("data-quality-check").metadata["source"] == "bundled"
    assert "Bob's version" not in (nini_home / "SKILLS_SNAPSHOT.md").read_text(encoding="utf-8")

    @skill("late_tool", category="other")
    def late_tool() -> str:
        """A function skill registered after the views were made (as an MCP server's tools are)."""
        return "ok"

    runtime.registry.register(late_tool)
    assert bobs.function("late_tool") is late_tool and runtime.registry_for("alice").function("late_tool") is late_tool


def test_owner_keys_are_plain_file_names(nini_home: Path) -> None:
    keys = {owner_key(name) for name in ("alice", "../alice", "alice/..", ".hidden", "a b", "Alice")}
    assert len(keys) == 6 and all("/" not in key and not key.startswith(".") and ".." not in key for key in keys)
    assert owner_dir(nini_home, "../../etc").parent == nini_home / "users"


def test_pending_experience_is_each_users_own(runtime: Runtime) -> None:
    memory = runtime.experience
    statement = "use the median for revenue, the revenue column has outliers"
    [alices] = memory.capture_statement(statement, owner="alice").kept
    assert memory.pending_view("bob")[1] == [] and memory.pending_view(None)[1] == []
    for change in (
        lambda: memory.edit(alices.id, {"title": "x"}, "bob"),
        lambda: memory.discard([alices.id], "bob"),
        lambda: memory.plan([alices.id], owner="bob"),
    ):
        with pytest.raises(NiniError) as refused:
            change()
        assert (refused.value.code, refused.value.message) == ("NOT_FOUND", f"no pending candidate {alices.id}")
    assert [item["candidate"]["id"] for item in memory.pending_view("alice")[1]] == [alices.id]


def test_a_taken_id_is_conflict_for_who_sees_it_and_not_found_for_others(runtime: Runtime) -> None:
    alice = runtime.create_session(owner="alice").id
    with pytest.raises(NiniError) as hidden:
        runtime.create_session(session_id=alice, owner="bob", viewer=BOB)
    assert (hidden.value.code, hidden.value.message, hidden.value.details) == (
        "NOT_FOUND",
        f"no session {alice}",
        {"session_id": alice},
    )
    for viewer in (ALICE, CAROL, None):
        with pytest.raises(NiniError) as taken:
            runtime.create_session(session_id=alice, owner="x", viewer=viewer)
        assert taken.value.code == "CONFLICT"
