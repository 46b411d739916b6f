"""The notebook's side of a ``%%nini`` turn: what the agent is told about it, and what the turn
changed in it.

``notebook_context`` describes the shell for the prompt: its variables (``describe_namespace``)
and the cells run so far, from IPython's own history (``In``/``Out``; the notebook file on disk
may be unsaved or elsewhere). ``bindings`` snapshots the user's names before the turn, so that
``changes_line`` can say what the agent created or rebound, and ``restore`` can undo it
(``%%nini --isolated``).
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

from nini.execution.namespace import HIDDEN, describe_namespace
from nini.notebook import NotebookCell, NotebookContext

MAX_HISTORY_CELLS = 200
OUTPUT_CHARS = 2000


def notebook_context(shell: Any, namespace_tokens: int) -> NotebookContext:
    """The notebook as the agent sees it from ``%%nini``: variables and the cells run so far, the
    running cell (the question) last and active."""
    namespace = shell.user_ns
    inputs = list(namespace.get("In") or [])[1:][-MAX_HISTORY_CELLS:]
    first = max(1, len(namespace.get("In") or []) - len(inputs))
    outputs = namespace.get("Out") or {}
    cells = []
    for index, source in enumerate(inputs):
        shown = outputs.get(first + index)
        text = "" if shown is None else _bounded_repr(shown)
        cells.append(NotebookCell(index, "code", str(source), text))
    path = namespace.get("__session__") or namespace.get("__vsc_ipynb_file__")
    return NotebookContext(
        name=Path(path).name if path else None,
        cells=cells,
        active=len(cells) - 1 if cells else None,
        namespace=describe_namespace(namespace, namespace_tokens) or None,
    )


def bindings(namespace: dict[str, Any]) -> dict[str, Any]:
    """The user's names and the objects they are bound to now (IPython's own left out)."""
    return {name: value for name, value in namespace.items() if _users(name)}


def changes_line(before: dict[str, Any], namespace: dict[str, Any]) -> str:
    """ "new: monthly, total; changed: df" for what was created or rebound since ``before``; "" if
    nothing. Imports are not results: modules are not listed."""
    after = {name: value for name, value in bindings(namespace).items() if not isinstance(value, ModuleType)}
    new = sorted(name for name in after if name not in before)
    changed = sorted(name for name in after if name in before and after[name] is not before[name])
    removed = sorted(name for name in before if name not in namespace)
    parts = [
        f"{title}: {', '.join(names)}"
        for title, names in (("new", new), ("changed", changed), ("removed", removed))
        if names
    ]
    return "; ".join(parts)


def restore(namespace: dict[str, Any], before: dict[str, Any], *, keep: list[str]) -> None:
    """Put every user name back as in ``before``, except the names in ``keep``."""
    for name in [n for n in bindings(namespace) if n not in before and n not in keep]:
        del namespace[name]
    for name, value in before.items():
        if name not in keep and namespace.get(name, _MISSING) is not value:
            namespace[name] = value


_MISSING = object()


def _users(name: str) -> bool:
    return not name.startswith("_") and name not in HIDDEN


def _bounded_repr(value: Any) -> str:
    try:
        text = repr(value)
    except Exception:  # a broken repr: the cell's output is left out
        return ""
    return text if len(text) <= OUTPUT_CHARS else text[:OUTPUT_CHARS] + "…"
