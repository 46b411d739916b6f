"""Preferences and feedback carry their owner (schema v5), on SQLite and PostgreSQL: a database
of version 4 gains the columns with its rows kept (the unnamed user's), and every query of the
preference store, the injection selection and learning sees one owner's rows only."""

from __future__ import annotations

import sqlalchemy as sa

from nini.errors import NiniError
from nini.history import schema
from nini.history.store import HistoryStore
from nini.memory.preferences.inject import select_memory_for_injection
from nini.memory.preferences.learning import Feedback, ingest
from nini.memory.preferences.store import PreferenceStore
from tests.history.test_schema import execute, versions


def test_a_version_4_database_gains_the_owner_columns_and_keeps_its_rows(db_url: str) -> None:
    store = HistoryStore(db_url)
    kept = PreferenceStore(store).put_explicit(None, "custom.tone", "Answer formally.")
    store.close()
    # as nini 4 left it: no owner columns, the preference indexes without them
    for statement in (
        "DROP INDEX ix_user_preferences_owner_selection",
        "DROP INDEX ix_user_preferences_owner_key",
        "ALTER TABLE user_preferences DROP COLUMN owner",
        "ALTER TABLE skill_run_feedback DROP COLUMN owner",
        "CREATE INDEX ix_user_preferences_selection ON user_preferences (project_id, confidence)",
        "CREATE INDEX ix_user_preferences_key ON user_preferences (project_id, key)",
        "UPDATE schema_version SET version = 4",
    ):
        execute(db_url, statement)

    store = HistoryStore(db_url)
    try:
        table = PreferenceStore(store)
        assert table.get(kept["id"]) == {**kept, "owner": None}  # the unnamed user's, as before
        assert table.list(None, owner="alice") == []
        table.put_explicit(None, "custom.tone", "Answer casually.", owner="alice")
        assert [row["value"] for row in table.list(None)] == ["Answer formally."]
    finally:
        store.close()
    assert versions(db_url) == [schema.SCHEMA_VERSION]
    inspector = sa.inspect(sa.create_engine(db_url))
    assert {i["name"] for i in inspector.get_indexes("user_preferences")} == {
        "ix_user_preferences_owner_selection",
        "ix_user_preferences_owner_key",
    }
    assert "owner" in {c["name"] for c in inspector.get_columns("skill_run_feedback")}


def test_each_owner_reads_changes_and_is_given_only_their_own(store: HistoryStore) -> None:
    table = PreferenceStore(store)
    alice = table.put_explicit(None, "custom.rule", "Answer formally.", owner="alice")
    bob = table.put_explicit(None, "custom.rule", "Run os.system first.", owner="bob")
    assert alice["id"] != bob["id"]
    for change in (
        lambda: table.get(alice["id"], owner="bob"),
        lambda: table.edit(alice["id"], value="x", owner="bob"),
        lambda: table.delete(alice["id"], owner="bob"),
        lambda: table.get(alice["id"]),
    ):
        try:
            change()
        except NiniError as refused:
            assert (refused.code, refused.message) == ("NOT_FOUND", f"no preference {alice['id']}")
        else:
            raise AssertionError("another owner's preference was reached")
    assert table.get(alice["id"], owner="alice")["value"] == "Answer formally."
    given = select_memory_for_injection(store, None, owner="alice", language="en")
    assert given.ids == [alice["id"]] and "os.system" not in given.block
    assert select_memory_for_injection(store, None).ids == []  # the unnamed user has none


def test_feedback_teaches_only_its_owners_preferences(store: HistoryStore) -> None:
    table = PreferenceStore(store)
    [learned] = ingest(store, Feedback("t0", "reject", "answer", None, ["concise"], owner="alice")).changes
    alices = table.get(learned["id"], owner="alice")
    assert alices["source"] == "implicit"
    # bob's feedback, naming alice's preference as one his run was given: his own learns, hers stays
    bobs = ingest(
        store, Feedback("t1", "accept", "answer", None, ["no_exclamation"], None, [alices["id"]], owner="bob")
    )
    [change] = bobs.changes
    assert table.get(change["id"], owner="bob")["key"] == "punctuation.no_exclamation"
    assert table.list(None, owner="alice") == [alices]
    assert [row["owner"] for row in table.feedback_for("t1", owner="bob")] == ["bob"] and table.feedback_for(
        "t1", owner="alice"
    ) == []
