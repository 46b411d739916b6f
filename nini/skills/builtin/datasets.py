"""The ``load_dataset`` skill: a data file in the workspace becomes a named session dataset."""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any, BinaryIO

from nini.errors import ErrorCode, NiniError
from nini.execution.runtime_dirs import owner_token
from nini.execution.workspace import check_dataset_name
from nini.skills.function import skill
from nini.skills.output import ToolOutput

if TYPE_CHECKING:
    import pandas as pd

    from nini.session import Session

READERS = {".csv": "read_csv", ".tsv": "read_csv", ".txt": "read_csv", ".parquet": "read_parquet",
           ".json": "read_json", ".xlsx": "read_excel", ".xls": "read_excel"}


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
    with workspace.fs.reader(source) as handle:  # NOT_FOUND, or POLICY_VIOLATION for a link
        frame = _read(handle, source)
    session.dataset_files()  # sweeps what killed saves left, before this one writes
    target = workspace.new_dataset_file(dataset, owner_token())  # a new version: the record's commit makes it current
    workspace.fs.write_with(target, lambda out: frame.to_parquet(out, index=False))
    described = describe(frame)
    row = {"name": dataset, "path": target, "rows": described["shape"][0], "columns": described["columns"]}
    return ToolOutput(result={"name": dataset, **described}, datasets=[row],
                      summary=f"loaded {path} as {dataset} ({described['shape'][0]} rows)")


def describe(frame: pd.DataFrame) -> dict[str, Any]:
    return {"columns": [str(c) for c in frame.columns], "dtypes": {str(c): str(t) for c, t in frame.dtypes.items()},
            "shape": [int(frame.shape[0]), int(frame.shape[1])]}


def _default_name(source: PurePosixPath) -> str:
    stem = "".join(ch if ch.isalnum() or ch in "_.-" else "_" for ch in source.stem).lstrip(".-") or "data"
    return stem[:64]


def _read(handle: BinaryIO, source: PurePosixPath) -> pd.DataFrame:
    import pandas as pd

    reader = READERS.get(source.suffix.lower())
    if reader is None:
        raise NiniError(ErrorCode.INVALID_ARGUMENT, f"cannot load {source.suffix or 'extensionless'} files; "
                        f"supported: {', '.join(sorted(READERS))}")
    options: dict[str, Any] = {"sep": "\t"} if source.suffix.lower() == ".tsv" else {}
    try:
        frame = getattr(pd, reader)(handle, **options)
    except ImportError as exc:
        raise NiniError(ErrorCode.INVALID_ARGUMENT, f"reading {source.suffix} needs a package that is missing: {exc}") from None
    except (ValueError, OSError, pd.errors.ParserError) as exc:
        raise NiniError(ErrorCode.INVALID_ARGUMENT, f"{source.name} could not be read: {exc}") from None
    frame.columns = [str(c) for c in frame.columns]  # Parquet needs string column names
    return frame
