"""A session as a notebook a person can re-run, as Markdown to read, or as JSON to process.

The notebook (``export_notebook``) turns every recorded execution into a code cell with its
recorded outputs, in order, and names no host path: ``write_session_export`` puts the datasets it
reads in ``<name>_files/`` next to it, so the folder re-runs on another machine with nbclient.
``export_session`` returns the text alone (for stdout and the REST download); its notebook says
which files it expects next to it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from nini.errors import ErrorCode, NiniError
from nini.fsutil import atomic_write_text
from nini.history.export_md import copy_images, to_markdown
from nini.history.export_notebook import copy_inputs, files_dir_name, to_notebook_json

FORMATS = ("ipynb", "md", "json")


def session_bundle(store: Any, session_id: str) -> dict[str, Any]:
    """Everything recorded about a session, as plain JSON data."""
    return {
        "session": store.get_session(session_id),
        "messages": store.list_messages(session_id),
        "tool_calls": store.list_tool_calls(session_id),
        "executions": store.list_executions(session_id),
        "artifacts": store.list_artifacts(session_id),
        "datasets": store.list_datasets(session_id),
    }


def export_session(store: Any, session_id: str, workspace: Path, format: str, *, stem: str | None = None) -> str:
    """The session in ``format`` (ipynb, md or json), as text.

    A notebook reads its datasets from ``<stem>_files/`` next to it (``stem`` defaults to
    ``nini-session-<id>``, the REST download's name); only ``write_session_export`` puts them there.
    """
    _check_format(format)
    return _render(session_bundle(store, session_id), workspace, format, stem or f"nini-session-{session_id}")


def write_session_export(store: Any, session_id: str, workspace: Path, format: str, out: Path) -> Path:
    """Write the export to ``out`` with ``<out stem>_files/`` beside it: a notebook's datasets, so
    the two together re-run anywhere, or the Markdown's images. Returns ``out``."""
    _check_format(format)
    out = Path(out)
    bundle = session_bundle(store, session_id)  # read once: the text and the files it names agree
    text = _render(bundle, workspace, format, out.stem)
    if format != "json":  # the notebook's datasets, the Markdown's images
        copy = copy_inputs if format == "ipynb" else copy_images
        try:
            copy(bundle, workspace, out.parent / files_dir_name(out.stem))
        except OSError as exc:
            raise NiniError(ErrorCode.INVALID_ARGUMENT, f"cannot write the export's files next to {out.name}: {exc}") from None
    atomic_write_text(out, text)
    return out


def _check_format(format: str) -> None:
    if format not in FORMATS:
        raise NiniError(ErrorCode.INVALID_ARGUMENT, f"format must be one of {', '.join(FORMATS)}, not {format!r}")


def _render(bundle: dict[str, Any], workspace: Path, format: str, stem: str) -> str:
    if format == "json":
        return json.dumps(bundle, ensure_ascii=False, indent=2)
    if format == "md":
        return to_markdown(bundle, files_dir_name(stem))
    return to_notebook_json(bundle, workspace, files_dir_name(stem))
