"""A session as a notebook a person can re-run, as Markdown to read, or as JSON to process.

The notebook turns every recorded execution into a code cell with its recorded outputs, in order.
A first cell recreates what nini's kernel offered (working directory = the session workspace,
``datasets[name]``), so the notebook re-executes on its own with nbclient. Steps that never ran
(refused by the policy) or cannot be re-run safely (timed out, killed the kernel) become Markdown
notes instead of code.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from nini.errors import ErrorCode, NiniError
from nini.execution.workspace_fs import RootedDir

FORMATS = ("ipynb", "md", "json")
NOT_RERUN = {"POLICY_VIOLATION": "refused by the policy, never ran", "TIMEOUT": "stopped after its time limit",
             "KERNEL_DIED": "it ended the kernel", "INVALID_ARGUMENT": "never ran (bad arguments)",
             "NOT_FOUND": "never ran (its dataset did not exist)"}

SETUP_CELL = '''# Recreates nini's kernel for session {session_id}: the working directory is the session
# workspace, and datasets[name] loads a session dataset (saved with save_as) by name.
import os
from pathlib import Path

import pandas as pd

os.chdir({workspace!r})


class _Datasets(dict):
    def __missing__(self, name):
        return pd.read_parquet(Path("datasets") / f"{{name}}.parquet")


datasets = _Datasets()'''


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


def export_session(store: Any, session_id: str, workspace: Path, format: str) -> str:
    """The session in ``format`` (ipynb, md or json), as text."""
    if format not in FORMATS:
        raise NiniError(ErrorCode.INVALID_ARGUMENT, f"format must be one of {', '.join(FORMATS)}, not {format!r}")
    bundle = session_bundle(store, session_id)
    if format == "json":
        return json.dumps(bundle, ensure_ascii=False, indent=2)
    if format == "md":
        return to_markdown(bundle)
    return to_notebook_json(bundle, workspace)


def to_notebook_json(bundle: dict[str, Any], workspace: Path) -> str:
    import nbformat
    from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

    session = bundle["session"]
    cells = [
        new_markdown_cell(f"# {session.get('title') or 'nini session ' + session['id']}\n\n"
                          f"Recorded by nini, session `{session['id']}`. Run all cells to repeat the analysis."),
        new_code_cell(SETUP_CELL.format(session_id=session["id"], workspace=str(workspace))),
    ]
    for execution in bundle["executions"]:
        reason = _not_rerun_reason(execution)
        if reason:
            cells.append(new_markdown_cell(f"Skipped step {_step_name(execution)}: {reason}.\n\n```python\n{execution['code']}\n```"))
            continue
        if execution.get("language") != "python":
            cells.append(new_markdown_cell(f"Step {_step_name(execution)} ran in {execution.get('language')}:\n\n"
                                           f"```{execution.get('language')}\n{execution['code']}\n```"))
            continue
        cell = new_code_cell(_rerunnable_source(execution), outputs=_outputs(execution, workspace))
        cell.metadata["nini"] = {"execution_id": execution["id"], "purpose": execution.get("purpose"),
                                 "label": execution.get("label")}
        if execution.get("status") == "failed":
            cell.metadata["tags"] = ["raises-exception"]  # nbclient goes on past it, like the session did
        cells.append(cell)
    notebook = new_notebook(cells=cells, metadata={
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
        "language_info": {"name": "python"},
    })
    nbformat.validate(notebook)
    return nbformat.writes(notebook)


def _rerunnable_source(execution: dict[str, Any]) -> str:
    """The recorded code, with what run_code's parameters did spelled out around it."""
    lines = []
    if execution.get("dataset_name"):
        lines.append(f"df = datasets[{execution['dataset_name']!r}]")
    lines.append(execution["code"].rstrip())
    if execution.get("save_as") and execution.get("status") == "succeeded":
        lines.append(f"datasets[{execution['save_as']!r}] = output_df")
    return "\n".join(lines)


def _outputs(execution: dict[str, Any], workspace: Path) -> list[Any]:
    from nbformat import from_dict

    outputs = [from_dict(o) for o in execution.get("outputs") or []]
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
            outputs.append(from_dict({"output_type": "display_data", "metadata": {},
                                      "data": {"image/png": encoded, "text/plain": f"<{artifact['name']}>"}}))
    return outputs


def _not_rerun_reason(execution: dict[str, Any]) -> str | None:
    code = (execution.get("error") or {}).get("code")
    return NOT_RERUN.get(code) if execution.get("status") == "failed" else None


def _step_name(execution: dict[str, Any]) -> str:
    return f"'{execution['label']}'" if execution.get("label") else execution["id"]


def to_markdown(bundle: dict[str, Any]) -> str:
    session = bundle["session"]
    out = [f"# {session.get('title') or 'nini session ' + session['id']}", "",
           f"Session `{session['id']}`, created {session.get('created_at')}.", ""]
    for message in bundle["messages"]:
        out += [f"**{message['role']}**: {message['content']}", ""]
    for number, execution in enumerate(bundle["executions"], 1):
        status = "ok" if execution.get("status") == "succeeded" else f"failed ({(execution.get('error') or {}).get('code')})"
        out += [f"## Step {number}: {execution.get('label') or execution.get('purpose') or ''} ({execution.get('language')}, {status})",
                "", f"```{execution.get('language')}", execution["code"].rstrip(), "```", ""]
        if execution.get("stdout"):
            out += ["Output:", "", "```text", execution["stdout"].rstrip(), "```", ""]
        if execution.get("error"):
            out += [f"Error: {execution['error'].get('message')}", ""]
        for artifact in execution.get("artifacts") or []:
            link = f"![{artifact['name']}]({artifact['path']})" if artifact.get("format") in ("png", "svg", "jpg") else f"[{artifact['name']}]({artifact['path']})"
            out += [link, ""]
    return "\n".join(out)
