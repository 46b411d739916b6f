"""A full disk over REST (issue 36, item 6): a server whose NINI_HOME is a small tmpfs, filled. Writes
to the database and to a session workspace answer 507 with the NO_SPACE envelope, naming no host
path; once space is freed the same server answers again and nothing earlier was lost."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from traitlets.config import Config

from tests.jupyter_ext.conftest import new_session
from tests.test_full_disk import fill, small_disk

pytestmark = pytest.mark.slow


@pytest.fixture
def small_home(nini_home: Path) -> Iterator[Path]:
    with small_disk(nini_home, 48) as home:
        yield home


@pytest.fixture
def jp_server_config(small_home: Path) -> Config:
    return Config(
        {
            "ServerApp": {"jpserver_extensions": {"jupyter_ext": True}},
            "NiniExtensionApp": {"nini_home": str(small_home)},
        }
    )


def assert_no_space(reply: Any, home: Path, where: str) -> None:
    assert (reply.status, reply.error["code"]) == (507, "NO_SPACE"), reply.body
    message = reply.error["message"]
    assert "the disk is full" in message and where in message and "free some space" in message, message
    assert str(home) not in str(reply.body) and not re.search(r"(^|[\s'(])/(tmp|root|home|var)/", message)


async def test_writes_on_a_full_disk_answer_507_no_space_and_work_again_once_freed(api: Any, small_home: Path) -> None:
    kept = await new_session(api, "kept")
    filler = fill(small_home)

    assert_no_space(await api("POST", "sessions", body={"title": "more"}), small_home, "$NINI_HOME/nini.db")
    assert_no_space(
        await api("POST", "preferences", body={"key": "tone", "value": "formal"}), small_home, "$NINI_HOME/nini.db"
    )
    uploaded = await api("POST", "sessions", kept, "files", body=b"a,b\n1,2\n", params={"name": "t.csv"})
    assert_no_space(uploaded, small_home, "the session workspace")

    filler.unlink()
    assert (await api("POST", "sessions", body={"title": "more"})).status in (200, 201)
    assert (await api("POST", "sessions", kept, "files", body=b"a,b\n1,2\n", params={"name": "t.csv"})).status == 201
    titles = [s["title"] for s in (await api("GET", "sessions")).data]
    assert "kept" in titles and "more" in titles
