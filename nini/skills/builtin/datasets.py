"""The ``load_dataset`` skill: a data file in the workspace becomes a named session dataset.

A text table's encoding and separator are detected in the reader (``nini.execution._csv_side``)
unless given; the result says which were used and whether they were detected, and so do the
step's record and the CLI's ``dataset NAME: ...`` line (``loaded_line``). The dataset is stored
as Parquet, so nothing reads the source file again: what one load decided holds everywhere.
"""

from __future__ import annotations

import codecs
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any, BinaryIO

from nini.errors import ErrorCode, NiniError
from nini.execution._csv_side import detect_encoding
from nini.execution._parse_side import READERS
from nini.execution.runtime_dirs import owner_token
from nini.execution.workspace import check_dataset_name
from nini.skills.function import skill
from nini.skills.output import ToolOutput

if TYPE_CHECKING:
    from nini.session import Session

SEPARATOR_ALIASES = {"tab": "\t", "\\t": "\t"}
TEXT_SAMPLE = 64 * 1024  # bytes of a file read_file detects the encoding of: it shows at most 20,000 characters
WORDS = {
    "zh": {
        "label": "数据集 ",
        "line": "{name}：{rows} 行，{columns} 列",
        "encoding": "编码 {}，{}",
        "sep": "分隔符 {}，{}",
        "detected": "自动识别",
        "given": "指定",
        "tab": "制表符",
        "decimal": "小数点为逗号",
        "sheet": "工作表 '{}'（第 {} 个，共 {} 个）",
        "open": "（",
        "join": "；",
        "close": "）",
        "unknown_encoding": "未知的编码 {}（例如 utf-8、gbk、gb18030、latin-1、cp1252、utf-16）",
        "bad_sep": "分隔符须为一个字符，例如 ',' ';' '|' 或 'tab'，而不是 {}",
    },
    "en": {
        "label": "dataset ",
        "line": "{name}: {rows} rows, {columns} columns",
        "encoding": "encoding {}, {}",
        "sep": "separator {}, {}",
        "detected": "detected",
        "given": "given",
        "tab": "tab",
        "decimal": "decimal comma",
        "sheet": "sheet '{}' ({} of {})",
        "open": " (",
        "join": "; ",
        "close": ")",
        "unknown_encoding": "unknown encoding {} (e.g. utf-8, gbk, gb18030, latin-1, cp1252, utf-16)",
        "bad_sep": "the separator must be one character such as ',' ';' '|' or 'tab', not {}",
    },
}


@skill("load_dataset", category="data")
def load_dataset(
    session: Session,
    path: str,
    name: str | None = None,
    encoding: str | None = None,
    sep: str | None = None,
    sheet: str | int | None = None,
) -> ToolOutput:
    """Load a data file from the session workspace as a named dataset (CSV, TSV, Parquet, JSON, Excel).

    The dataset is then available to run_code as `datasets[name]` (or `df` with dataset_name).
    A CSV's encoding and separator are detected; the result says which were used.

    Args:
        path: The file, relative to the session workspace (e.g. uploads/sales.csv).
        name: Dataset name; defaults to the file name without its extension.
        encoding: A text file's encoding (e.g. gbk, latin-1, utf-16); default: detected.
        sep: A text file's separator, one character (e.g. ';', '|', 'tab'); default: detected.
        sheet: An Excel file's sheet, by name or 0-based index; default: the first.
    """
    workspace = session.workspace
    source = PurePosixPath(workspace.relative(path))
    dataset = check_dataset_name(name or _default_name(source))
    suffix = source.suffix.lower()
    if suffix not in READERS:
        raise NiniError(
            ErrorCode.INVALID_ARGUMENT,
            f"cannot load {source.suffix or 'extensionless'} files; supported: {', '.join(sorted(READERS))}",
        )
    words = WORDS.get(session.settings.ui.current_language, WORDS["en"])
    options = {"encoding": check_encoding(encoding, words), "sep": check_separator(sep, words), "sheet": sheet}
    readers = session.readers
    with workspace.fs.reader(source) as handle:  # NOT_FOUND, or POLICY_VIOLATION for a link
        session.dataset_files()  # sweeps what killed saves left, before this one writes
        target = workspace.new_dataset_file(
            dataset, owner_token()
        )  # a new version: the record's commit makes it current
        described: dict[str, Any] = {}

        def convert(out: BinaryIO) -> None:  # read and written by a limited child: nini.execution.parsing
            described.update(readers.read("load", handle, name=source.name, output=out, suffix=suffix, options=options))

        workspace.fs.write_with(target, convert)
    row = {"name": dataset, "path": target, "rows": described["shape"][0], "columns": described["columns"]}
    result = {"name": dataset, **described}
    return ToolOutput(result=result, datasets=[row], summary=f"loaded {path} as {loaded_line(result, 'en')}")


def text_encoding(session: Session, relative: str) -> str | None:
    """The encoding the workspace text file ``relative`` was read with by the session's latest
    successful ``load_dataset`` of it (from the record: a GBK file given ``encoding`` once is read
    as GBK by ``read_file`` too), else detected from its first ``TEXT_SAMPLE`` bytes; None when no
    encoding fits (binary)."""
    for call in session.store.tool_calls_named(session.id, "load_dataset", newest_first=True):
        arguments, result = call.get("arguments") or {}, call.get("result") or {}
        if call["status"] != "succeeded" or not result.get("encoding"):
            continue
        try:
            if session.workspace.relative(str(arguments.get("path", ""))) == relative:
                return str(result["encoding"])
        except NiniError:  # a path the record holds that is no longer a workspace path
            continue
    with session.workspace.fs.reader(relative) as handle:
        sample = handle.read(TEXT_SAMPLE)
    return detect_encoding(sample, complete=len(sample) < TEXT_SAMPLE)


def check_encoding(encoding: str | None, words: dict[str, str]) -> str | None:
    """The codec name of ``encoding`` (``GBK`` -> ``gbk``, ``latin-1`` -> ``iso8859-1``); None
    stays None (detect); INVALID_ARGUMENT for a name Python does not know."""
    if encoding is None or not encoding.strip():
        return None
    try:
        return codecs.lookup(encoding.strip()).name
    except LookupError:
        raise NiniError(ErrorCode.INVALID_ARGUMENT, words["unknown_encoding"].format(repr(encoding[:40]))) from None


def check_separator(sep: str | None, words: dict[str, str]) -> str | None:
    """One separator character (``tab`` and a typed ``\\t`` mean a tab); None stays None (detect);
    INVALID_ARGUMENT for anything else."""
    if sep is None or sep == "":
        return None
    sep = SEPARATOR_ALIASES.get(sep.lower(), sep)
    if len(sep) != 1 or sep in '"\r\n' or sep.isalnum():
        raise NiniError(ErrorCode.INVALID_ARGUMENT, words["bad_sep"].format(repr(sep[:20])))
    return sep


def loaded_line(result: dict[str, Any], language: str, *, labelled: bool = False) -> str:
    """``sales: 120 rows, 5 columns (encoding gbk, detected; separator ';', detected)``: a load's
    result in a line, saying how the file was read (what was detected, what given, which sheet);
    ``labelled``: starting ``dataset`` (the CLI's line for each ``--data`` file)."""
    words = WORDS.get(language, WORDS["en"])
    rows, columns = result["shape"]
    how = []
    if result.get("encoding"):
        how.append(
            words["encoding"].format(
                result["encoding"], words["detected" if result.get("encoding_detected") else "given"]
            )
        )
    if result.get("sep"):
        shown = words["tab"] if result["sep"] == "\t" else repr(result["sep"])
        how.append(words["sep"].format(shown, words["detected" if result.get("sep_detected") else "given"]))
    if result.get("decimal") == ",":
        how.append(words["decimal"])
    if result.get("sheet") is not None:
        sheets = result.get("sheets") or [result["sheet"]]
        place = sheets.index(result["sheet"]) + 1 if result["sheet"] in sheets else 1
        how.append(words["sheet"].format(result["sheet"], place, len(sheets)))
    line = (words["label"] if labelled else "") + words["line"].format(name=result["name"], rows=rows, columns=columns)
    return line + (words["open"] + words["join"].join(how) + words["close"] if how else "")


def _default_name(source: PurePosixPath) -> str:
    stem = "".join(ch if ch.isalnum() or ch in "_.-" else "_" for ch in source.stem).lstrip(".-") or "data"
    return stem[:64]
