"""An identity provider for the browser tests of a server that names its users: Jupyter's own token
login, but every request it lets in is the user ``bob``, who is not an administrator (a team's
authenticator would name its users the same way). Loaded by the lab through ``ServerApp.identity_provider_class``."""

from __future__ import annotations

from typing import Any

from jupyter_server.auth import IdentityProvider, User

USER = "bob"


class BobIdentityProvider(IdentityProvider):
    async def get_user(self, handler: Any) -> User | None:
        user = await super().get_user(handler)
        return None if user is None else User(USER)
