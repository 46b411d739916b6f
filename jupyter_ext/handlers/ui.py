"""Tornado handler for what the sidebar reads once at its start: the ``ui`` settings (its language)."""

from __future__ import annotations

from jupyter_server.auth.decorator import authorized
from tornado import web

from jupyter_ext.handlers.base import NiniHandler


class UIHandler(NiniHandler):
    @web.authenticated
    @authorized
    async def get(self) -> None:
        """``{"language": "auto"|"zh"|"en"}``: ``ui.language``. The sidebar speaks zh or en when it
        forces one, else JupyterLab's language, and says which with every request."""
        self.reply({"language": self.runtime.settings.ui.language})


handlers = [(r"/nini/api/ui", UIHandler)]
