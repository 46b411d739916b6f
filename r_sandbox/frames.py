"""Data frames between R and pandas (rpy2's pandas2ri plus its gaps), the preview, and Parquet files.

Datasets are Parquet files that Python's run_code reads and writes too, so what R saves must load
in pandas with the types a pandas user expects, and the other way round. rpy2's converter gets most
of it right; the fixes below cover what it does not (R's NA sentinels, Date, 64-bit integers,
time zones). pandas and rpy2's converter are imported on first use: a run without data frames does
not pay for them.
"""

from __future__ import annotations

import datetime as dt
import math
import os
import re
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

PREVIEW_ROWS = 20
_DATASET_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$")  # as nini.execution.workspace
_INT32 = (-(2**31) + 1, 2**31 - 1)  # -2**31 is R's NA_integer_


def check_dataset_name(name: str) -> str | None:
    """Why ``name`` cannot be a dataset name (it becomes ``<name>.parquet``), None when it can."""
    if not isinstance(name, str) or not _DATASET_NAME.match(name) or name.endswith(".parquet"):
        return f"invalid dataset name {name!r}: use 1-64 letters, digits, '_', '.' or '-', not starting with '.' or '-'"
    return None


def to_pandas(frame: Any, automatic_row_names: bool) -> Any:
    """An R data.frame (plain, see worker_r.R ``plain_frame``) as a pandas DataFrame."""
    import pandas as pd
    import rpy2.rinterface as ri
    import rpy2.robjects as ro
    from rpy2.robjects import pandas2ri
    from rpy2.robjects.conversion import localconverter

    with localconverter(ro.default_converter + pandas2ri.converter):
        result = ro.conversion.rpy2py(frame)
    for position, column in enumerate(frame):  # by position: R allows duplicate column names
        values = result.iloc[:, position]
        classes = set(column.rclass)
        if "Date" in classes:  # rpy2 leaves days since 1970 as floats
            result.isetitem(position, pd.to_datetime(values, unit="D"))
        elif column.typeof == ri.RTYPES.INTSXP and "factor" not in classes:
            missing = values.to_numpy() == ri.NA_Integer
            if missing.any():
                result.isetitem(position, pd.arrays.IntegerArray(values.to_numpy().astype("int32"), missing))
        elif column.typeof in (ri.RTYPES.LGLSXP, ri.RTYPES.STRSXP):
            na = ri.NA_Logical if column.typeof == ri.RTYPES.LGLSXP else ri.NA_Character
            cells = [None if v is na else v for v in values]
            kind: Any  # a dtype name, bool or pandas' own text dtype
            if column.typeof == ri.RTYPES.LGLSXP:
                kind = "boolean" if None in cells else bool
            else:  # pandas' default for text (str in pandas 3, object before); inferred, as from a list
                kind = pd.Series(["text"]).dtype
            result.isetitem(position, pd.Series(cells, index=result.index, dtype=kind))
    if automatic_row_names:
        result = result.reset_index(drop=True)
    return result


def to_r(frame: Any) -> tuple[Any, bool, list[str]]:
    """A pandas DataFrame as an R data.frame, for worker_r.R ``from_pandas`` to finish: the frame,
    whether R should give it automatic row names, and the columns whose times are UTC."""
    import pandas as pd
    import rpy2.robjects as ro
    from rpy2.robjects import pandas2ri
    from rpy2.robjects.conversion import localconverter

    automatic = isinstance(frame.index, pd.RangeIndex)
    if not automatic and (frame.index.name is not None or not frame.index.is_unique):
        frame = frame.reset_index()  # an index that means something becomes a column
    frame = frame.copy(deep=False)
    frame.columns = [str(c) for c in frame.columns]
    utc: list[str] = []
    for name in frame.columns:
        column = frame[name]
        if isinstance(column.dtype, pd.DatetimeTZDtype):  # rpy2 3.5 expects pytz zones
            frame[name] = column.dt.tz_convert("UTC").dt.tz_localize(None)
            utc.append(name)
        elif pd.api.types.is_integer_dtype(column.dtype) and len(column):
            low, high = column.min(), column.max()
            if not (pd.isna(low) or _INT32[0] <= low and high <= _INT32[1]):
                frame[name] = column.astype("float64")  # R integers are 32-bit
    with warnings.catch_warnings(), localconverter(ro.default_converter + pandas2ri.converter):
        warnings.simplefilter("ignore")  # rpy2 falls back to text for odd columns, and says so
        converted = ro.conversion.py2rpy(frame)
    return converted, automatic, utc


def preview(frame: Any) -> dict[str, Any]:
    """``{columns, dtypes, rows, shape}`` by the rules of Python's run_code: the first 20 rows, a
    meaningful index (R row names) as a leading column, cells as JSON values (missing -> None)."""
    import pandas as pd

    head = (frame if isinstance(frame.index, pd.RangeIndex) else frame.reset_index()).head(PREVIEW_ROWS)
    rows = [[_cell(value) for value in row] for row in head.itertuples(index=False, name=None)]
    columns, dtypes = [str(c) for c in head.columns], [str(t) for t in head.dtypes]
    return {"columns": columns, "dtypes": dtypes, "rows": rows, "shape": [int(n) for n in frame.shape]}


def _cell(value: Any) -> Any:
    """One preview cell as JSON: numpy scalars as Python values, times as ISO text, NaN/NA/NaT as None."""
    import pandas as pd

    if pd.api.types.is_scalar(value) and pd.isna(value):
        return None
    if isinstance(value, (dt.datetime, dt.date, dt.time)):  # pandas.Timestamp is a datetime
        return value.isoformat()
    value = value.item() if type(value).__module__ == "numpy" and hasattr(value, "item") else value
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value if value is None or isinstance(value, (bool, int, float, str)) else str(value)


def save_parquet(frame: Any, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, lambda temp: frame.to_parquet(temp))


def write_atomic(path: Path, write: Callable[[str], None]) -> None:
    """``write(temp_path)`` then rename onto ``path``: a crash never leaves half a file.

    One worker writes one file at a time, so the temp name only needs to differ from other processes'.
    """
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        write(str(temp))
        os.replace(temp, path)
    finally:
        temp.unlink(missing_ok=True)
