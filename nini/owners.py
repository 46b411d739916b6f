"""Who may see a session: its owner and admins, nobody else (DESIGN.md section 8).

On a JupyterHub every user's server shares one database, so the rule has to hold in the store's
queries, not in what a server happens to have made. A ``Viewer`` is the caller as the rule sees
them; ``jupyter_ext.identity`` makes one from a request, and the CLI, which holds the database's
credentials anyway, needs none (it sees every session).
"""

from __future__ import annotations

from dataclasses import dataclass

from nini.errors import ErrorCode, NiniError

VIEWER_SCOPE = "nini.viewer"  # where a host puts the caller's Viewer in an ASGI scope (nini's MCP over HTTP)


@dataclass(frozen=True)
class Viewer:
    """The caller: ``name`` is their identity (a Jupyter user's name; where nothing names the
    caller, ``settings.session_owner``, None unless set), the owner of the sessions they create.

    Admins see every session. Anyone else sees the sessions whose owner is exactly their name, so an
    unowned session (owner None: made by the CLI or before owners existed) is seen by an unnamed
    caller (a personal server's token login) and never by a named user: on a hub nobody knows
    whose it is.
    """

    name: str | None
    admin: bool = False

    def sees(self, owner: str | None) -> bool:
        return self.admin or owner == self.name


def not_found(session_id: str) -> NiniError:
    """The refusal of a session the caller may not see: word for word the store's for a missing
    one, so that nobody learns another user's session exists."""
    return NiniError(ErrorCode.NOT_FOUND, f"no session {session_id}", {"session_id": session_id})
