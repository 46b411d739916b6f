"""Runs inside the kernel: the ``datasets`` mapping, and what nini collects after each run.

The kernel runs nini's own interpreter, so the host reaches this module with
``__import__("nini.execution._kernel_side", ...)`` in a silent prelude and in the run's
``user_expressions``. It only imports the standard library and nini's workspace at load time;
pandas and matplotlib are used only when the user's code already imported them. The naming of
artifact files lives here too, because the host names rich outputs with the same rules.

The kernel may be the user's own (``%%nini``, run-code with ``kernel_id``), outside the sandbox,
while the workspace was written by sandboxed agent code: so every file here is opened through
the workspace's ``RootedDir`` (no link followed in any component, the same rule as the host's),
and nothing changes the kernel's working directory or ``sys.path``.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
import math
import re
import sys
import warnings
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, BinaryIO

from nini.errors import ErrorCode, NiniError
from nini.execution.workspace import Workspace, dataset_too_large, out_of_memory, unreadable_dataset

PREVIEW_ROWS = 20


class DatasetMapping(Mapping[str, Any]):
    """``datasets[name]``: a session dataset as a DataFrame, read from Parquet on every access.

    Read-only and always current: a dataset saved by an earlier run (or by R) is there without
    reloading anything.
    """

    def __init__(self, workspace: Workspace) -> None:
        self._workspace = workspace

    def __getitem__(self, name: str) -> Any:
        fs = self._workspace.fs
        try:
            relative = self._workspace.indexed_dataset(name)  # the version the record names
            handle = fs.reader(relative)
        except NiniError as exc:
            if exc.code is ErrorCode.POLICY_VIOLATION:  # a link planted where the dataset should be
                raise DatasetUnreadable(f"dataset {name!r} cannot be read: {exc.message}") from None
            raise KeyError(f"no dataset {name!r}; available: {', '.join(self) or 'none'}") from None
        import pandas as pd

        try:
            with handle:
                return pd.read_parquet(handle)
        except Exception as exc:  # damaged, truncated or not Parquet at all: the data is at fault
            # the traceback's frames hold what was decoded so far: dropped before the message is
            # built, or building it can itself run out of memory (a bare MemoryError, no words)
            failure = exc.with_traceback(None)
            failure.__context__ = failure.__cause__ = None
        if out_of_memory(failure):  # a small file can decode to gigabytes: too large, not damaged
            raise DatasetTooLarge(dataset_too_large(name, _memory_limit())) from None
        raise DatasetUnreadable(
            unreadable_dataset(name, failure, relative, str(self._workspace.root / relative))
        ) from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._workspace.indexed_names())

    def __len__(self) -> int:
        return len(self._workspace.indexed_names())

    def __repr__(self) -> str:
        return f"datasets({', '.join(self) or 'none'})"


class DatasetUnreadable(ValueError):
    """A dataset's file that cannot be read as a table. Its name is what the host maps to
    INVALID_ARGUMENT, the code R's worker gives for the same file (r_sandbox/session.py)."""


class DatasetTooLarge(MemoryError):
    """A dataset that needs more memory than the kernel's limit. Its name is what the host maps to
    TOO_LARGE (``python_runner.prelude_failure``)."""


def _memory_limit() -> int | None:
    """The kernel's address-space limit in bytes (``confine``), None when it has none."""
    import resource

    limit = resource.getrlimit(resource.RLIMIT_AS)[0]
    return None if limit == resource.RLIM_INFINITY else limit


class _Json:
    """A value whose repr is its JSON text: user_expressions return reprs, so this one parses back."""

    def __init__(self, value: Any) -> None:
        self.text = json.dumps(value, allow_nan=False)

    def __repr__(self) -> str:
        return self.text


def prelude(root: str, dataset_name: str | None = None) -> None:
    """Set up a fresh kernel (``datasets``, quiet ``plt.show()``) and load ``df`` when asked."""
    # Under the Agg backend plt.show() does nothing and says so; the figures are collected anyway.
    warnings.filterwarnings("ignore", message=".*non-interactive, and thus cannot be shown")
    namespace = _user_ns()
    namespace["datasets"] = DatasetMapping(Workspace(Path(root)))
    if dataset_name is not None:
        namespace["df"] = namespace["datasets"][dataset_name]


def collect(
    root: str,
    label: str | None,
    save_as: str | None,
    succeeded: bool,
    max_figures: int = 200,
    save_file: str | None = None,
    pending_file: str | None = None,
    max_bytes: int | None = None,
) -> _Json:
    """After a run: save and close figures (at most ``max_figures``), read ``result`` and
    ``output_df`` (saved as ``save_as`` into the new version ``save_file`` the host chose), then
    remove both.

    On a failed run only the figures are saved (they were made before the error) and the two names
    are cleared, so that the next run never sees a stale ``result``. The report fits in
    ``max_bytes`` (``execution.output_max_mb``; it travels in the reply, whose size nini's process
    caps): past it the preview's rows, then ``result``, are left out with a warning.
    """
    workspace = Workspace(Path(root))
    namespace = _user_ns()
    result = namespace.pop("result", None)
    frame = namespace.pop("output_df", None)
    report: dict[str, Any] = {"warnings": []}
    report["artifacts"] = _save_figures(workspace, label, report["warnings"], max_figures, pending_file)
    if succeeded:
        report.update(result=_result(result, report["warnings"]))
        report.update(_frame(workspace, frame, save_as, report["warnings"], save_file))
    from nini.execution._output_side import dropped_notes

    report["warnings"] += dropped_notes()
    return _bounded(report, max_bytes)


def _bounded(report: dict[str, Any], max_bytes: int | None) -> _Json:
    """``report`` as JSON of at most about ``max_bytes // 2`` bytes (its text is escaped once more
    in the reply): a large preview's rows, then a large ``result``, are left out with a warning."""
    shown = _Json(report)
    limit = None if max_bytes is None else max_bytes // 2
    for key, words in (("dataframe_preview", "output_df's preview rows"), ("result", "result")):
        size = len(shown.text)
        if limit is None or size <= limit or report.get(key) is None:
            continue
        report["warnings"].append(
            f"{words} left out: the run's report took {size / 2**20:.1f} MiB, more than execution.output_max_mb allows"
        )
        report[key] = {**report[key], "rows": []} if key == "dataframe_preview" else None
        shown = _Json(report)
    return shown


def json_safe(value: Any) -> Any:
    """``value`` as plain JSON data: NaN/inf -> None, numpy -> Python, dates -> ISO text.

    Raises TypeError for anything else that JSON cannot hold.
    """
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if isinstance(value, (dt.datetime, dt.date, dt.time)):  # pandas.Timestamp is a datetime
        return value.isoformat()
    if type(value).__module__ == "numpy" and hasattr(value, "tolist"):  # numpy scalars and arrays
        return json_safe(value.tolist())
    raise TypeError(f"{type(value).__name__} is not JSON-serialisable")


class StemAllocator:
    """File names for artifacts: ``<label>``, ``<label>-2``... or ``<default>-<n>``; never one in use.

    ``names`` are the entries already in the folder (the host lists them through the workspace
    file system, the kernel too).
    """

    def __init__(self, names: Iterable[str]) -> None:
        self._used = {name.split(".", 1)[0] for name in names}

    def next(self, label: str | None, default: str) -> str:
        base = slugify(label) if label else ""
        for n in itertools.count(1):
            stem = (base if n == 1 else f"{base}-{n}") if base else f"{default}-{n}"
            if stem not in self._used:
                self._used.add(stem)
                return stem
        raise AssertionError("unreachable")  # pragma: no cover


def slugify(label: str) -> str:
    """A label as a file-name stem: lower case, letters (any script), digits, '_' and '-'."""
    return re.sub(r"[^\w]+", "-", label.lower()).strip("-_")[:60].strip("-_")


def too_many_figures(drawn: int, limit: int) -> str:
    """The warning of a run that drew more charts than it may save: Python's and R's words alike."""
    return (
        f"{drawn} charts were drawn; only the first {limit} were saved "
        "(execution.max_artifacts_per_run), the rest were closed unsaved"
    )


def _user_ns() -> dict[str, Any]:
    from IPython import get_ipython

    namespace: dict[str, Any] = get_ipython().user_ns
    return namespace


def announce(workspace: Workspace, pending_file: str | None, name: str) -> None:
    """List ``name`` in the run's ``pending_file`` before the file is put in place: if the run is
    never recorded (nini killed), the next sweep removes what it lists and no record names."""
    if pending_file:
        workspace.fs.append_bytes(pending_file, (name + "\n").encode())


def _save_figures(
    workspace: Workspace, label: str | None, warnings_: list[str], limit: int, pending_file: str | None
) -> list[dict[str, Any]]:
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is None or not plt.get_fignums():
        return []
    fs = workspace.fs
    try:
        fs.makedirs("artifacts")
        names = StemAllocator(fs.listdir("artifacts"))
    except NiniError as exc:  # a link planted as artifacts/: no chart is saved through it
        warnings_.append(f"charts were not saved: {exc.message}")
        plt.close("all")
        return []
    artifacts: list[dict[str, Any]] = []
    numbers = plt.get_fignums()
    if len(numbers) > limit:
        warnings_.append(too_many_figures(len(numbers), limit))
    for number in numbers[:limit]:
        figure = plt.figure(number)
        stem = names.next(label, "figure")
        for fmt in ("png", "svg"):
            name = f"{stem}.{fmt}"
            try:
                announce(workspace, pending_file, name)

                def save(handle: BinaryIO, fig: Any = figure, fmt: str = fmt) -> None:
                    fig.savefig(handle, format=fmt, bbox_inches="tight")

                fs.write_with(f"artifacts/{name}", save)
            except NiniError as exc:
                warnings_.append(f"figure {number} could not be saved as {fmt}: {exc.message}")
                continue
            except Exception as exc:  # a broken figure must not lose the run's other results
                warnings_.append(f"figure {number} could not be saved as {fmt}: {type(exc).__name__}: {exc}")
                continue
            artifacts.append({"name": name, "path": f"artifacts/{name}", "format": fmt, "kind": "chart"})
    plt.close("all")
    return artifacts


def _result(value: Any, warnings_: list[str]) -> Any:
    try:
        return json_safe(value)
    except (TypeError, ValueError, RecursionError) as exc:
        warnings_.append(f"result is not JSON-serialisable ({exc}); returned as its repr")
        return repr(value)


def _frame(
    workspace: Workspace, frame: Any, save_as: str | None, warnings_: list[str], save_file: str | None
) -> dict[str, Any]:
    pd = sys.modules.get("pandas")
    if frame is not None and pd is not None and isinstance(frame, pd.Series):
        frame = frame.to_frame()
    if frame is None or pd is None or not isinstance(frame, pd.DataFrame):
        if frame is not None:
            warnings_.append(f"output_df is a {type(frame).__name__}, not a pandas DataFrame; ignored")
        if save_as:
            return {"save_error": f"save_as={save_as!r} needs output_df to be a pandas DataFrame"}
        return {}
    frame = _drop_positional_index(frame, pd)
    out: dict[str, Any] = {"has_dataframe": True, "dataframe_preview": preview(frame)}
    if save_as:
        try:
            _save_parquet(workspace, frame, save_file or workspace.dataset_file(save_as))
            out["datasets_saved"] = [save_as]
        except NiniError as exc:
            out["save_error"] = f"output_df could not be saved as {save_as!r}: {exc.message}"
        except Exception as exc:
            out["save_error"] = f"output_df could not be saved as {save_as!r}: {type(exc).__name__}: {exc}"
    return out


def _drop_positional_index(frame: Any, pd: Any) -> Any:
    """Without the unnamed integer index that sorting or filtering leaves (positions, not names);
    a named index or one of labels (a groupby key, dates) means something and is kept."""
    index = frame.index
    if isinstance(index, pd.RangeIndex) or index.name is not None or index.nlevels != 1:
        return frame
    return frame.reset_index(drop=True) if pd.api.types.is_integer_dtype(index.dtype) else frame


def preview(frame: Any) -> dict[str, Any]:
    """``{columns, dtypes, rows, shape}``; a non-default index is shown as leading column(s)."""
    import pandas as pd

    shown = frame if isinstance(frame.index, pd.RangeIndex) else frame.reset_index()
    head = shown.head(PREVIEW_ROWS)
    return {
        "columns": [str(c) for c in head.columns],
        "dtypes": [str(t) for t in head.dtypes],
        "rows": [[_cell(v) for v in row] for row in head.itertuples(index=False, name=None)],
        "shape": [int(frame.shape[0]), int(frame.shape[1])],
    }


def _cell(value: Any) -> Any:
    import pandas as pd

    try:
        if pd.api.types.is_scalar(value) and pd.isna(value):  # NaN, None, NaT, pd.NA
            return None
        return json_safe(value)
    except (TypeError, ValueError):
        return str(value)


def _save_parquet(workspace: Workspace, frame: Any, relative: str) -> None:
    if not all(isinstance(c, str) for c in frame.columns):  # Parquet needs string column names
        frame = frame.copy()
        frame.columns = [str(c) for c in frame.columns]
    workspace.fs.write_with(relative, lambda handle: frame.to_parquet(handle))
