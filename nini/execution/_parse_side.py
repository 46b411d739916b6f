"""Runs in the limited child of ``parsing``: read one data file and answer with a small JSON reply.

A data file is hostile input: a 300 KB Parquet file can decode to gigabytes, an Excel file is a
zip. So nini's own process never parses one; it starts this module as a confined (and, where
the machine has it, sandboxed) child under the kernel's memory limit and reads only its reply.
The child imports its readers, then waits for one job on ``--channel``: a JSON request with the
descriptors nini opened (the file, the reply, the output), so it opens nothing by name, and inside
the sandbox it has nothing else to open. It answers that job, says "done" on the channel and exits.

Jobs: ``load`` (a CSV, TSV, JSON, Parquet or Excel file becomes Parquet on the output; the
reply is its columns, dtypes and shape) and ``describe`` (a dataset's Parquet file; the reply is
what ``describe_dataset`` returns). The reply is ``{"ok": true, "data": ...}`` or ``{"ok": false,
"error": {"code", "message"?}}``; ``TOO_LARGE`` (out of memory) carries no message: nini words it,
naming the limit.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
from typing import Any, BinaryIO, Literal

from nini.errors import ErrorCode, error_dict
from nini.execution._csv_side import UnknownEncoding, detect_encoding, read_table
from nini.execution.workspace import out_of_memory, unreadable_dataset
from nini.fsutil import no_space, out_of_space

# file suffix -> pandas reader (load_dataset's formats); text tables go through ``_csv_side``
READERS = {
    ".csv": "read_csv",
    ".tsv": "read_csv",
    ".txt": "read_csv",
    ".parquet": "read_parquet",
    ".json": "read_json",
    ".xlsx": "read_excel",
    ".xls": "read_excel",
}
TEXT_TABLES = frozenset({".csv", ".tsv", ".txt"})  # encoding and separator detected, or given
# workbook suffix -> (pandas engine, how to install it): openpyxl is nini's ``excel`` extra
EXCEL: dict[str, tuple[Literal["openpyxl", "xlrd"], str]] = {
    ".xlsx": ("openpyxl", "pip install 'nini[excel]'"),
    ".xls": ("xlrd", "pip install xlrd"),
}
EXCEL_WORDS = {
    "zh": {
        "missing": "读取 {suffix} 文件需要 {engine}，但它没有安装：{install}",
        "sheet": "{name} 中没有工作表 {sheet}；它的工作表：{sheets}",
    },
    "en": {
        "missing": "reading {suffix} files needs {engine}, which is not installed: {install}",
        "sheet": "{name} has no sheet {sheet}; its sheets: {sheets}",
    },
}
TEXT_LIMIT = 500  # characters of one value in a description: a 100 MB cell must not make the reply 100 MB
MAX_HEAD_ROWS = 50


class Unreadable(Exception):
    """The file is not what its name says (or a reader it needs is missing): INVALID_ARGUMENT."""


def load(
    source: BinaryIO, output: BinaryIO, name: str, suffix: str, options: dict[str, Any] | None = None
) -> dict[str, Any]:
    """``source`` read by its suffix's reader, written to ``output`` as Parquet; its shape and how
    it was read (``encoding``/``sep`` of a text table, ``sheet`` of a workbook; None where they do
    not apply). ``options``: the caller's ``encoding``, ``sep``, ``sheet`` (None: detect, first)
    and the ``language`` of messages."""
    import pandas as pd

    options = options or {}
    read: dict[str, Any] = {"encoding": None, "encoding_detected": False, "sep": None, "sep_detected": False}
    try:
        if suffix in TEXT_TABLES:
            frame, how = read_table(
                source,
                name,
                suffix,
                encoding=options.get("encoding"),
                sep=options.get("sep"),
                language=str(options.get("language", "en")),
            )
            read.update(how)
        elif suffix in EXCEL:
            frame, sheet = _read_excel(source, name, suffix, options.get("sheet"), str(options.get("language", "en")))
            read.update(sheet)
        else:
            frame = getattr(pd, READERS[suffix])(source)
    except UnknownEncoding as exc:
        raise Unreadable(str(exc)) from None
    except ImportError as exc:
        raise Unreadable(f"reading {suffix} needs a package that is missing: {exc}") from None
    except (ValueError, OSError, pd.errors.ParserError) as exc:
        if out_of_memory(exc):
            raise MemoryError(str(exc)) from None
        raise Unreadable(f"{name} could not be read: {exc}") from None
    frame.columns = [str(c) for c in frame.columns]  # Parquet needs string column names
    frame.to_parquet(output, index=False)
    output.flush()
    return {**shape_of(frame), **read}


def _read_excel(
    source: BinaryIO, name: str, suffix: str, sheet: str | int | None, language: str
) -> tuple[Any, dict[str, Any]]:
    """The frame of one sheet of a workbook (``sheet``: a name or a 0-based index; None: the
    first) and ``{sheet, sheets}``: the one read and all there are. Without its reader package
    (openpyxl, nini's ``excel`` extra; xlrd for .xls): Unreadable saying what to install."""
    import pandas as pd

    engine, install = EXCEL[suffix]
    words = EXCEL_WORDS.get(language, EXCEL_WORDS["en"])
    try:
        book = pd.ExcelFile(source, engine=engine)
    except ImportError:
        raise Unreadable(words["missing"].format(suffix=suffix, engine=engine, install=install)) from None
    with book:
        sheets = [str(s) for s in book.sheet_names]
        if isinstance(sheet, str) and sheet not in sheets and sheet.isdigit():
            sheet = int(sheet)  # --sheet 1: the second sheet, unless one is named "1"
        chosen = sheets[sheet] if isinstance(sheet, int) and 0 <= sheet < len(sheets) else sheet
        if chosen is None and sheets:
            chosen = sheets[0]
        if chosen not in sheets:
            raise Unreadable(
                words["sheet"].format(name=f"'{name}'", sheet=repr(sheet), sheets=", ".join(sheets) or "-")
            )
        frame = book.parse(sheet_name=chosen)
    return frame, {"sheet": chosen, "sheets": sheets}


def describe(source: BinaryIO, name: str, rows: int) -> dict[str, Any]:
    """The description ``describe_dataset`` returns of the Parquet file ``source`` (dataset ``name``)."""
    import pandas as pd

    try:
        frame = pd.read_parquet(source)
    except MemoryError:
        raise
    except Exception as exc:  # damaged or not Parquet: the same words as a run reading it
        if out_of_memory(exc):
            raise MemoryError(str(exc)) from None
        raise Unreadable(unreadable_dataset(name, exc)) from None
    stats = frame.describe(include="all").transpose()
    head = frame.head(max(0, min(rows, MAX_HEAD_ROWS)))
    return {
        "name": name,
        "shape": [int(frame.shape[0]), int(frame.shape[1])],
        "dtypes": {str(c): str(t) for c, t in frame.dtypes.items()},
        "missing": {str(c): int(n) for c, n in frame.isna().sum().items() if n},
        "summary": {str(c): _record(row.to_dict(), drop_missing=True) for c, row in stats.iterrows()},
        "head": [_record(record) for record in head.to_dict(orient="records")],
    }


def shape_of(frame: Any) -> dict[str, Any]:
    return {
        "columns": [str(c) for c in frame.columns],
        "dtypes": {str(c): str(t) for c, t in frame.dtypes.items()},
        "shape": [int(frame.shape[0]), int(frame.shape[1])],
    }


def _record(record: dict[Any, Any], *, drop_missing: bool = False) -> dict[str, Any]:
    plain = {_text(str(k)): _plain(v) for k, v in record.items()}
    return {k: v for k, v in plain.items() if v is not None} if drop_missing else plain


def _plain(value: Any) -> Any:
    """A JSON-friendly scalar: numpy numbers become Python ones, NaN/NaT None, the rest text."""
    item = getattr(value, "item", None)
    if callable(item) and not isinstance(value, str):
        try:
            value = item()
        except (TypeError, ValueError):
            pass
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, str):
        return _text(value)
    if isinstance(value, float):
        return None if value != value or value in (float("inf"), float("-inf")) else value
    return None if str(value) in ("NaT", "nan", "<NA>") else _text(str(value))


def _text(value: str) -> str:
    return value if len(value) <= TEXT_LIMIT else value[:TEXT_LIMIT] + "…"


def run(request: dict[str, Any], fds: list[int]) -> dict[str, Any]:
    """The reply of one job on the descriptors ``fds`` (input, reply, output): the data, or the error."""
    name = str(request.get("name", "the file"))
    try:
        with os.fdopen(fds[0], "rb") as source:
            if request.get("job") == "load":
                with os.fdopen(fds[2], "wb") as output:
                    data = load(source, output, name, str(request.get("suffix")), request.get("options"))
            else:
                data = describe(source, name, int(request.get("rows", 5)))
        return {"ok": True, "data": data}
    except MemoryError:  # nini words it, naming its memory limit
        return {"ok": False, "error": error_dict(ErrorCode.TOO_LARGE, "out of memory")}
    except Unreadable as exc:
        return {"ok": False, "error": error_dict(ErrorCode.INVALID_ARGUMENT, str(exc))}
    except Exception as exc:  # what a reader raised that no rule above knows: still the file's doing
        if out_of_space(exc):  # writing the dataset's Parquet met a full disk: not the file's doing
            return {"ok": False, "error": no_space(f"the dataset's file of {name} in the session workspace").to_dict()}
        code = ErrorCode.TOO_LARGE if out_of_memory(exc) else ErrorCode.INVALID_ARGUMENT
        return {"ok": False, "error": error_dict(code, f"{name} could not be read: {type(exc).__name__}: {exc}")}


def warm_up() -> None:
    """Run both jobs on a small sample: what pandas imports and sets up on first use (its CSV and
    Parquet engines, ``describe``) is done before a job comes, which a waiting child then answers in
    milliseconds."""
    import io

    sample, parquet = io.BytesIO(b"n,x,s,d\n1,1.5,a,2024-01-01\n2,,b,2024-01-02\n"), io.BytesIO()
    load(sample, parquet, "sample", ".csv")
    detect_encoding("caf\u00e9,\u57ce\u5e02\n".encode("gb18030"))  # charset-normalizer, for a file not in UTF-8
    parquet.seek(0)
    describe(parquet, "sample", MAX_HEAD_ROWS)


def main(argv: list[str]) -> None:
    """Import the readers, wait for the one job on the channel, answer it, exit."""
    parser = argparse.ArgumentParser(prog="python -m nini.execution._parse_side")
    parser.add_argument("--channel", type=int, required=True, help="the socket the job and its descriptors come on")
    channel = socket.socket(fileno=parser.parse_args(argv).channel)
    ready: dict[str, Any] | None = None
    try:  # while nini has no job for this child yet: the next job does not wait for the imports
        warm_up()
    except Exception as exc:  # the limit leaves no room for the readers themselves; else the job says what
        if out_of_memory(exc):
            ready = {"ok": False, "error": error_dict(ErrorCode.TOO_LARGE, "out of memory")}
    message, fds, _flags, _address = socket.recv_fds(channel, 65536, 3)
    if not message:  # nini closed the channel: no job for this one
        return
    request = json.loads(message)
    with os.fdopen(fds[1], "w", encoding="utf-8") as reply:  # opened first: no memory may be left later
        reply.write(json.dumps(ready or run(request, fds), allow_nan=False))
    channel.send(b"done")  # nini reads the reply now, without waiting for this process to end
    os._exit(0)  # a normal exit would first tear pandas down (a quarter second), for nothing


if __name__ == "__main__":
    main(sys.argv[1:])
