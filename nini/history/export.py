"""A session as a notebook a person can re-run, as Markdown to read, or as JSON to process.

The notebook (``export_notebook``) turns every recorded execution into a code cell with its
recorded outputs, in order, and names no host path: ``write_session_export`` puts the datasets it
reads in ``<name>_files/`` next to it, so the folder re-runs on another machine with nbclient.
``export_session`` returns the text alone (for stdout and the REST download); its notebook says
which files it expects next to it. Notebook and Markdown start with the provenance header
(``export_header``, in ``language``), whose flagged steps ``check`` finds (the caller passes
``nini.execution.policy.find_violations``: the store imports nothing of execution); ``sandboxed``
(notebooks only) makes every step a ``%%nini_run`` cell that re-runs in nini's sandbox instead of
the reader's kernel.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from nini.errors import ErrorCode, NiniError
from nini.fsutil import atomic_write_text
from nini.history.export_header import PolicyCheck, provenance_header
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


def export_session(
    store: Any,
    session_id: str,
    workspace: Path,
    format: str,
    *,
    check: PolicyCheck,
    stem: str | None = None,
    sandboxed: bool = False,
    language: str = "zh",
) -> str:
    """The session in ``format`` (ipynb, md or json), as text.

    A notebook reads its datasets from ``<stem>_files/`` next to it (``stem`` defaults to
    ``nini-session-<id>``, the REST download's name); only ``write_session_export`` puts them there.
    """
    _check_format(format, sandboxed)
    bundle = session_bundle(store, session_id)
    return _render(
        bundle,
        _isolation(store, session_id),
        workspace,
        format,
        stem or f"nini-session-{session_id}",
        sandboxed,
        language,
        check,
    )


def write_session_export(
    store: Any,
    session_id: str,
    workspace: Path,
    format: str,
    out: Path,
    *,
    check: PolicyCheck,
    sandboxed: bool = False,
    language: str = "zh",
) -> Path:
    """Write the export to ``out`` with ``<out stem>_files/`` beside it: a notebook's datasets, so
    the two together re-run anywhere, or the Markdown's images. Returns ``out``."""
    _check_format(format, sandboxed)
    out = Path(out)
    bundle = session_bundle(store, session_id)  # read once: the text and the files it names agree
    text = _render(bundle, _isolation(store, session_id), workspace, format, out.stem, sandboxed, language, check)
    if format != "json":  # the notebook's datasets, the Markdown's images
        copy = copy_inputs if format == "ipynb" else copy_images
        try:
            copy(bundle, workspace, out.parent / files_dir_name(out.stem))
        except OSError as exc:
            raise NiniError(
                ErrorCode.INVALID_ARGUMENT, f"cannot write the export's files next to {out.name}: {exc}"
            ) from None
    atomic_write_text(out, text)
    return out


def _check_format(format: str, sandboxed: bool) -> None:
    if format not in FORMATS:
        raise NiniError(ErrorCode.INVALID_ARGUMENT, f"format must be one of {', '.join(FORMATS)}, not {format!r}")
    if sandboxed and format != "ipynb":
        raise NiniError(ErrorCode.INVALID_ARGUMENT, f"only a notebook (ipynb) re-runs sandboxed, not {format}")


def _isolation(store: Any, session_id: str) -> dict[str, str | None]:
    """Where each execution ran, as its ``code_execution`` event said (the executions table does not)."""
    events = store.list_events(session_id, types=["code_execution"])
    return {
        e["data"].get("execution_id"): e["data"].get("isolation") for e in events if isinstance(e.get("data"), dict)
    }


def _render(
    bundle: dict[str, Any],
    isolation: dict[str, str | None],
    workspace: Path,
    format: str,
    stem: str,
    sandboxed: bool,
    language: str,
    check: PolicyCheck,
) -> str:
    if format == "json":
        return json.dumps(bundle, ensure_ascii=False, indent=2)
    mode: Literal["notebook", "sandboxed", "markdown"] = (
        "markdown" if format == "md" else "sandboxed" if sandboxed else "notebook"
    )
    header = provenance_header(bundle, isolation, workspace, language, mode, check=check)
    if format == "md":
        return to_markdown(bundle, files_dir_name(stem), header)
    return to_notebook_json(bundle, workspace, files_dir_name(stem), header, sandboxed=sandboxed)
