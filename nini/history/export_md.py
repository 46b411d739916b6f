"""A recorded session as Markdown for a person to read.

It starts with the provenance header (``export_header``: the code is the agent's, where and when
it ran, what the static policy flags). The conversation comes first (an assistant turn that only called tools
says which; a tool's result is shown as text and tables, not as the JSON the model was sent), then every
execution as a step with its code, output and charts. Charts are linked by relative path under ``<name>_files/``;
``copy_images`` puts them there (read through ``RootedDir``: agent code wrote the workspace).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

from nini.errors import NiniError
from nini.rooted import RootedDir

IMAGE_FORMATS = ("png", "svg", "jpg", "jpeg", "gif")
_MAX_TABLE_ROWS = 30  # a longer list of records is cut: Markdown is for reading, JSON holds it all


def copy_images(bundle: dict[str, Any], workspace: Path, files_dir: Path) -> list[str]:
    """Copy the artifacts the Markdown links to into ``files_dir``; the relative paths copied.
    A file agent code replaced by a link or removed is left out (its link then dangles)."""
    source = RootedDir(workspace)
    copied = []
    for artifact in _linked_artifacts(bundle):
        try:
            relative = source.parts(artifact["path"])
            data = source.read_bytes("/".join(relative))
        except NiniError:
            continue
        target = files_dir.joinpath(*relative)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        copied.append("/".join(relative))
    return copied


def to_markdown(bundle: dict[str, Any], files: str, header: str) -> str:
    """The session as Markdown; ``files`` is the folder beside it that holds its images, ``header``
    the provenance text under the title."""
    session = bundle["session"]
    out = [
        f"# {session.get('title') or 'nini session ' + session['id']}",
        "",
        f"Session `{session['id']}`, created {session.get('created_at')}.",
        "",
        header,
        "",
    ]
    for message in bundle["messages"]:
        out += _message(message)
    for number, execution in enumerate(bundle["executions"], 1):
        error = execution.get("error") or {}
        status = "ok" if execution.get("status") == "succeeded" else f"failed ({error.get('code')})"
        language = execution.get("language")
        out += [
            f"## Step {number}: {execution.get('label') or execution.get('purpose') or ''} ({language}, {status})",
            "",
            f"```{language}",
            execution["code"].rstrip(),
            "```",
            "",
        ]
        if execution.get("stdout"):
            out += ["Output:", "", "```text", execution["stdout"].rstrip(), "```", ""]
        if error:
            out += [f"Error: {error.get('message')}", ""]
        for artifact in execution.get("artifacts") or []:
            target = quote(f"{files}/{artifact['path']}")  # a space would end a Markdown link
            link = (
                f"![{artifact['name']}]({target})"
                if artifact.get("format") in IMAGE_FORMATS
                else f"[{artifact['name']}]({target})"
            )
            out += [link, ""]
    return "\n".join(out)


def _linked_artifacts(bundle: dict[str, Any]) -> list[dict[str, Any]]:
    return [a for e in bundle["executions"] for a in e.get("artifacts") or [] if a.get("format") in IMAGE_FORMATS]


def _message(message: dict[str, Any]) -> list[str]:
    role, content = message["role"], message.get("content")
    meta = message.get("metadata") or {}
    if role == "tool":
        return [f"**tool** `{meta.get('name') or 'result'}`:", "", *_tool_result(content), ""]
    calls = [c.get("name") for c in meta.get("tool_calls") or [] if c.get("name")]
    lines = [f"**{role}**: {content}", ""] if content else []
    if calls:
        lines += [f"**{role}** calls " + ", ".join(f"`{name}`" for name in calls) + ".", ""]
    return lines  # an empty turn (no text, no call) says nothing worth printing


def _tool_result(content: str | None) -> list[str]:
    """A tool's result as text and tables: the JSON the model saw, made readable."""
    if not content:
        return ["(no result)"]
    try:
        value = json.loads(content)
    except ValueError:
        return ["```text", content.rstrip(), "```"]
    return _render(value)


def _render(value: Any) -> list[str]:
    if isinstance(value, dict):
        if value.get("success") is False and isinstance(value.get("error"), dict):
            return [f"failed ({value['error'].get('code')}): {value['error'].get('message')}"]
        if (
            isinstance(value.get("columns"), list)
            and isinstance(value.get("rows"), list)
            and all(isinstance(row, list) for row in value["rows"])
        ):  # a data frame preview
            rows = value["rows"]
            more = [f"({len(rows) - _MAX_TABLE_ROWS} more rows)"] if len(rows) > _MAX_TABLE_ROWS else []
            return _table(value["columns"], rows[:_MAX_TABLE_ROWS]) + more
        lines: list[str] = []
        short = [[k, v] for k, v in value.items() if _is_scalar(v) and v not in (None, "") and "\n" not in str(v)]
        if short:
            lines += [*_table(["field", "value"], short), ""]
        for key, item in value.items():
            if item in (None, "", [], {}) or (_is_scalar(item) and "\n" not in str(item)):
                continue
            body = ["```text", item.rstrip(), "```"] if isinstance(item, str) else _render(item)
            lines += [f"{key}:", "", *body, ""]
        return lines[:-1] if lines and lines[-1] == "" else lines
    if isinstance(value, list):
        if value and all(isinstance(v, dict) for v in value):
            columns = list(dict.fromkeys(k for row in value for k in row))
            rows = [[row.get(c) for c in columns] for row in value[:_MAX_TABLE_ROWS]]
            more = [f"({len(value) - _MAX_TABLE_ROWS} more rows)"] if len(value) > _MAX_TABLE_ROWS else []
            return _table(columns, rows) + more
        return [", ".join(_cell(v) for v in value)]
    return ["```text", str(value).rstrip(), "```"] if isinstance(value, str) and "\n" in value else [_cell(value)]


def _is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))


def _cell(value: Any) -> str:
    if isinstance(value, (dict, list)):
        value = (
            ", ".join(f"{k}={_cell(v)}" for k, v in value.items())
            if isinstance(value, dict)
            else ", ".join(map(_cell, value))
        )
    return str(value).replace("|", "\\|").replace("\n", " ")


def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    return [
        "| " + " | ".join(map(_cell, header)) + " |",
        "|" + "---|" * len(header),
        *("| " + " | ".join(_cell(v) for v in row) + " |" for row in rows),
    ]
