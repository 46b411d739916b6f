"""A recorded session as a Jupyter notebook that re-runs anywhere.

It starts with the provenance header (``export_header``): the code is the agent's, where and
when it ran, what the static policy flags. Every recorded execution becomes a code cell tagged
``nini-agent-code`` with its recorded outputs, in order: Python as it ran, R as an rpy2 ``%%R``
cell whose ``-i``/``-o`` options pass the datasets in and out. Such a notebook runs the agent's
code in the reader's kernel, unsandboxed (the header says so); a *sandboxed* one instead makes
each step a ``%%nini_run`` cell that sends it to a fresh nini session's sandboxed kernel with the
same arguments (``dataset_name``, ``save_as``, ...), so re-running it is as contained as the
first run. The notebook holds no absolute host path: the datasets it needs (those no exported
step recreates) are copied to ``<name>_files/`` next to it, and its first code cell changes into
that folder (or, sandboxed, loads them into the new session), so the folder can be moved to
another machine with nini's packages and re-run to the same numbers. Steps that never ran
(refused by the policy) or cannot be re-run safely (timed out, killed the kernel) become
Markdown notes instead of code.
"""

from __future__ import annotations

import base64
import re
import shlex
import shutil
from pathlib import Path
from typing import Any

from nini.errors import ErrorCode, NiniError
from nini.history.export_header import AGENT_CODE_TAG
from nini.rooted import RootedDir

NOT_RERUN = {
    "POLICY_VIOLATION": "refused by the policy, never ran",
    "TIMEOUT": "stopped after its time limit",
    "KERNEL_DIED": "it ended the kernel",
    "WORKER_DIED": "it ended the R worker",
    "INVALID_ARGUMENT": "never ran (bad arguments)",
    "NOT_FOUND": "never ran (its dataset did not exist)",
}
CODE_LANGUAGES = ("python", "r")
# `datasets$name` and `datasets[["name"]]` in R code: the session datasets an R step reads.
_R_DATASET_REF = re.compile(r"""datasets\s*(?:\$\s*`?([A-Za-z0-9_.]+)`?|\[\[\s*["']([A-Za-z0-9_.-]+)["']\s*\]\])""")

SETUP_CELL = """# Recreates nini's kernel for session {session_id}. nini ran this code with the session
# workspace as working directory; here that is the folder {files!r} next to this notebook,
# which holds the datasets the steps read. datasets[name] loads a dataset by name.
import os
from pathlib import Path

import pandas as pd

if Path({files!r}).is_dir():
    os.chdir({files!r})
Path("artifacts").mkdir(exist_ok=True)


class _Datasets(dict):
    def __missing__(self, name):
        return pd.read_parquet(Path("datasets") / f"{{name}}.parquet")

    def __getattr__(self, name):  # datasets.name, for %%R -i df=datasets.name
        try:
            return self[name]
        except FileNotFoundError:
            raise AttributeError(name) from None


datasets = _Datasets()"""

SANDBOXED_SETUP = """# Re-runs nini session {session_id} in nini's sandbox: every step below is a %%nini_run cell, whose
# code goes to a fresh nini session's sandboxed kernel (or R worker) and is recorded there, as the
# agent's steps were; this kernel runs none of it. The datasets the steps read are loaded first.
%load_ext nini
%nini session --new --title {title}"""
# a line of a magic is expanded by IPython ($name, {expression}) before the magic reads it
_EXPANDED = str.maketrans({"$": "$$", "{": "{{", "}": "}}"})

R_SETUP = """
# R steps run through rpy2's %%R magic, in one embedded R shared by all R cells.
get_ipython().run_line_magic("load_ext", "rpy2.ipython")"""


def files_dir_name(stem: str) -> str:
    """The folder next to an exported notebook that holds what it reads: ``<stem>_files``."""
    return f"{stem}_files"


def input_datasets(bundle: dict[str, Any]) -> list[dict[str, Any]]:
    """The session datasets the notebook reads but no exported code cell recreates (loaded
    files, or datasets made by a step that is not re-run): these must be shipped with it."""
    rerun = {e["id"] for e in bundle["executions"] if _is_code_cell(e)}
    return [d for d in bundle["datasets"] if d.get("source_execution_id") not in rerun]


def copy_inputs(bundle: dict[str, Any], workspace: Path, files_dir: Path) -> list[str]:
    """Copy the input datasets from the workspace to ``files_dir/datasets``; their relative paths.

    The workspace is read through ``RootedDir`` (agent code wrote it: no link is followed).
    """
    source = RootedDir(workspace)
    (files_dir / "datasets").mkdir(parents=True, exist_ok=True)
    (files_dir / "artifacts").mkdir(exist_ok=True)
    copied = []
    for dataset in input_datasets(bundle):
        relative = f"datasets/{dataset['name']}.parquet"  # the export's own layout; the record names the version
        with source.reader(dataset["path"]) as handle, open(files_dir / relative, "wb") as target:
            shutil.copyfileobj(handle, target)
        copied.append(relative)
    return copied


def to_notebook_json(
    bundle: dict[str, Any], workspace: Path, files: str, header: str, *, sandboxed: bool = False
) -> str:
    """The notebook as nbformat JSON; ``files`` is the name of the folder next to it (relative),
    ``header`` the provenance text (``export_header``) its first cell holds under the title;
    ``sandboxed``: steps as ``%%nini_run`` cells (see the module docstring)."""
    import nbformat
    from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

    session = bundle["session"]
    inputs = input_datasets(bundle)
    intro = f"# {session.get('title') or 'nini session ' + session['id']}\n\n{header}"
    if inputs:
        intro += (
            "\n\nIt reads these files, relative to this notebook (`nini sessions export --out` writes them): "
            + ", ".join(f"`{files}/datasets/{d['name']}.parquet`" for d in inputs)
            + "."
        )
    has_r = any(_is_code_cell(e) and e.get("language") == "r" for e in bundle["executions"])
    setup = (
        _sandboxed_setup(session["id"], files, inputs)
        if sandboxed
        else SETUP_CELL.format(session_id=session["id"], files=files) + (R_SETUP if has_r else "")
    )
    cells = [new_markdown_cell(intro), new_code_cell(setup)]
    scrub = _scrubber(workspace)
    # names a `datasets$name` in R code can mean (a comment may mention others): passing an
    # unknown one in would make the cell fail where the session's step did not
    known = {d["name"] for d in bundle["datasets"]} | {e["save_as"] for e in bundle["executions"] if e.get("save_as")}
    timeouts = {c["id"]: (c.get("arguments") or {}).get("timeout_s") for c in bundle.get("tool_calls") or []}
    for number, execution in enumerate(bundle["executions"], 1):
        language = execution.get("language")
        if not _is_code_cell(execution):
            reason = _not_rerun_reason(execution) or f"it ran in {language}, which the notebook cannot run"
            cells.append(
                new_markdown_cell(
                    f"Skipped step {_step_name(execution)}: {reason}.{_policy_reasons(execution)}"
                    f"\n\n```{language}\n{execution['code'].rstrip()}\n```"
                )
            )
            continue
        before: list[str]
        after: list[str]
        if sandboxed:
            before, source, after = [], _nini_run_source(execution, timeouts.get(execution.get("tool_call_id"))), []
        elif language == "r":
            before, source, after = _r_cells(execution, known)
        else:
            before, source, after = [], _python_source(execution), []
        cells += [new_code_cell(text, metadata={"nini": {"bridge_for": execution["id"]}}) for text in before]
        cell = new_code_cell(source, outputs=_outputs(execution, workspace, scrub))
        cell.metadata["nini"] = {
            "execution_id": execution["id"],
            "step": number,
            "language": language,
            "status": execution.get("status"),
            "purpose": execution.get("purpose"),
            "label": execution.get("label"),
        }
        if execution.get("error"):  # e.g. an R step that did not parse: failed, never "ran"
            cell.metadata["nini"]["error"] = {
                "code": execution["error"].get("code"),
                "message": scrub(execution["error"].get("message") or ""),
            }
        cell.metadata["tags"] = [AGENT_CODE_TAG]
        if execution.get("status") == "failed":
            cell.metadata["tags"].append("raises-exception")  # nbclient goes on past it, like the session did
        cells.append(cell)
        cells += [new_code_cell(text, metadata={"nini": {"bridge_for": execution["id"]}}) for text in after]
    notebook = new_notebook(
        cells=cells,
        metadata={
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
            "language_info": {"name": "python"},
        },
    )
    nbformat.validate(notebook)
    text: str = nbformat.writes(notebook)
    return text


def _sandboxed_setup(session_id: str, files: str, inputs: list[dict[str, Any]]) -> str:
    """The first code cell of a sandboxed export: nini's magics, a fresh session, its input datasets."""
    lines = [SANDBOXED_SETUP.format(session_id=session_id, title=_magic_arg(f"re-run of nini session {session_id}"))]
    for name in (d["name"] for d in inputs):
        lines.append(f"%nini load {_magic_arg(f'{files}/datasets/{name}.parquet')} --name {name}")
    return "\n".join(lines)


def _nini_run_source(execution: dict[str, Any], timeout_s: Any) -> str:
    """A step as a ``%%nini_run`` cell with the arguments it ran with. ``%%nini_run`` does not
    expand its line, and every value is one shell word (``--label=...``), so an agent's label
    stays a label."""
    options = ["--r"] if execution.get("language") == "r" else []
    values = {
        "dataset": execution.get("dataset_name"),
        "save-as": execution.get("save_as"),
        "label": " ".join((execution.get("label") or "").split()) or None,
        "purpose": execution.get("purpose"),
        "timeout": timeout_s if isinstance(timeout_s, int | float) and not isinstance(timeout_s, bool) else None,
    }
    options += [shlex.quote(f"--{key}={value}") for key, value in values.items() if value is not None]
    return "\n".join([" ".join(["%%nini_run", *options]), execution["code"].rstrip()])


def _magic_arg(text: str) -> str:
    """``text`` as one word of a ``%nini`` line, as it is after IPython's expansion."""
    return shlex.quote(text).translate(_EXPANDED)


def _is_code_cell(execution: dict[str, Any]) -> bool:
    return execution.get("language") in CODE_LANGUAGES and _not_rerun_reason(execution) is None


def _python_source(execution: dict[str, Any]) -> str:
    """The recorded code, with what run_code's parameters did spelled out around it."""
    lines = []
    if execution.get("dataset_name"):
        lines.append(f"df = datasets[{execution['dataset_name']!r}]")
    lines.append(execution["code"].rstrip())
    if execution.get("save_as") and execution.get("status") == "succeeded":
        lines.append(f"datasets[{execution['save_as']!r}] = output_df")
    return "\n".join(lines)


def _r_cells(execution: dict[str, Any], known: set[str]) -> tuple[list[str], str, list[str]]:
    """An R step as ``%%R`` (Python cells before and after only where the magic cannot pass a
    dataset itself): ``-i df=datasets.name`` for ``dataset_name``, one ``-i`` per dataset the
    code reads as ``datasets$name`` (rebuilt as an R list, as the R worker offers it), and
    ``-o output_df`` with a Python cell storing it under ``save_as``."""
    before: list[str] = []
    inputs: list[str] = []

    def pass_in(r_name: str, dataset: str) -> None:
        if dataset.isidentifier() and not hasattr(dict, dataset):
            inputs.append(f"{r_name}=datasets.{dataset}")
        else:  # the magic reads dotted names as attribute paths: go through a Python variable
            before.append(f"{r_name} = datasets[{dataset!r}]")
            inputs.append(r_name)

    code = execution["code"].rstrip()
    r_lines = []
    referenced = sorted({a or b for a, b in _R_DATASET_REF.findall(code)} & known)
    for number, name in enumerate(referenced):
        pass_in(f"nini_in_{number}", name)
    if referenced:
        r_lines.append("datasets <- list(" + ", ".join(f"`{n}` = nini_in_{i}" for i, n in enumerate(referenced)) + ")")
    if execution.get("dataset_name"):
        pass_in("df", execution["dataset_name"])
    options = "".join(f" -i {item}" for item in inputs)
    after = []
    if execution.get("save_as") and execution.get("status") == "succeeded":
        options += " -o output_df"
        after.append(f"datasets[{execution['save_as']!r}] = output_df.reset_index(drop=True)")
    return before, "\n".join([f"%%R{options}", *r_lines, code]), after


def _outputs(execution: dict[str, Any], workspace: Path, scrub: Any) -> list[Any]:
    """The recorded outputs (host paths made relative), with chart artifacts not shown yet."""
    from nbformat import from_dict

    outputs = [from_dict(scrub(o)) for o in execution.get("outputs") or []]
    if not outputs and execution.get("stdout"):  # R steps record their console text only
        outputs.append(from_dict({"output_type": "stream", "name": "stdout", "text": scrub(execution["stdout"])}))
    shown = {o.get("data", {}).get("image/png") for o in outputs if o.get("output_type") == "display_data"}
    files = RootedDir(workspace)  # agent code wrote these files: no link is followed
    for artifact in execution.get("artifacts") or []:
        if artifact.get("format") != "png":
            continue
        try:
            encoded = base64.b64encode(files.read_bytes(artifact["path"])).decode("ascii")
        except NiniError:
            continue
        if encoded not in shown:
            outputs.append(
                from_dict(
                    {
                        "output_type": "display_data",
                        "metadata": {},
                        "data": {"image/png": encoded, "text/plain": f"<{artifact['name']}>"},
                    }
                )
            )
    return outputs


def _scrubber(workspace: Path) -> Any:
    """A function that rewrites the workspace's absolute path, wherever recorded text holds it,
    as a relative one: the notebook must name no host path."""
    roots = sorted({str(workspace), str(Path(workspace).resolve())}, key=len, reverse=True)

    def scrub(value: Any) -> Any:
        if isinstance(value, str):
            for root in roots:
                value = value.replace(root + "/", "").replace(root, ".")
            return value
        if isinstance(value, list):
            return [scrub(v) for v in value]
        if isinstance(value, dict):
            return {k: (v if k == "image/png" else scrub(v)) for k, v in value.items()}
        return value

    return scrub


def _not_rerun_reason(execution: dict[str, Any]) -> str | None:
    error: dict[str, Any] = execution.get("error") or {}
    return NOT_RERUN.get(error.get("code", "")) if execution.get("status") == "failed" else None


def _policy_reasons(execution: dict[str, Any]) -> str:
    error = execution.get("error") or {}
    if error.get("code") != ErrorCode.POLICY_VIOLATION.value or not error.get("message"):
        return ""
    return f"\n\nThe policy's reasons: {error['message']}"


def _step_name(execution: dict[str, Any]) -> str:
    return f"'{execution['label']}'" if execution.get("label") else execution["id"]
