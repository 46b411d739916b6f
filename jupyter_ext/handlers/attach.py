"""A file of the user's JupyterLab as text, read as nini reads data: ``GET /nini/api/files/text?path=``.

The sidebar attaches a file by reading it through Jupyter's contents API, which knows UTF-8 only:
a CSV written by a Chinese Excel (GBK) or a Western one (cp1252) failed to attach with the server's
decode error. This endpoint is where the sidebar turns when that happens: it reads the file's first
``ATTACH_MAX_BYTES`` and decodes them with the encoding ``load_dataset`` would detect (the same
detector on the same first MiB, ``nini.execution._csv_side``), so what the user attaches and what
the agent later loads read alike, and it says the encoding and, for a text table, the separator.

The path is one of the contents API's: relative to the server's root (``ContentsManager.root_dir``),
no ``..``, hidden files only where the contents manager serves them. Nothing beneath the root is
followed through a link (``RootedDir``: the file and every folder on the way are opened without
following one), the read is bounded, and replies name root-relative paths only. Reading Jupyter's
files is what the contents API does, so the request is authorized as a read of ``contents``.
"""

from __future__ import annotations

import asyncio
import codecs
from pathlib import Path, PurePosixPath
from typing import Any

from jupyter_server.auth.decorator import authorized
from tornado import web

from jupyter_ext.handlers.base import NiniHandler
from nini.errors import ErrorCode, NiniError
from nini.execution._csv_side import SAMPLE_BYTES, detect_encoding, text_separator
from nini.execution._parse_side import TEXT_TABLES
from nini.rooted import RootedDir

ATTACH_MAX_BYTES = 2_000_000  # as the sidebar's (attachments.ts): what is read of a file, at most
LABEL = "the Jupyter root"
WORDS = {
    "zh": {
        "binary": "{name} 不是文本（没有哪种编码能读它，是二进制文件），不能作为文本附加",
        "hidden": "{name} 是隐藏文件，Jupyter 不提供（ContentsManager.allow_hidden）",
        "no_root": "这个 Jupyter 服务器的文件不在它的磁盘上，nini 无法读取",
        "no_path": "缺少参数 path（相对于 Jupyter 根目录的文件路径）",
    },
    "en": {
        "binary": "{name} is not text (no encoding reads it: a binary file) and cannot be attached as text",
        "hidden": "{name} is a hidden file, which Jupyter does not serve (ContentsManager.allow_hidden)",
        "no_root": "this Jupyter server's files are not on its disk, so nini cannot read them",
        "no_path": "the path query argument is missing (a file's path relative to the Jupyter root)",
    },
}


def decoded_start(data: bytes, *, complete: bool) -> tuple[str, str] | None:
    """The text of ``data`` (a file's first bytes; ``complete`` when all of it) and its encoding,
    detected as ``load_dataset`` detects it (from the first ``SAMPLE_BYTES``); None for binary data:
    no encoding fits, or the text holds NUL characters (no text table does)."""
    encoding = detect_encoding(data[:SAMPLE_BYTES], complete or len(data) < SAMPLE_BYTES)
    if encoding is None:
        return None
    # past the sample the detected encoding may not fit every byte: those show as U+FFFD, as
    # load_dataset would refuse them only when it reads that far
    text = codecs.getincrementaldecoder(encoding)(errors="replace").decode(data, final=complete)
    return (text, encoding) if "\x00" not in text else None


def read_text_start(root: Path, path: str, *, allow_hidden: bool, language: str) -> dict[str, Any]:
    """The reply for ``path`` under ``root``: ``{path, text, encoding, sep, size_bytes, truncated}``
    (``sep`` None unless a text table's suffix); NOT_FOUND, POLICY_VIOLATION for a link or special
    file, INVALID_ARGUMENT for ``..`` or binary data."""
    words = WORDS.get(language, WORDS["en"])
    relative = path.strip("/")  # as the contents API takes it
    fs = RootedDir(root, label=LABEL)
    parts = fs.parts(relative)
    if not parts:
        raise NiniError(ErrorCode.INVALID_ARGUMENT, words["no_path"])
    shown = "/".join(parts)
    if not allow_hidden and any(part.startswith(".") for part in parts):
        raise NiniError(ErrorCode.NOT_FOUND, words["hidden"].format(name=f"'{shown}'"), {"path": shown})
    with fs.reader(shown) as handle:  # the one descriptor read from: no link followed anywhere on the way
        data = handle.read(ATTACH_MAX_BYTES + 1)
        size = handle.seek(0, 2)
    truncated = len(data) > ATTACH_MAX_BYTES
    decoded = decoded_start(data[:ATTACH_MAX_BYTES], complete=not truncated)
    if decoded is None:
        raise NiniError(ErrorCode.INVALID_ARGUMENT, words["binary"].format(name=f"'{parts[-1]}'"), {"path": shown})
    text, encoding = decoded
    suffix = PurePosixPath(shown).suffix.lower()
    sep = text_separator(text, not truncated, suffix) if suffix in TEXT_TABLES else None
    return {"path": shown, "text": text, "encoding": encoding, "sep": sep, "size_bytes": size, "truncated": truncated}


class TextFileHandler(NiniHandler):
    auth_resource = "contents"  # it reads the server's files, as GET /api/contents does

    @web.authenticated
    @authorized
    async def get(self) -> None:
        """Query ``path`` (as the contents API names the file): ``{path, text, encoding, sep,
        size_bytes, truncated}``, the text being the file's first ``ATTACH_MAX_BYTES`` decoded."""
        language = self.runtime.settings.ui.current_language
        root = getattr(self.contents_manager, "root_dir", None)
        if not root or not Path(root).is_dir():
            raise NiniError(ErrorCode.INVALID_ARGUMENT, WORDS.get(language, WORDS["en"])["no_root"])
        allow_hidden = bool(getattr(self.contents_manager, "allow_hidden", False))
        reply = await asyncio.to_thread(
            read_text_start,
            Path(root),
            self.get_query_argument("path", ""),
            allow_hidden=allow_hidden,
            language=language,
        )
        self.reply(reply)


handlers = [(r"/nini/api/files/text", TextFileHandler)]
