"""Read-only skills: look at the session's datasets and files without changing anything.

They carry ``read_only=True`` in their metadata; task:explore offers only skills marked so,
which is what makes it read-only: no tool it has can write a file or a dataset.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from nini.errors import ErrorCode, NiniError
from nini.execution.workspace import unreadable_dataset
from nini.skills.function import skill

if TYPE_CHECKING:
    from nini.session import Session

MAX_READ_CHARS = 20_000


@skill("list_datasets", category="data", read_only=True)
def list_datasets(session: Session) -> list[dict[str, Any]]:
    """List the session's datasets: name, rows and columns."""
    return [
        {"name": row["name"], "rows": row.get("rows"), "columns": row.get("columns")}
        for row in session.store.list_datasets(session.id)
    ]


@skill("describe_dataset", category="data", read_only=True)
def describe_dataset(session: Session, name: str, rows: int = 5) -> dict[str, Any]:
    """Describe one session dataset: dtypes, missing values, summary statistics and its first rows.

    Args:
        name: The dataset's name (see list_datasets).
        rows: How many leading rows to include (0-50).
    """
    import pandas as pd

    relative = session.dataset_file(name)
    with session.workspace.fs.reader(relative) as handle:
        try:
            frame = pd.read_parquet(handle)
        except Exception as exc:  # damaged or not Parquet: the same error as a run reading it
            raise NiniError(ErrorCode.INVALID_ARGUMENT, unreadable_dataset(name, exc, relative)) from None
    stats = frame.describe(include="all").transpose()
    head = frame.head(max(0, min(rows, 50)))
    return {
        "name": name,
        "shape": [int(frame.shape[0]), int(frame.shape[1])],
        "dtypes": {str(c): str(t) for c, t in frame.dtypes.items()},
        "missing": {str(c): int(n) for c, n in frame.isna().sum().items() if n},
        "summary": {str(c): _record(row.to_dict(), drop_missing=True) for c, row in stats.iterrows()},
        "head": [_record(record) for record in head.to_dict(orient="records")],
    }


@skill("read_file", category="data", read_only=True)
def read_file(session: Session, path: str, max_chars: int = 8000) -> dict[str, Any]:
    """Read a text file of the session workspace (outputs, logs, uploaded text).

    Args:
        path: The file, relative to the session workspace.
        max_chars: Read at most this many characters (up to 20000).
    """
    fs = session.workspace.fs
    relative = session.workspace.relative(path)
    limit = max(1, min(max_chars, MAX_READ_CHARS))
    text, truncated = fs.read_text(relative, max_chars=limit)  # refuses links and special files
    return {"path": path, "text": text, "truncated": truncated, "size_bytes": fs.file_size(relative)}


def _record(record: dict[Any, Any], *, drop_missing: bool = False) -> dict[str, Any]:
    plain = {str(k): _plain(v) for k, v in record.items()}
    return {k: v for k, v in plain.items() if v is not None} if drop_missing else plain


def _plain(value: Any) -> Any:
    """A JSON-friendly scalar: numpy numbers become Python ones, NaN/NaT None, the rest text."""
    item = getattr(value, "item", None)
    if callable(item) and not isinstance(value, str):
        try:
            value = item()
        except (TypeError, ValueError):
            pass
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, float):
        return None if value != value or value in (float("inf"), float("-inf")) else value
    return None if str(value) in ("NaT", "nan", "<NA>") else str(value)
