"""Tornado handler serving a session's workspace files (charts, reports, tables) to the browser.

Agent code writes these files, so they are untrusted content served from the Jupyter origin: every
reply carries a Content-Security-Policy that forbids scripts, connections and plugins (an HTML
report or an SVG chart cannot reach the user's token), plus ``nosniff``. Paths are relative to the
workspace; anything that leads outside it (``..``, an absolute path, a symlink in any component)
is NOT_FOUND.
"""

from __future__ import annotations

import asyncio
import mimetypes
import os
from pathlib import PurePosixPath

from jupyter_server.auth.decorator import authorized
from tornado import web

from jupyter_ext.handlers.base import NiniHandler
from nini.errors import ErrorCode, NiniError
from nini.execution.workspace import Workspace

ARTIFACT_CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; frame-ancestors 'self'; sandbox"
CHUNK = 256 * 1024
# mimetypes misses some of what agent code writes
EXTRA_TYPES = {".parquet": "application/vnd.apache.parquet", ".md": "text/markdown", ".jsonl": "application/x-ndjson"}


class ArtifactHandler(NiniHandler):
    @property
    def content_security_policy(self) -> str:
        return ARTIFACT_CSP

    @web.authenticated
    @authorized
    async def get(self, session_id: str, path: str) -> None:
        session = await self.session(session_id)
        fd = await asyncio.to_thread(_open_inside, session.workspace, path)
        kind = content_type(path)
        try:
            self.set_header("Content-Type", kind)
            self.set_header("X-Content-Type-Options", "nosniff")
            while chunk := await asyncio.to_thread(os.read, fd, CHUNK):
                self.write(chunk)
                await self.flush()
        finally:
            os.close(fd)
        self.finish(set_content_type=kind)


def content_type(path: str) -> str:
    suffix = PurePosixPath(path).suffix.lower()
    guessed = EXTRA_TYPES.get(suffix) or mimetypes.guess_type(path)[0] or "application/octet-stream"
    return f"{guessed}; charset=utf-8" if guessed.startswith("text/") else guessed


def _open_inside(workspace: Workspace, path: str) -> int:
    """A read-only descriptor of the regular file ``path`` in ``workspace``; NOT_FOUND otherwise.

    Opened through the workspace file system: no link is followed in any component, and the type
    is checked on the open descriptor, so a name swapped for a link after any check serves nothing.
    Whatever went wrong (a link, a special file, ``..``, a race), the client sees a plain 404.
    """
    missing = NiniError(ErrorCode.NOT_FOUND, f"no file {path!r} in this session's workspace", {"path": path})
    parts = PurePosixPath(path).parts
    if not parts or path.startswith("/") or "\\" in path or ".." in parts:
        raise missing
    try:
        return workspace.fs.open_file("/".join(parts))
    except NiniError:
        raise missing from None


handlers = [(r"/nini/api/sessions/([^/]+)/artifacts/(.+)", ArtifactHandler)]
