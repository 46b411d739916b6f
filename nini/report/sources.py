"""The two sources of a report: a recorded session (the history store) and a Jupyter notebook.

Both give a ``ReportInput``; nothing after this module knows which one it came from. A session's
charts are the files its executions recorded; a notebook's are the images in its cell outputs,
written out as files so that the report can preview and link them like any chart.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path, PurePosixPath
from typing import Any

from nini.errors import ErrorCode, NiniError, error_dict
from nini.execution.workspace import Workspace
from nini.fsutil import atomic_write_bytes
from nini.report import pycode
from nini.report.headings import cell_text, conclusion, headings, notebook_title
from nini.report.images import note_text
from nini.report.model import ChartFile, DatasetInfo, ExecutionSummary, ReportInput, Step, ToolCallInfo, Value
from nini.report.notebook_charts import NameAllocator, cell_charts, markdown_charts, slug
from nini.report.notebook_run import choose_kernel, run_notebook, runnable_cells
from nini.report.values import (
    Table,
    html_table,
    last_expression,
    output_values,
    printed_values,
    split_text_tables,
    summarise_reprs,
)

# Artifact formats a report shows as charts (the rest, e.g. csv or parquet, are data files).
CHART_FORMATS = frozenset({"png", "jpg", "jpeg", "webp", "svg", "html", "json", "pdf"})
CHART_KINDS = frozenset({"chart", "file"})
# A last expression's text worth a finding: short, and not an object's default repr.
RESULT_MAX_CHARS = 200
LONG_OUTPUT_CHARS = 1_000_000  # of one text output read from a notebook (see _cut_long_outputs)
_DEFAULT_REPR = re.compile(r"^\[?<.*>\]?$|\bat 0x[0-9a-f]+", re.DOTALL)
_LABEL_LINE = re.compile(r"^#\s*label\s*:\s*(.+?)\s*$", re.IGNORECASE)
_COMMENT_LINE = re.compile(r"^#(?![!%])\s*(.*?)\s*$")
# Comments that are directives to a tool, not a title of the cell.
_DIRECTIVE = re.compile(r"^(-\*-|noqa|type:|fmt:|pylint|pragma|isort|ruff)", re.IGNORECASE)
MAX_LABEL_CHARS = 80
_R_MAGIC = re.compile(r"^%%R(?:[ \t]|$)", re.MULTILINE)  # rpy2's R cell magic, on the cell's first line


def from_session(store: Any, session_id: str, workspace: Workspace | Path) -> ReportInput:
    """What session ``session_id`` recorded, as report input; NOT_FOUND for an unknown session.

    Chart files that are gone from the workspace (or whose recorded path leads outside it, or
    through a link) are left out, as are the charts of rolled-back executions.
    """
    if not isinstance(workspace, Workspace):
        workspace = Workspace(Path(workspace).resolve())
    session = store.get_session(session_id)
    steps = [_step(order, row) for order, row in enumerate(store.list_executions(session_id))]
    rolled_back = {step.id for step in steps if step.rolled_back}
    fs = workspace.fs
    charts: list[ChartFile] = []
    for row in store.list_artifacts(session_id):
        if row.get("execution_id") in rolled_back or not is_chart_artifact(row):
            continue
        try:
            relative = workspace.relative(row["path"])
        except NiniError:
            continue
        if fs.is_file(relative):
            charts.append(
                ChartFile(
                    name=PurePosixPath(relative).name,
                    path=workspace.root / relative,
                    order=len(charts),
                    step_id=row.get("execution_id"),
                    fs=fs,
                    relative=relative,
                )
            )
    datasets = [
        DatasetInfo(row["name"], row.get("rows"), list(row.get("columns") or []))
        for row in store.list_datasets(session_id)
    ]
    calls = [  # finished calls only: a report made by a skill would otherwise count its own running call
        ToolCallInfo(row["tool_name"], row["status"], row.get("duration_ms"))
        for row in store.list_tool_calls(session_id)
        if row["status"] != "running"
    ]
    return ReportInput(
        source=f"session {session_id}",
        steps=steps,
        charts=charts,
        datasets=datasets,
        tool_calls=calls,
        title=session.get("title") or None,
    )


def _step(order: int, row: dict[str, Any]) -> Step:
    """A recorded execution as a step; its values from its recorded outputs (nbformat outputs, as
    a notebook's), so a session's DataFrame is a table the same way a notebook's is."""
    outputs, succeeded = row.get("outputs") or [], row["status"] == "succeeded"
    # the row's stdout ends with the last expression's text too; its printed part is the stream outputs'
    printed = "".join(
        cell_text(o.get("text")) for o in outputs if o.get("output_type") == "stream" and o.get("name") == "stdout"
    )
    return Step(
        id=row["id"],
        order=order,
        language=row["language"],
        status=row["status"],
        code=row["code"],
        label=row.get("label"),
        purpose=row.get("purpose"),
        stdout=row.get("stdout") or "",
        stderr=row.get("stderr") or "",
        result=row.get("result"),
        error=row.get("error"),
        dataset_name=row.get("dataset_name"),
        save_as=row.get("save_as"),
        retry_of=row.get("retry_of"),
        rolled_back=bool(row.get("rolled_back_at")),
        tool_name=row.get("tool_name"),
        duration_ms=row.get("duration_ms"),
        created_at=row.get("created_at"),
        table=_frame_table(outputs) if succeeded else None,
        values=_step_values(
            outputs, printed if outputs else row.get("stdout") or "", row["code"] or "", row["language"]
        ),
    )


def is_chart_artifact(row: dict[str, Any]) -> bool:
    """Whether an artifacts row is a chart a report shows (not a data file)."""
    fmt = (row.get("format") or "").lower()
    if row.get("kind") not in CHART_KINDS or fmt not in CHART_FORMATS:
        return False
    # any JSON could be a "file"; only Plotly's figure JSON is a chart
    return fmt != "json" or row.get("kind") == "chart" or str(row.get("name", "")).endswith(".plotly.json")


def from_notebook(
    path: Path,
    *,
    execute: bool = False,
    timeout_s: float = 600,
    kernel_name: str | None = None,
    files_dir: Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> tuple[ReportInput, Path]:
    """A notebook as report input, and the folder its chart files were written to.

    Every code cell that has source or outputs is a step (an empty-source cell keeps the charts
    it shows), numbered by its position among all the notebook's cells (``Step.cell``, the number
    every part of the report names), under the nearest heading above it (``Step.section``), in
    its own language (a ``%%R`` cell is R), labelled by a ``# label:`` line or else its first
    comment line; Markdown cells are the notes; images in outputs are the charts (written to
    ``files_dir``, default ``<notebook-stem>_report_files/`` next to the notebook, named after
    the cell's label, else ``cell-N``). A cell with an error output failed (CODE_ERROR); in a
    notebook that ran, a cell that never did failed too (CANCELED); a failed cell gives no
    charts. The title is the notebook's own (``headings.notebook_title``), ``conclusion`` its
    concluding section.

    With ``execute`` the notebook runs first (``notebook_run``: ``timeout_s`` per cell, on
    ``kernel_name``: a kernelspec, "auto", or None for the notebook's own) and the executed copy,
    saved in ``files_dir``, is reported on; the user's file is never written. ``data.execution``
    says what failed, and when the kernel is not installed, that the report is from the saved
    outputs. ``progress`` gets a line per code cell (``cell 4/15 ...``).
    """
    path = Path(path)
    notebook = _read_notebook(path)
    files = Path(files_dir) if files_dir is not None else path.with_name(f"{path.stem}_report_files")
    language = _language(notebook)
    data = ReportInput(source=path.name)
    states: dict[int, ErrorCode] = {}
    if execute:
        kernel, missing = choose_kernel(notebook, kernel_name, language)
        if kernel is None:
            data.execution = ExecutionSummary(cells=len(runnable_cells(notebook)), missing_kernel=missing)
        else:
            run = run_notebook(notebook, path.parent, timeout_s, kernel, progress)
            data.execution, states = run.summary, run.states
            if run.ran:
                run.summary.missing_kernel = missing
                _write_notebook(notebook, files / f"{path.stem}.executed.ipynb")
    ran = any(
        c.cell_type == "code" and (c.get("execution_count") is not None or c.get("outputs")) for c in notebook.cells
    )
    names, labels = NameAllocator(), NameAllocator(" ({n})")
    section: str | None = None  # the nearest heading above
    label_heading: str | None = None  # the sub-heading of the Markdown cell just above, naming the next code cell
    first_code: int | None = None
    for index, cell in enumerate(notebook.cells):
        number, source = index + 1, cell_text(cell.get("source"))
        if cell.cell_type == "markdown" and source.strip():
            data.notes.append(note_text(source).strip())
            data.charts += markdown_charts(source, cell, path.parent, f"cell-{number}", names, files, len(data.charts))
            found = headings(source)
            section = found[-1].text if found else section
            subheadings = [h.text for h in found if h.level > 1]
            label_heading = subheadings[-1][:MAX_LABEL_CHARS] if subheadings else None
        elif cell.cell_type == "code" and (source.strip() or cell.get("outputs")):
            first_code = index if first_code is None else first_code
            explicit, title = _cell_label(source)
            title, label_heading = title or label_heading, None
            # a `# label:` is the author saying "same step"; titles from comments are made unique
            # so that two cells both headed "# plot" do not hide each other's findings
            label = labels.take(explicit) if explicit else (labels.next(title) if title else None)
            step = _cell_step(
                cell, number, len(data.steps), _cell_language(source, language), label, section, states.get(index), ran
            )
            data.steps.append(step)
            if step.status == "failed":  # what a failed cell drew is not a result; the report lists the cell
                continue
            stem = slug(label or "") or f"cell-{number}"
            data.charts += cell_charts(cell, step.id, stem, names, files, len(data.charts))
    data.title = notebook_title(notebook, path, len(notebook.cells) if first_code is None else first_code)
    data.conclusion = conclusion(notebook.cells)
    return data, files


def _read_notebook(path: Path) -> Any:
    from nbformat import ValidationError

    try:
        with path.open(encoding="utf-8") as file:
            raw = json.load(file)
        # nbformat.read of a notebook holding a 25 MB output peaks at 5x its size; on the parsed
        # JSON with its outputs cut to what a report can use, its own steps cost little
        return _as_notebook(_cut_long_outputs(raw))
    except ValidationError as exc:
        # JSON that is not a notebook ({} or a cell without its keys); nbformat's message says what is missing
        reason = exc.message if isinstance(exc.message, str) else str(exc)
        raise NiniError(
            ErrorCode.INVALID_ARGUMENT,
            f"{path.name} is not a valid notebook: {reason.splitlines()[0]}",
            {"validation": reason.splitlines()[0]},
        ) from None
    except FileNotFoundError:
        raise NiniError(ErrorCode.NOT_FOUND, f"no such notebook: {path}") from None
    except IsADirectoryError:
        raise NiniError(ErrorCode.INVALID_ARGUMENT, f"{path} is a folder, not a notebook") from None
    except (OSError, UnicodeDecodeError, ValueError, KeyError, AttributeError, TypeError) as exc:
        # nbformat raises NotJSONError (a ValueError) for text that is not JSON, and the others
        # for JSON that is not a notebook
        raise NiniError(ErrorCode.INVALID_ARGUMENT, f"{path} is not a readable notebook: {exc}") from None


def _as_notebook(raw: Any) -> Any:
    """``nbformat.reads`` from parsed JSON: the version's reader (ValidationError for a notebook
    missing a key), then conversion to v4. Its validation only logged, so it is left out."""
    import nbformat
    from nbformat import reader

    major, minor = reader.get_version(raw)
    if major not in nbformat.versions:
        raise ValueError(f"unsupported nbformat version {major}")
    try:
        notebook = nbformat.versions[major].to_notebook_json(raw, minor=minor)
    except AttributeError as exc:
        raise nbformat.ValidationError(f"The notebook is invalid and is missing an expected key: {exc}") from None
    return nbformat.convert(notebook, 4)


def _cut_long_outputs(raw: Any) -> Any:
    """The notebook's JSON with each text output longer than ``LONG_OUTPUT_CHARS`` cut to its head
    and tail (findings and tables read the first lines; a printed total may be the last), in place.
    Images are left whole: they are charts."""
    cells = raw.get("cells") if isinstance(raw, dict) else None
    for cell in cells if isinstance(cells, list) else []:
        outputs = cell.get("outputs") if isinstance(cell, dict) else None
        for output in outputs if isinstance(outputs, list) else []:
            if not isinstance(output, dict):
                continue
            if "text" in output:
                output["text"] = _cut(output["text"])
            data = output.get("data")
            if isinstance(data, dict):
                for mime in [m for m in data if m.startswith("text/")]:
                    data[mime] = _cut(data[mime])
    return raw


def _cut(value: Any) -> Any:
    text = "".join(value) if isinstance(value, list) and all(isinstance(v, str) for v in value) else value
    if not isinstance(text, str) or len(text) <= LONG_OUTPUT_CHARS:
        return value
    half = LONG_OUTPUT_CHARS // 2
    return f"{text[:half]}\n…\n{text[-half:]}"


def _write_notebook(notebook: Any, target: Path) -> None:
    import nbformat

    atomic_write_bytes(target, nbformat.writes(notebook).encode("utf-8"))


def _language(notebook: Any) -> str:
    metadata = notebook.metadata
    name = (metadata.get("kernelspec") or {}).get("language") or (metadata.get("language_info") or {}).get("name")
    return str(name or "python").lower()


def _cell_language(source: str, notebook_language: str) -> str:
    """A cell's language: R for an rpy2 ``%%R`` cell (``%%R -i df -o fit``), else the notebook's."""
    return "r" if _R_MAGIC.match(source.lstrip()) else notebook_language


# Why a cell failed when its outputs do not say it (``notebook_run`` states, and a cell never run).
_FAILURES = {
    ErrorCode.TIMEOUT: "the cell ran past its time limit and was interrupted",
    ErrorCode.KERNEL_DIED: "the kernel died while the cell ran",
    ErrorCode.CANCELED: "the cell was never run",
}


def _cell_step(
    cell: Any,
    number: int,
    order: int,
    language: str,
    label: str | None,
    section: str | None,
    state: ErrorCode | None,
    ran: bool,
) -> Step:
    """One code cell as a step. ``state`` is a failure its run recorded (TIMEOUT, ...); ``ran``
    whether the notebook ran at all (in one that never did, an unrun cell is not a failure)."""
    source = cell_text(cell.get("source"))
    outputs = cell.get("outputs") or []
    streams = {"stdout": "", "stderr": ""}
    error = None
    for output in outputs:
        if output.get("output_type") == "stream" and output.get("name") in streams:
            streams[output["name"]] += cell_text(output.get("text"))
        elif output.get("output_type") == "error":
            message = f"{output.get('ename', 'Error')}: {output.get('evalue', '')}".rstrip(": ")
            error = error_dict(ErrorCode.CODE_ERROR, message, ename=output.get("ename"))
    if state is None and ran and error is None and cell.get("execution_count") is None and not outputs:
        state = ErrorCode.CANCELED
    if state is not None:
        error = error_dict(state, _FAILURES[state], ename=(error or {}).get("ename"))
    table = None if error else _frame_table(outputs)
    return Step(
        id=str(cell.get("id") or f"cell-{number}"),
        order=order,
        language=language,
        status="failed" if error else "succeeded",
        code=source,
        label=label,
        stdout=streams["stdout"],
        stderr=streams["stderr"],
        result=None if error or table else _short_result(outputs),
        error=error,
        tool_name="notebook",
        table=table,
        cell=number,
        section=section,
        values=_step_values(outputs, streams["stdout"], source, language),
    )


def _step_values(outputs: list[Any], stdout: str, code: str, language: str) -> tuple[Value, ...]:
    """What a step showed, structured, in output order: each execute_result / display_data
    output's values (``values.output_values``: a DataFrame from its HTML or JSON, an R value from
    IRkernel's bundle), then the tables printed to stdout (``values.printed_values``). The value
    of the cell's last expression is named by that expression when the parser gave no name.
    """
    shown: list[Value] = []
    for output in outputs:
        if output.get("output_type") in ("execute_result", "display_data"):
            shown += output_values(output, language)
    shown += printed_values(stdout, language)[1] if stdout.strip() else []
    last = next((i for i in reversed(range(len(shown))) if shown[i].origin in ("result", "display")), None)
    # IRkernel sends a value as display_data; Python's last expression is its execute_result
    if last is not None and shown[last].name is None and (shown[last].origin == "result" or language == "r"):
        if expression := last_expression(code, language) if code.strip() else None:
            shown[last] = replace(shown[last], name=expression)
    return tuple(shown)


def _frame_table(outputs: list[Any]) -> Table | None:
    """The last DataFrame the cell displayed (its text/html), as a bounded table: a DataFrame's
    text/plain flattened into one line is what a report must never show."""
    for output in reversed(outputs):
        if output.get("output_type") in ("execute_result", "display_data"):
            html = cell_text((output.get("data") or {}).get("text/html"))
            if html and (table := html_table(html)) is not None:
                return table
    return None


def _short_result(outputs: list[Any]) -> str | None:
    """The text of the cell's last expression when it is short enough to be a finding, or when
    it is a printed DataFrame or Series (the findings make a bounded table of it)."""
    results = [o for o in outputs if o.get("output_type") == "execute_result"]
    if not results:
        return None
    text = summarise_reprs(cell_text((results[-1].get("data") or {}).get("text/plain")).strip())
    if not text or _DEFAULT_REPR.search(text):
        return None
    if len(text) > RESULT_MAX_CHARS or text.count("\n") > 3:
        rest, tables = split_text_tables(text)
        return text if tables and len(rest) <= RESULT_MAX_CHARS and rest.count("\n") <= 3 else None
    return text


def _cell_label(source: str) -> tuple[str | None, str | None]:
    """(the cell's ``# label:`` value, the first comment line above its code), either may be None."""
    lines = [line.strip() for line in source.splitlines()]
    if lines and lines[0].startswith("%%"):
        lines = lines[1:]  # a cell magic (%%R, %%time) runs the cell; the comments after it name it
    explicit = next((m.group(1) for line in lines if (m := _LABEL_LINE.match(line))), None)
    for line in lines:
        if line and not line.startswith("#"):
            break  # a comment further down explains a line, it does not name the cell
        match = _COMMENT_LINE.match(line)
        if match and match.group(1) and not _DIRECTIVE.match(match.group(1)) and not _is_code(match.group(1)):
            return explicit, match.group(1)[:MAX_LABEL_CHARS].strip()
    return explicit, None


def _is_code(text: str) -> bool:
    """Whether a comment is commented-out code (``df.head()``, ``x = 1``), which names no step.

    It must parse as Python and be more than a bare word (``# Title`` parses too)."""
    tree = pycode.parse(text)
    if tree is None:
        return bool(re.match(r"^(?:library|require|source)\(|^\w+\s*<-", text))  # R code
    if not tree.body:
        return False
    only = tree.body[0]
    if len(tree.body) == 1 and isinstance(only, ast.AnnAssign) and only.value is None:
        return False  # "Note: outliers" reads as an annotation to Python, as a title to people
    # words joined by and/or/not/in/is parse too ("Revenue and costs", "not used"): prose, not code
    return any(not isinstance(node, _PROSE_NODES) for node in ast.walk(tree))


_PROSE_NODES = (
    ast.Module,
    ast.Expr,
    ast.Name,
    ast.Load,
    ast.Constant,
    ast.BoolOp,
    ast.And,
    ast.Or,
    ast.UnaryOp,
    ast.Not,
    ast.Compare,
    ast.In,
    ast.NotIn,
    ast.Is,
    ast.IsNot,
)
