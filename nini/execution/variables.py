"""Copies of a notebook's variables in the session's sandboxed kernel (sandbox first).

The sidebar's default runs the agent's code in nini's sandbox, not in the notebook's kernel; the
agent still works on the user's data by asking for copies of the notebook's variables by name
(``run_code``'s ``variables``). ``copy_variables`` has the notebook's kernel pickle them into the
workspace (``_variables_side.export``, nini's code, bounded by ``execution.variable_copy_max_mb``)
and the sandboxed kernel load them (``_variables_side.load``). A variable that is too large, not
picklable or missing is not copied: the step is refused before its code runs, saying what the
variable is, so the agent can propose a notebook cell for it instead (``propose_cell``).
"""

from __future__ import annotations

import json
import keyword
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
_SIDE = "__import__('nini.execution._variables_side', fromlist=['export'])"


@dataclass
class VariableCopy:
    """What ``copy_variables`` did: notes for the step's output, or the refusal that ends it."""

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


async def copy_variables(
    kernels: KernelPool, source_kernel: str, session_id: str, workspace: Workspace, names: list[str], *,
    limit_mb: int, timeout_s: float,
) -> VariableCopy:
    """Copy ``names`` from the notebook's kernel ``source_kernel`` into the session's own kernel."""
    limit = limit_mb * 1024 * 1024
    workspace.fs.makedirs(FOLDER)  # nini's, with the workspace's owner: the sandbox may remove the copies
    token = secrets.token_hex(6)
    expression = (f"{_SIDE}.export({str(workspace.root)!r}, {names!r}, {limit}, {token!r}, "
                  f"{time.time() + timeout_s!r})")  # fmt: skip
    found = await kernels.evaluate_in(source_kernel, expression, timeout_s)
    if found is None or found[0] != "ok":
        return VariableCopy(refusal=_not_exported(found))
    report = json.loads(found[1])
    copied, refused = report["copied"], report["refused"]
    if refused or report.get("late"):
        _remove(workspace, [entry["file"] for entry in copied.values()])
        return VariableCopy(refusal=_refused(refused, limit_mb) if refused else _not_exported(("timeout", "")))
    if not copied:
        return VariableCopy()
    files = {name: entry["file"] for name, entry in copied.items()}
    state, text = await kernels.evaluate_own(session_id, workspace, f"{_SIDE}.load({str(workspace.root)!r}, {files!r})",
                                             timeout_s)  # fmt: skip
    _remove(workspace, list(files.values()))
    loaded = json.loads(text) if state == "ok" else {"loaded": [], "failed": {n: text or state for n in files}}
    if loaded["failed"]:
        reasons = "; ".join(f"{name}: {why}" for name, why in loaded["failed"].items())
        return VariableCopy(refusal=CodeOutcome.failure("INVALID_ARGUMENT", f"could not load the copies in the sandbox: {reasons}"))
    notes = [f"nini: {name} copied from the notebook ({copied[name]['type']}, {_size(copied[name]['bytes'])}); "
             "changing it here changes nothing in the notebook\n" for name in loaded["loaded"]]  # fmt: skip
    return VariableCopy(notes=notes)


def _refused(refused: dict[str, Any], limit_mb: int) -> CodeOutcome:
    lines = []
    code = "NOT_FOUND" if all(r["reason"] == "missing" for r in refused.values()) else "INVALID_ARGUMENT"
    for name, why in refused.items():
        described = f" ({why['description']})" if why.get("description") else ""
        if why["reason"] == "too_large":
            code = "TOO_LARGE"
            lines.append(f"{name}{described} is too large to copy into the sandbox ({why['detail']}; the limit is "
                         f"execution.variable_copy_max_mb = {limit_mb} MiB): work on it in the notebook instead, by "
                         "proposing a cell (propose_cell), or copy a smaller part of it (a sample, the columns you need)")
        elif why["reason"] == "unpicklable":
            lines.append(f"{name}{described} cannot be copied ({why['detail']}): propose a notebook cell that uses it")
        else:
            lines.append(f"{name}: {why['detail']}")
    return CodeOutcome.failure(code, "the step did not run: " + "; ".join(lines))


def _not_exported(found: tuple[str, str] | None) -> CodeOutcome:
    if found is None:
        return CodeOutcome.failure("NOT_FOUND", "the notebook's kernel is gone: no variable could be copied from it")
    if found[0] == "timeout":
        return CodeOutcome.failure("TIMEOUT", "the notebook's kernel is busy (running a cell): its variables could not "
                                   "be copied; try again when it is idle")  # fmt: skip
    return CodeOutcome.failure("INTERNAL", f"the notebook's kernel could not copy its variables ({found[1][:300]}); "
                               "it needs nini installed in its environment")  # fmt: skip


def _remove(workspace: Workspace, files: list[str]) -> None:
    for relative in files:
        try:
            workspace.fs.unlink(relative)
        except NiniError:
            pass


def _size(count: int) -> str:
    return f"{count / 1024 / 1024:,.1f} MiB" if count >= 1024 * 1024 else f"{count:,} bytes"
