"""The Jupyter identity of a request as nini's ``Viewer``: whose sessions it may see and make.

Three kinds of server, told apart by their identity provider:

- a JupyterHub single-user server (``jupyterhub-singleuser``): the caller is the hub user the
  request's token or cookie belongs to, an admin when the hub says so (``admin`` in the hub's user
  model) or when named in ``server.admins``;
- a server whose identity provider names its users (a team's own authenticator): the caller is
  ``current_user.username``, an admin when named in ``server.admins``;
- a personal server with jupyter_server's own token or password login: those name nobody (each
  browser or token request gets a random "Anonymous" user), so the caller is the server's one
  user, ``settings.session_owner`` (None unless set), never an admin.

The server's own user (``Viewer.server_user``: the unnamed caller, or the named one whose name is
``settings.session_owner``, as on a hub the user the server was started for) may change the
server's settings and model providers, like an admin.
"""

from __future__ import annotations

from typing import Any

from jupyter_server.auth.identity import IdentityProvider, LegacyIdentityProvider, PasswordIdentityProvider

from nini.config import Settings
from nini.owners import Viewer

# jupyter_server's own providers: their user names are random per browser, not identities.
UNNAMED_PROVIDERS = (IdentityProvider, PasswordIdentityProvider, LegacyIdentityProvider)


def request_viewer(handler: Any, settings: Settings) -> Viewer:
    """The viewer of an authenticated request (``handler.current_user`` is set)."""
    user = handler.current_user
    hub_user = getattr(user, "hub_user", None)  # jupyterhub.singleuser's JupyterHubUser
    if type(handler.identity_provider) in UNNAMED_PROVIDERS and not isinstance(hub_user, dict):
        return Viewer(settings.session_owner, server_user=True)
    name = user.username
    admin = name in settings.server.admins or (isinstance(hub_user, dict) and bool(hub_user.get("admin")))
    return Viewer(name, admin=admin, server_user=name == settings.session_owner)
