"""Read-only skills: look at the session's datasets and files without changing anything.

They carry ``read_only=True`` in their metadata; task:explore offers only skills marked so,
which is what makes it read-only: no tool it has can write a file or a dataset.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from nini.skills.builtin.datasets import text_encoding
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
    relative = session.dataset_file(name)
    readers = session.readers
    with session.workspace.fs.reader(relative) as handle:  # read by a limited child: nini.execution.parsing
        return readers.read("describe", handle, name=name, rows=rows)


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
    encoding = text_encoding(session, relative) or "utf-8"  # as load_dataset read it, else detected
    text, truncated = fs.read_text(relative, max_chars=limit, encoding=encoding)  # refuses links and special files
    return {
        "path": path,
        "text": text,
        "truncated": truncated,
        "size_bytes": fs.file_size(relative),
        "encoding": encoding,
    }
