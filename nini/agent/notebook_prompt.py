"""The prompt section for a turn asked from a notebook: its variables, and the cells near the user.

A default prompt contributor of ``AgentRunner``. The client put a ``NotebookContext`` on the turn's
session (``%%nini``, the sidebar); without one this adds nothing. The variables come already
bounded (``describe_namespace``); the cells are chosen here: the attached ones, then the active
cell and those above it, nearest first, within ``agent.notebook_cells_tokens``. The model asks for
more with ``read_notebook``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nini.execution.namespace import HEADER
from nini.tokens import count_tokens

if TYPE_CHECKING:
    from nini.notebook import NotebookCell, NotebookContext
    from nini.session import Session

CELL_SOURCE_CHARS = 3000
CELL_OUTPUT_CHARS = 1000
ATTACHED_FILE_CHARS = 8000
TOOLS_LINE = (
    "read_notebook gives more of the notebook (a cell range, a cell's whole output); propose_cell "
    "proposes a cell, which the user accepts or rejects: nothing changes the notebook until they do."
)


def notebook_section(session: Session, _message: str) -> str | None:
    notebook: NotebookContext | None = getattr(session, "notebook", None)
    if notebook is None:
        return None
    parts = [_variables(session, notebook.namespace)] if notebook.namespace else []
    cells = _cells_section(notebook, session.settings.agent.notebook_cells_tokens)
    if cells:
        parts.append(cells)
    for name, text in notebook.attached_files.items():
        parts.append(f"### Attached file {name}\n\n```\n{_bounded(text, ATTACHED_FILE_CHARS)}\n```")
    if notebook.cells:
        parts.append(TOOLS_LINE)
    return "\n\n".join(parts) if parts else None


def _variables(session: Session, described: str) -> str:
    """The notebook's variables, introduced by where the turn's code runs: in that kernel (use them
    by name) or in the sandbox (ask for copies with run_code's ``variables``; none on a gateway).
    Only a turn whose client described a notebook kernel has them (``kernel_id`` or
    ``notebook_kernel_id``)."""
    if session.isolation == "user_kernel":
        return described
    if session.variables is None:  # a kernel on a gateway: no copies there
        return described.replace(
            HEADER,
            "## Variables in the user's notebook\n\nThese are in the notebook's kernel, "
            "not in yours, and cannot be copied into it here: use the session's datasets, or "
            "propose a notebook cell (propose_cell) that uses them.",
            1,
        )
    limit = session.settings.execution.variable_copy_max_mb
    return described.replace(
        HEADER,
        (
            "## Variables in the user's notebook\n\nThese are in the notebook's kernel, not in "
            "yours: your code runs in "
            "nini's sandbox. To use one, name it in run_code's `variables` (e.g. variables=[\"sales\"]): your kernel "
            "gets a copy before the code runs (one the turn copied already is not copied again), and it stays there "
            "(changing it changes nothing in the notebook). A variable larger than "
            f"{limit} MiB is not copied: work on a smaller part of it, or propose a notebook cell (propose_cell) for "
            "the user to run."
        ),
        1,
    )


def _cells_section(notebook: NotebookContext, max_tokens: int) -> str:
    """The attached cells, then the active cell and the cells above it within ``max_tokens``,
    shown in notebook order."""
    if max_tokens <= 0 or not notebook.cells:
        return ""
    active = notebook.active if notebook.active is not None else notebook.cells[-1].index
    wanted = [*notebook.attached_cells, *range(active, -1, -1)]
    chosen: dict[int, str] = {}
    used = 0
    for index in wanted:
        cell = notebook.cell(index)
        if cell is None or index in chosen:
            continue
        text = _cell_text(cell, active, index in notebook.attached_cells)
        cost = count_tokens(text)
        if used + cost > max_tokens and chosen:
            break
        chosen[index] = text
        used += cost
    name = f" {notebook.name}" if notebook.name else ""
    header = f"## The user's notebook{name} ({len(notebook.cells)} cells; the active one is cell {active})"
    return "\n\n".join([header, *(chosen[i] for i in sorted(chosen))])


def _cell_text(cell: NotebookCell, active: int, attached: bool) -> str:
    marks = [cell.cell_type] + (["active"] if cell.index == active else []) + (["attached"] if attached else [])
    source = _bounded(cell.source, CELL_SOURCE_CHARS)
    body = f"```\n{source}\n```" if cell.cell_type == "code" else source
    text = f"[cell {cell.index}, {', '.join(marks)}]\n{body}"
    if cell.outputs.strip():
        text += f"\nOutput:\n{_bounded(cell.outputs, CELL_OUTPUT_CHARS)}"
    return text


def _bounded(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text) - limit:,} more characters)"
