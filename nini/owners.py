"""Who may see and change what: sessions and what users store are their owner's, settings the
server's (DESIGN.md sections 8 and 9).

On JupyterHub every user's server shares one database, so the rule has to hold in the store's
queries, not in what a server happens to have made. A ``Viewer`` is the caller as the rule sees
them; ``jupyter_ext.identity`` makes one from a request, and the CLI, which holds the database's
credentials anyway, needs none (it sees every session).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from nini.errors import ErrorCode, NiniError

VIEWER_SCOPE = "nini.viewer"  # where a host puts the caller's Viewer in an ASGI scope (nini's MCP over HTTP)
USERS_FOLDER = "users"  # NINI_HOME/users/<owner_key>/: what a named user (not the server's own) keeps on disk


@dataclass(frozen=True)
class Viewer:
    """The caller: ``name`` is their identity (a Jupyter user's name; where nothing names the
    caller, ``settings.session_owner``, None unless set), the owner of the sessions they create.

    Admins see every session. Anyone else sees the sessions whose owner is exactly their name, so an
    unowned session (owner None: made by the CLI or before owners existed) is seen by an unnamed
    caller (a personal server's token login) and never by a named user: on a hub nobody knows
    whose it is.

    ``server_user``: the caller is the one user the server runs for (an unnamed caller, or on a hub
    the user it was started for, ``settings.session_owner``). They, like admins, may change what
    belongs to the server: model providers and nini's settings (``may_configure``).
    """

    name: str | None
    admin: bool = False
    server_user: bool = False

    def sees(self, owner: str | None) -> bool:
        return self.admin or owner == self.name

    @property
    def may_configure(self) -> bool:
        return self.admin or self.server_user


def not_found(session_id: str) -> NiniError:
    """The refusal of a session the caller may not see: word for word the store's for a missing
    one, so that nobody learns another user's session exists."""
    return NiniError(ErrorCode.NOT_FOUND, f"no session {session_id}", {"session_id": session_id})


# What a non-administrator is refused, by what they tried to change (``ui.language`` picks the words).
SERVER_THINGS = {
    "providers": ("模型提供方", "the model providers"),
    "settings": ("nini 的设置", "nini's settings"),
    "skills_state": ("技能的启用状态", "which skills are enabled"),
    "experience": ("经验库中的条目", "the entries of an experience library"),
}
ADMIN_ONLY = {
    "zh": "{what}属于这台服务器，只有它的管理员（server.admins）可以修改；你可以查看，但不能修改",
    "en": "{what} belong to this server: only its administrators (server.admins) may change them; "
    "you can see them, not change them",
}


def admin_only(thing: str, language: str = "zh") -> NiniError:
    """POLICY_VIOLATION (403) for a caller who may not change ``thing`` (a key of ``SERVER_THINGS``)."""
    zh, en = SERVER_THINGS[thing]
    words = ADMIN_ONLY.get(language, ADMIN_ONLY["zh"])
    return NiniError(ErrorCode.POLICY_VIOLATION, words.format(what=en if language == "en" else zh), {"needs": "admin"})


OWNER_ONLY = {
    "zh": "会话 {session_id} 不是你的：只有它的所有者可以{action}它",
    "en": "session {session_id} is not yours: only its owner may {action} it",
}
OWNER_ACTIONS = {"rename": ("重命名", "rename"), "delete": ("删除", "delete")}


def check_owner(viewer: Viewer | None, owner: str | None, session_id: str, action: str, language: str = "zh") -> None:
    """Refuse ``action`` (a key of ``OWNER_ACTIONS``) on a session unless ``viewer`` owns it (None:
    the CLI, which may): NOT_FOUND for one they may not see, as for a missing session; an admin, who
    sees every session, is refused another user's with POLICY_VIOLATION (they read, they do not
    rename or delete what is someone else's)."""
    if viewer is None or viewer.name == owner:
        return
    if not viewer.sees(owner):
        raise not_found(session_id)
    zh, en = OWNER_ACTIONS[action]
    words = OWNER_ONLY.get(language, OWNER_ONLY["zh"])
    raise NiniError(
        ErrorCode.POLICY_VIOLATION,
        words.format(session_id=session_id, action=en if language == "en" else zh),
        {"session_id": session_id, "needs": "owner"},
    )


def check_configure(viewer: Viewer | None, thing: str, language: str = "zh") -> None:
    """Refuse a change of what belongs to the server unless ``viewer`` may make it (None: the CLI,
    which runs as the server's own user and may)."""
    if viewer is not None and not viewer.may_configure:
        raise admin_only(thing, language)


def is_server_user(owner: str | None, session_owner: str | None) -> bool:
    """Whether ``owner`` is the server's own user, whose things stay where a single-user nini keeps
    them (NINI_HOME/skills, the plain pending file): ``session_owner``, or None (unnamed)."""
    return owner is None or owner == session_owner


def owner_key(owner: str) -> str:
    """A file-name-safe, collision-free key of a user name: its safe letters and a short hash
    (``alice-2bd806c9``), never a path separator, dot-dot or hidden name."""
    safe = re.sub(r"[^A-Za-z0-9_-]+", "_", owner)[:40].strip("_") or "user"
    return f"{safe}-{hashlib.sha256(owner.encode()).hexdigest()[:8]}"


def owner_dir(home: Path, owner: str) -> Path:
    """NINI_HOME/users/<owner_key>: a named user's own skills and skills snapshot on this server."""
    return home / USERS_FOLDER / owner_key(owner)
