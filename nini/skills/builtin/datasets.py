"""The ``load_dataset`` skill: a data file in the workspace becomes a named session dataset."""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any, BinaryIO

from nini.errors import ErrorCode, NiniError
from nini.execution._parse_side import READERS
from nini.execution.runtime_dirs import owner_token
from nini.execution.workspace import check_dataset_name
from nini.skills.function import skill
from nini.skills.output import ToolOutput

if TYPE_CHECKING:
    from nini.session import Session


@skill("load_dataset", category="data")
def load_dataset(session: Session, path: str, name: str | None = None) -> ToolOutput:
    """Load a data file from the session workspace as a named dataset (CSV, TSV, Parquet, JSON, Excel).

    The dataset is then available to run_code as `datasets[name]` (or `df` with dataset_name).

    Args:
        path: The file, relative to the session workspace (e.g. uploads/sales.csv).
        name: Dataset name; defaults to the file name without its extension.
    """
    workspace = session.workspace
    source = PurePosixPath(workspace.relative(path))
    dataset = check_dataset_name(name or _default_name(source))
    suffix = source.suffix.lower()
    if suffix not in READERS:
        raise NiniError(ErrorCode.INVALID_ARGUMENT, f"cannot load {source.suffix or 'extensionless'} files; "
                        f"supported: {', '.join(sorted(READERS))}")
    readers = session.runtime.readers
    with workspace.fs.reader(source) as handle:  # NOT_FOUND, or POLICY_VIOLATION for a link
        session.dataset_files()  # sweeps what killed saves left, before this one writes
        target = workspace.new_dataset_file(dataset, owner_token())  # a new version: the record's commit makes it current
        described: dict[str, Any] = {}

        def convert(out: BinaryIO) -> None:  # read and written by a limited child: nini.execution.parsing
            described.update(readers.read("load", handle, name=source.name, output=out, suffix=suffix))

        workspace.fs.write_with(target, convert)
    row = {"name": dataset, "path": target, "rows": described["shape"][0], "columns": described["columns"]}
    return ToolOutput(result={"name": dataset, **described}, datasets=[row],
                      summary=f"loaded {path} as {dataset} ({described['shape'][0]} rows)")


def _default_name(source: PurePosixPath) -> str:
    stem = "".join(ch if ch.isalnum() or ch in "_.-" else "_" for ch in source.stem).lstrip(".-") or "data"
    return stem[:64]
