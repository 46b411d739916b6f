"""Images of a notebook's Markdown cells: ``![alt](figs/flow.png)`` and ``![alt](attachment:a.png)``.

They become chart files of the report (written next to the other charts, so the HTML embeds them
as ``data:`` and the Markdown report links the copy), in notebook order. The notebook is someone
else's file, and its folder may hold anything: a local image is read through ``RootedDir`` (no
link followed, no ``..``, no absolute path) and only when it is an image of bounded size. A remote
image (``https://…``) is never fetched: the notes keep it as a plain link.
"""

from __future__ import annotations

import base64
import re
import urllib.parse
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from nini.errors import NiniError
from nini.rooted import RootedDir

MAX_IMAGE_BYTES = 10 * 1024 * 1024
# Extensions of the images a report shows, and the attachment mime types that give them.
IMAGE_EXTENSIONS = frozenset({"png", "jpg", "jpeg", "gif", "webp", "svg"})
ATTACHMENT_TYPES = {
    "image/png": "png",
    "image/jpeg": "jpg",
    "image/gif": "gif",
    "image/webp": "webp",
    "image/svg+xml": "svg",
}
# ![alt](target) or ![alt](<target> "title"); the alt text holds no brackets here (good enough for
# notebooks, and a miss only leaves an image as the text it was).
MARKDOWN_IMAGE = re.compile(r"!\[([^\[\]]*)\]\(\s*(<[^>]*>|[^\s)]+)(?:\s+(?:\"[^\"]*\"|'[^']*'))?\s*\)")
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:|^//")


@dataclass(frozen=True)
class MarkdownImage:
    alt: str
    data: bytes
    extension: str


def cell_images(source: str, attachments: dict[str, Any] | None, folder: Path) -> list[MarkdownImage]:
    """The images a Markdown cell shows that can be put in a report: its attachments, and files
    beneath ``folder`` (the notebook's). Remote, escaping, linked, oversized or non-image ones are
    left out."""
    files = RootedDir(folder, label="the notebook's folder")
    images = []
    for match in MARKDOWN_IMAGE.finditer(source):
        alt, target = match.group(1).strip(), match.group(2).strip("<>")
        image = _attachment(target, attachments or {}) if target.startswith("attachment:") else _local(target, files)
        if image is not None:
            images.append(MarkdownImage(alt, *image))
    return images


def note_text(source: str) -> str:
    """A Markdown cell as a note of the report: its images are charts of the report now, so each
    reference becomes its alt text; a remote one becomes a plain link (a Markdown viewer would
    fetch the image)."""

    def replace(match: re.Match[str]) -> str:
        alt, target = match.group(1).strip(), match.group(2)
        if _SCHEME.match(target.strip("<>")) and not target.startswith(("attachment:", "data:")):
            return f"[{alt or target.strip('<>')}]({target})"
        return f"*{alt}*" if alt else ""

    return MARKDOWN_IMAGE.sub(replace, source)


def _attachment(target: str, attachments: dict[str, Any]) -> tuple[bytes, str] | None:
    bundle = attachments.get(urllib.parse.unquote(target.removeprefix("attachment:")))
    if not isinstance(bundle, dict):
        return None
    for mime, extension in ATTACHMENT_TYPES.items():
        value = bundle.get(mime)
        if value is None:
            continue
        text = "".join(value) if isinstance(value, list) else str(value)
        try:
            data = text.encode("utf-8") if extension == "svg" else base64.b64decode(text, validate=False)
        except ValueError:
            return None
        return (data, extension) if 0 < len(data) <= MAX_IMAGE_BYTES else None
    return None


def _local(target: str, files: RootedDir) -> tuple[bytes, str] | None:
    if _SCHEME.match(target):  # https:, data:, file:, //host: not a file of the notebook's folder
        return None
    relative = urllib.parse.unquote(target.split("#", 1)[0].split("?", 1)[0])
    extension = PurePosixPath(relative).suffix.lower().lstrip(".")
    if extension not in IMAGE_EXTENSIONS:
        return None
    try:
        data = files.read_bytes(relative, limit=MAX_IMAGE_BYTES)  # refuses /abs, .., and any link
    except NiniError:
        return None
    return (data, "jpg" if extension == "jpeg" else extension) if data else None
