"""The REST and WebSocket handlers of ``/nini/api/``, one module per resource; ``routes()`` is the URL table."""

from __future__ import annotations

from typing import Any

from jupyter_server.auth.decorator import authorized
from tornado import web

from jupyter_ext.handlers import (
    agent,
    approvals,
    artifacts,
    attach,
    events,
    experience,
    files,
    mcp,
    models,
    preferences,
    proposals,
    report,
    run,
    sessions,
    skills,
    ui,
)
from jupyter_ext.handlers.base import NiniHandler
from nini.errors import ErrorCode, NiniError


class UnknownRouteHandler(NiniHandler):
    """Any other path under /nini/api/: NOT_FOUND as an envelope, after authentication like the rest."""

    def _unknown(self, *args: Any) -> None:
        raise NiniError(ErrorCode.NOT_FOUND, f"no endpoint {self.request.method} {self.request.path}")

    get = web.authenticated(authorized(_unknown))
    post = web.authenticated(authorized(_unknown))
    put = web.authenticated(authorized(_unknown))
    patch = web.authenticated(authorized(_unknown))
    delete = web.authenticated(authorized(_unknown))


def routes() -> list[tuple[Any, ...]]:
    """(pattern, handler) pairs, base_url not included (the ExtensionApp prepends it)."""
    return [
        *skills.handlers,
        *models.handlers,
        *sessions.handlers,
        *run.handlers,
        *agent.handlers,
        *approvals.handlers,
        *proposals.handlers,
        *experience.handlers,
        *preferences.handlers,
        *files.handlers,
        *attach.handlers,
        *report.handlers,
        *artifacts.handlers,
        *events.handlers,
        *mcp.handlers,
        *ui.handlers,
        (r"/nini/api(/.*)?", UnknownRouteHandler),
    ]
