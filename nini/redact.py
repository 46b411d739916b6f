"""Host paths out of messages: what a client (a browser, the model, a log reader elsewhere) is told
never names where nini keeps things on this machine.

Errors come from many layers (the kernel's traceback of ``open('/root/.nini/sessions/...')``, a
write that failed, a worker that did not start and left its log), so instead of trusting each
one, messages are passed through ``redact_paths`` where they leave nini: the REST envelope and
every recorded tool result. A path inside the session workspace becomes workspace-relative;
NINI_HOME, the user's home, the Python installation and nini's runtime folders become short names.
"""

from __future__ import annotations

import re
import sys
import tempfile
from pathlib import Path

_TEMP_FOLDERS = "|".join(
    re.escape(folder) for folder in sorted({tempfile.gettempdir().rstrip("/"), "/tmp", "/var/tmp"})
)
_RUNTIME = re.compile(rf"(?:{_TEMP_FOLDERS})/nini-(?:kernel|r)-[A-Za-z0-9_]+")


def redact_paths(text: str, *, nini_home: Path | None = None, workspace: Path | None = None) -> str:
    """``text`` with absolute host paths replaced: the workspace by relative paths, the rest by
    ``$NINI_HOME``, ``<runtime>``, ``<python>`` and ``~``."""
    if not text or "/" not in text:
        return text
    if workspace is not None:
        root = str(workspace).rstrip("/")
        text = text.replace(root + "/", "").replace(root, ".")
    if nini_home is not None:
        text = _replace_root(text, nini_home, "$NINI_HOME")
    text = _RUNTIME.sub("<runtime>", text)
    for prefix in sorted({sys.prefix, sys.base_prefix, sys.exec_prefix}, key=len, reverse=True):
        if prefix and prefix != "/":
            text = _replace_root(text, Path(prefix), "<python>")
    return _replace_root(text, Path.home(), "~")


def _replace_root(text: str, root: Path, name: str) -> str:
    """Replace ``root`` where it starts a path (followed by ``/``, a quote, a space or the end)."""
    shown = str(root).rstrip("/")
    if not shown or shown == "/":
        return text
    return re.sub(re.escape(shown) + r"(?=[/'\"\s:),]|$)", lambda _match: name, text)
