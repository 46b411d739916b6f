"""What a turn knows about the user's notebook: its cells, the active one, what the user attached,
and a description of the kernel's variables.

The user's client builds it (``%%nini`` from its own shell, the sidebar's ask request from the
notebook model) and hands it to the ``Session`` of that turn; the model never sets it. The agent's
prompt gets a bounded part of it (``nini.agent.notebook_prompt``), and the ``read_notebook`` skill
lets the model ask for more. Indices are 0-based positions in the notebook as the client saw it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

CELL_TYPES = ("code", "markdown", "raw")


@dataclass(frozen=True)
class NotebookCell:
    index: int
    cell_type: str  # one of CELL_TYPES
    source: str
    outputs: str = ""  # the text of its outputs (stream, text/plain, errors), as the client gave it


@dataclass
class NotebookContext:
    name: str | None = None  # the notebook's file name, for display only (never a host path)
    cells: list[NotebookCell] = field(default_factory=list)
    active: int | None = None  # the active cell's index
    attached_cells: list[int] = field(default_factory=list)  # cells the user attached to the question
    attached_files: dict[str, str] = field(default_factory=dict)  # name -> text the user attached
    namespace: str | None = None  # the kernel's variables, described (``describe_namespace``)

    def cell(self, index: int) -> NotebookCell | None:
        return next((c for c in self.cells if c.index == index), None)

    @classmethod
    def from_json(cls, data: Any) -> NotebookContext:
        """From the sidebar's request body (``{"name", "cells": [{"cell_type", "source",
        "outputs"}], "active", "attached_cells", "attached_files"}``); INVALID_ARGUMENT when it is
        not that shape. Cells take their index from their position."""
        from nini.errors import ErrorCode, NiniError

        def bad(why: str) -> NiniError:
            return NiniError(ErrorCode.INVALID_ARGUMENT, f"notebook: {why}")

        if not isinstance(data, dict):
            raise bad("must be an object")
        cells = data.get("cells") or []
        if not isinstance(cells, list):
            raise bad("cells must be a list")
        parsed = []
        for index, cell in enumerate(cells):
            if not isinstance(cell, dict) or cell.get("cell_type") not in CELL_TYPES:
                raise bad(f"cell {index} must be an object with cell_type one of {', '.join(CELL_TYPES)}")
            source, outputs = cell.get("source", ""), cell.get("outputs", "")
            if not isinstance(source, str) or not isinstance(outputs, str):
                raise bad(f"cell {index}: source and outputs must be strings")
            parsed.append(NotebookCell(index, cell["cell_type"], source, outputs))
        active, attached, files = data.get("active"), data.get("attached_cells") or [], data.get("attached_files") or {}
        if active is not None and not (type(active) is int and 0 <= active < len(parsed)):
            raise bad("active must be the index of one of its cells")
        if not isinstance(attached, list) or not all(type(i) is int and 0 <= i < len(parsed) for i in attached):
            raise bad("attached_cells must list indices of its cells")
        if not isinstance(files, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in files.items()):
            raise bad("attached_files must map names to text")
        name = data.get("name")
        return cls(
            name=name if isinstance(name, str) else None,
            cells=parsed,
            active=active,
            attached_cells=list(attached),
            attached_files=dict(files),
        )
