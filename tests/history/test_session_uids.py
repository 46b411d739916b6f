"""Session sandbox uids allocated by the store (SQLite and PostgreSQL): unique, kept across reopening,
and the same for one session however many processes ask at once."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
import sqlalchemy as sa

from nini.errors import ErrorCode, NiniError
from nini.history import schema
from nini.history.store import HistoryStore
from nini.history.uids import session_uid

LOW, HIGH = 1_500_000_000, 1_600_000_000


def test_each_session_gets_a_uid_of_its_own_and_keeps_it_after_reopening(db_url: str) -> None:
    store = HistoryStore(db_url)
    ids = [store.create_session(title=f"s{n}")["id"] for n in range(20)]
    given = {sid: session_uid(store, sid, LOW, HIGH) for sid in ids}
    store.close()
    assert len(set(given.values())) == len(ids)
    assert all(LOW <= uid < HIGH for uid in given.values())
    reopened = HistoryStore(db_url)
    try:
        assert {sid: session_uid(reopened, sid, LOW, HIGH) for sid in reversed(ids)} == given
    finally:
        reopened.close()


def test_stores_asking_at_once_never_share_a_uid(db_url: str) -> None:
    """Eight stores (as eight processes would) allocate for 24 new sessions, three stores per session."""
    stores = [HistoryStore(db_url) for _ in range(8)]
    try:
        ids = [stores[0].create_session(title=f"s{n}")["id"] for n in range(24)]
        asks = [(stores[n % 8], ids[n % 24]) for n in range(72)]
        with ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(lambda ask: (ask[1], session_uid(ask[0], ask[1], LOW, HIGH)), asks))
    finally:
        for store in stores:
            store.close()
    by_session: dict[str, set[int]] = {}
    for sid, uid in answers:
        by_session.setdefault(sid, set()).add(uid)
    assert all(len(uids) == 1 for uids in by_session.values()), by_session  # one session, one uid
    assert len({uid for uids in by_session.values() for uid in uids}) == 24  # no two sessions share one


def test_a_full_range_is_an_error_not_a_shared_uid(store: HistoryStore) -> None:
    first, second = store.create_session()["id"], store.create_session()["id"]
    assert session_uid(store, first, 7000, 7001) == 7000
    with pytest.raises(NiniError) as caught:
        session_uid(store, second, 7000, 7001)
    assert caught.value.code is ErrorCode.INTERNAL and "taken" in caught.value.message


def test_the_uid_column_refuses_a_duplicate(store: HistoryStore) -> None:
    first, second = store.create_session()["id"], store.create_session()["id"]
    uid = session_uid(store, first, LOW, HIGH)
    with pytest.raises((NiniError, sa.exc.IntegrityError)), store.writing() as conn:
        conn.execute(sa.text("INSERT INTO session_uids (session_id, uid) VALUES (:s, :u)"), {"s": second, "u": uid})


def test_a_database_of_the_previous_version_gets_the_uid_table(db_url: str) -> None:
    store = HistoryStore(db_url)
    kept = store.create_session(title="from before")["id"]
    store.close()
    engine = sa.create_engine(db_url)
    with engine.begin() as conn:
        conn.execute(sa.text("DROP TABLE session_uids"))
        conn.execute(sa.text("UPDATE schema_version SET version = 5"))
    store = HistoryStore(db_url)
    try:
        assert LOW <= session_uid(store, kept, LOW, HIGH) < HIGH
    finally:
        store.close()
    with engine.connect() as conn:
        assert conn.execute(sa.text("SELECT version FROM schema_version")).scalar() == schema.SCHEMA_VERSION
    engine.dispose()
