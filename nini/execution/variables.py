"""Copies of a notebook's variables in the session's sandboxed kernel (sandbox first).

The sidebar's default runs the agent's code in nini's sandbox, not in the notebook's kernel; the
agent still works on the user's data by asking for copies of the notebook's variables by name
(``run_code``'s ``variables``). A copy is made by the notebook's kernel, which pickles the variable
into the workspace (``_variables_side.export``, nini's code, bounded by
``execution.variable_copy_max_mb``), and the sandboxed kernel, which loads it
(``_variables_side.load``). A variable that is too large, not picklable or missing is not copied:
the step is refused before its code runs, saying what the variable is, so the agent can propose a
notebook cell for it instead (``propose_cell``).

``NotebookVariables`` is one turn's view: when the turn starts it copies the notebook's small data
variables (``execution.variable_prefetch_mb`` in all) while the model thinks, which also starts
the sandboxed kernel, so the step that names them runs at once; a name already copied in the turn
is not copied again.
"""

from __future__ import annotations

import asyncio
import json
import keyword
import logging
import secrets
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from nini.errors import ErrorCode, NiniError
from nini.execution._variables_side import FOLDER
from nini.execution.outcome import CodeOutcome

if TYPE_CHECKING:
    from nini.execution.kernels import KernelPool
    from nini.execution.workspace import Workspace

MAX_NAMES = 32
PREFETCH_TIMEOUT_S = 30.0  # a notebook kernel busy longer than this with the user's cell: copy when asked
log = logging.getLogger("nini.execution.variables")
_SIDE = "__import__('nini.execution._variables_side', fromlist=['export'])"


@dataclass
class VariableCopy:
    """What a copy did: notes for the step's output, or the refusal that ends it."""

    notes: list[str] = field(default_factory=list)
    refusal: CodeOutcome | None = None


def check_names(names: Any) -> list[str]:
    """``names`` as a list of variable names; INVALID_ARGUMENT for anything else."""
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise NiniError(ErrorCode.INVALID_ARGUMENT, "variables must be a list of variable names")
    bad = [n for n in names if not n.isidentifier() or keyword.iskeyword(n)]
    if bad:
        raise NiniError(ErrorCode.INVALID_ARGUMENT, f"not variable names: {', '.join(map(repr, bad[:5]))}")
    if len(names) > MAX_NAMES:
        raise NiniError(ErrorCode.INVALID_ARGUMENT, f"at most {MAX_NAMES} variables per step")
    return list(dict.fromkeys(names))


class NotebookVariables:
    """The variables of notebook kernel ``kernel_id`` as copies in session ``session_id``'s sandboxed
    kernel, for one turn."""

    def __init__(
        self,
        kernels: KernelPool,
        kernel_id: str,
        session_id: str,
        workspace: Workspace,
        *,
        limit_mb: int,
        prefetch_mb: int,
    ) -> None:
        self.kernels, self.kernel_id, self.session_id, self.workspace = kernels, kernel_id, session_id, workspace
        self.limit_mb, self.prefetch_mb = limit_mb, prefetch_mb
        self.copied: dict[str, dict[str, Any]] = {}  # name -> {type, bytes} of the copies made this turn
        self._prefetch: asyncio.Task[None] | None = None

    def prefetch(self) -> None:
        """Start copying the notebook's small data variables (on the running loop); ``ensure`` waits for it."""
        if self.prefetch_mb > 0 and self.limit_mb > 0 and self._prefetch is None:
            self._prefetch = asyncio.get_running_loop().create_task(
                self._run_prefetch(), name="nini-variables-prefetch"
            )

    async def _run_prefetch(self) -> None:
        try:
            await self._copy(None, PREFETCH_TIMEOUT_S)
        except Exception:  # only a head start: ensure copies what the step names anyway
            log.info("prefetching the notebook's variables failed", exc_info=True)

    async def ensure(self, names: list[str], timeout_s: float) -> VariableCopy:
        """``names`` copied into the sandboxed kernel: those the turn copied already are kept."""
        if self._prefetch is not None:
            await asyncio.shield(self._prefetch)
        missing = [name for name in names if name not in self.copied]
        copy = await self._copy(missing, timeout_s) if missing else VariableCopy()
        if copy.refusal is None:
            copy.notes = [_note(name, self.copied[name]) for name in names if name in self.copied]
        return copy

    def close(self) -> None:
        """The turn is over: stop a prefetch still under way."""
        if self._prefetch is not None:
            self._prefetch.cancel()

    async def _copy(self, names: list[str] | None, timeout_s: float) -> VariableCopy:
        """Copy ``names`` (None: the prefetch's choice) from the notebook's kernel into the session's."""
        limit = self.limit_mb * 1024 * 1024
        workspace = self.workspace
        workspace.fs.makedirs(FOLDER)  # nini's, with the workspace's owner: the sandbox may remove the copies
        expression = (
            f"{_SIDE}.export({str(workspace.root)!r}, {names!r}, {limit}, {secrets.token_hex(6)!r}, "
            f"{time.time() + timeout_s!r}, {self.prefetch_mb * 1024 * 1024})"
        )
        found = await self.kernels.evaluate_in(self.kernel_id, expression, timeout_s)
        if found is None or found[0] != "ok":
            return VariableCopy(refusal=_not_exported(found))
        report = json.loads(found[1])
        copied, refused = report["copied"], report["refused"]
        if refused or report.get("late"):
            _remove(workspace, [entry["file"] for entry in copied.values()])
            return VariableCopy(refusal=_refused(refused, self.limit_mb) if refused else _not_exported(("timeout", "")))
        if not copied:
            return VariableCopy()
        files = {name: entry["file"] for name, entry in copied.items()}
        load = f"{_SIDE}.load({str(workspace.root)!r}, {files!r})"
        try:
            state, text = await self.kernels.evaluate_own(self.session_id, workspace, load, timeout_s)
        finally:
            _remove(workspace, list(files.values()))
        loaded: dict[str, Any] = (
            json.loads(text) if state == "ok" else {"loaded": [], "failed": {n: text or state for n in files}}
        )
        for name in loaded["loaded"]:
            self.copied[name] = {"type": copied[name]["type"], "bytes": copied[name]["bytes"]}
        if loaded["failed"]:
            reasons = "; ".join(f"{name}: {why}" for name, why in loaded["failed"].items())
            return VariableCopy(
                refusal=CodeOutcome.failure(
                    ErrorCode.INVALID_ARGUMENT, f"could not load the copies in the sandbox: {reasons}"
                )
            )
        return VariableCopy()


def _note(name: str, copied: dict[str, Any]) -> str:
    return (
        f"nini: {name} is a copy of the notebook's ({copied['type']}, {_size(copied['bytes'])}); changing it here "
        "changes nothing in the notebook\n"
    )


def _refused(refused: dict[str, Any], limit_mb: int) -> CodeOutcome:
    lines = []
    missing = all(r["reason"] == "missing" for r in refused.values())
    code = ErrorCode.NOT_FOUND if missing else ErrorCode.INVALID_ARGUMENT
    for name, why in refused.items():
        described = f" ({why['description']})" if why.get("description") else ""
        if why["reason"] == "too_large":
            code = ErrorCode.TOO_LARGE
            lines.append(
                f"{name}{described} is too large to copy into the sandbox ({why['detail']}; the limit is "
                f"execution.variable_copy_max_mb = {limit_mb} MiB): work on it in the notebook instead, by "
                "proposing a cell (propose_cell), or copy a smaller part of it (a sample, the columns you need)"
            )
        elif why["reason"] == "unpicklable":
            lines.append(f"{name}{described} cannot be copied ({why['detail']}): propose a notebook cell that uses it")
        else:
            lines.append(f"{name}: {why['detail']}")
    return CodeOutcome.failure(code, "the step did not run: " + "; ".join(lines))


def _not_exported(found: tuple[str, str] | None) -> CodeOutcome:
    if found is None:
        return CodeOutcome.failure(
            ErrorCode.NOT_FOUND, "the notebook's kernel is gone: no variable could be copied from it"
        )
    if found[0] == "timeout":
        return CodeOutcome.failure(
            ErrorCode.TIMEOUT,
            "the notebook's kernel is busy (running a cell): its variables could not "
            "be copied; try again when it is idle",
        )
    return CodeOutcome.failure(
        ErrorCode.INTERNAL,
        f"the notebook's kernel could not copy its variables ({found[1][:300]}); "
        "it needs nini installed in its environment",
    )


def _remove(workspace: Workspace, files: list[str]) -> None:
    for relative in files:
        try:
            workspace.fs.unlink(relative)
        except NiniError:
            pass


def _size(count: int) -> str:
    return f"{count / 1024 / 1024:,.1f} MiB" if count >= 1024 * 1024 else f"{count:,} bytes"
