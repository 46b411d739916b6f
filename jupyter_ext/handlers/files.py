"""Data over REST: ``POST /nini/api/sessions/ID/files?name=sales.csv`` puts the body's bytes into the
session workspace's ``uploads/``, so a client without a shared disk can analyse its data.

The name is reduced to a plain file name (no folders, no ``..``, no control characters); the write
goes through the workspace file system (no link followed, atomic), so nothing lands outside the
workspace. ``server.max_upload_bytes`` bounds the body (413 TOO_LARGE before it is read whole).
The body goes to a temporary file as it arrives, never whole into the server's memory. With
``load=1`` the file is also loaded as a dataset (load_dataset, recorded: read by a limited child,
``nini.execution.parsing``, so the server only ever holds the dataset's description).
"""

from __future__ import annotations

import asyncio
import re
import tempfile
from typing import BinaryIO

from jupyter_server.auth.decorator import authorized
from tornado import web

from jupyter_ext.handlers.base import NiniHandler
from nini.errors import ErrorCode, NiniError
from nini.skills.invoke import invoke

UNSAFE = re.compile(r"[\x00-\x1f\x7f/\\:*?\"<>|]")
READ_OPTIONS = ("encoding", "sep", "sheet")  # of load_dataset, passed on from the query


def upload_name(name: str) -> str:
    """The plain file name an uploaded file gets; INVALID_ARGUMENT when nothing usable is left."""
    base = name.replace("\\", "/").rsplit("/", 1)[-1]
    cleaned = UNSAFE.sub("_", base).strip().lstrip(".")
    if not cleaned or len(cleaned) > 200:
        raise NiniError(
            ErrorCode.INVALID_ARGUMENT, f"{name[:80]!r} is not a usable file name (1 to 200 characters, not hidden)"
        )
    return cleaned


class FilesHandler(NiniHandler):
    _spool: BinaryIO | None = None
    _received = 0

    async def prepare(self) -> None:  # type: ignore[override]
        await super().prepare()
        self._spool = tempfile.TemporaryFile(prefix="nini-upload-")

    def data_received(self, chunk: bytes) -> None:
        if self._too_large or self._spool is None:
            return
        self._received += len(chunk)
        if self._received > self.max_body_bytes:
            self._too_large = True  # the rest is dropped as it arrives
            self._spool.truncate(0)
            return
        self._spool.write(chunk)

    def on_finish(self) -> None:
        if self._spool is not None:
            self._spool.close()

    def on_connection_close(self) -> None:
        super().on_connection_close()
        self.on_finish()

    @property
    def max_body_bytes(self) -> int:
        return self.runtime.settings.server.max_upload_bytes

    def _body_error(self) -> NiniError:
        limit = self.max_body_bytes
        return NiniError(
            ErrorCode.TOO_LARGE,
            f"the file is larger than {limit:,} bytes (server.max_upload_bytes)",
            {"max_upload_bytes": limit},
        )

    @web.authenticated
    @authorized
    async def post(self, session_id: str) -> None:
        """Query ``name`` (required) and ``load=1`` (with ``encoding``, ``sep``, ``sheet``: how to read
        it, default detected / the first sheet): 201 ``{path, size_bytes, dataset?}``; ``dataset`` is
        load_dataset's result, which says the encoding and separator used and whether detected."""
        if self._too_large or self._spool is None:
            raise self._body_error()
        name = upload_name(self.get_query_argument("name", ""))
        session = await self.session(session_id)
        path = f"uploads/{name}"
        session.workspace.fs.makedirs("uploads")
        self._spool.seek(0)
        await asyncio.to_thread(session.workspace.fs.copy_in, self._spool, path)
        reply: dict[str, object] = {"path": path, "size_bytes": self._received}
        if self.get_query_argument("load", "0") in ("1", "true"):
            read = {key: self.get_query_argument(key) for key in READ_OPTIONS if self.get_query_argument(key, "")}
            loaded = await invoke(session, "load_dataset", {"path": path, **read})
            if not loaded.success:
                raise NiniError(
                    (loaded.error or {}).get("code", "INVALID_ARGUMENT"), (loaded.error or {}).get("message", "")
                )
            reply["dataset"] = loaded.result
        self.reply(reply, status=201)


handlers = [(r"/nini/api/sessions/([^/]+)/files", FilesHandler)]
