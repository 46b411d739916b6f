"""Only a session's owner renames or deletes it: another user is answered as for a missing session,
an admin (who reads everyone's) is refused with POLICY_VIOLATION. The server and its users are
those of test_owners_api (``X-Test-User`` names the caller; carol is an admin)."""

from __future__ import annotations

from typing import Any

from tests.jupyter_ext.test_owners_api import MISSING, as_user, jp_server_config, new_session  # noqa: F401


async def test_only_the_owner_renames_and_deletes(as_user: Any) -> None:  # noqa: F811
    alice = await new_session(as_user, "alice")
    for method, body in (("PATCH", {"title": "bob was here"}), ("DELETE", None)):
        refused = await as_user("bob", method, "sessions", alice, body=body)
        missing = await as_user("bob", method, "sessions", MISSING, body=body)
        assert refused.status == missing.status == 404
        assert refused.error["message"] == missing.error["message"].replace(MISSING, alice)
        admin = await as_user("carol", method, "sessions", alice, body=body)
        assert (admin.status, admin.error["code"], admin.error["details"]["needs"]) == (
            403,
            "POLICY_VIOLATION",
            "owner",
        )
    assert (await as_user("alice", "GET", "sessions", alice)).data["title"] == "alice's"  # nothing changed
    assert (await as_user("alice", "PATCH", "sessions", alice, body={"title": "mine"})).data["title"] == "mine"
    assert (await as_user("alice", "DELETE", "sessions", alice)).data == {"deleted": alice}
    assert (await as_user("carol", "GET", "sessions", alice)).status == 404


async def test_search_stays_within_the_callers_sessions(as_user: Any) -> None:  # noqa: F811
    await new_session(as_user, "alice")
    await new_session(as_user, "bob")

    async def found(name: str, q: str) -> list[str]:
        return [row["title"] for row in (await as_user(name, "GET", "sessions", params={"q": q})).data]

    assert await found("bob", "alice") == []  # alice's title holds the word, but it is not bob's
    assert await found("alice", "alice") == ["alice's"]
    assert set(await found("carol", "'s")) >= {"alice's", "bob's"}
