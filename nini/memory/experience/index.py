"""A library's INDEX.md: read it, check it, write it back, and find its documents safely.

The file is the library's single source of truth, edited by people as well as by nini. So a read
never changes it: ``read_index`` returns the rows it could read and a list of problems (wrong
header, a value outside its vocabulary, a File that is missing, a link, or outside the library).
Matching uses the good rows and logs the problems; a deposit refuses a library with problems
(``nini experience validate`` says what to fix) instead of rewriting a hand-edited file.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

from nini.errors import ErrorCode, NiniError
from nini.memory.experience.model import COLUMNS, ID_PATTERN, SCOPES, STATUSES, STRENGTHS, TYPES, IndexRow

INDEX_NAME = "INDEX.md"
PREAMBLE = {
    "team": "# Team experience\n\nThe single source of truth of this library: one row per experience; "
    "`nini experience validate` checks it.\n",
    "project": "# Project experience\n\nThe single source of truth of this library: one row per experience; "
    "`nini experience validate` checks it.\n",
}
_SPLIT = re.compile(r"(?<!\\)\|")
MAX_DOCUMENT_BYTES = 1_000_000


@dataclass
class ParsedIndex:
    rows: list[IndexRow] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    preamble: str = ""  # the text above the table, kept when nini writes the file

    def active(self) -> list[IndexRow]:
        return [row for row in self.rows if row.status == "active"]

    def by_id(self, entry_id: str) -> IndexRow | None:
        return next((row for row in self.rows if row.id == entry_id), None)


@dataclass(frozen=True)
class Library:
    """One experience library: team (``standards/``, ``knowledge/``) or project (flat)."""

    level: str
    root: Path

    @property
    def index_path(self) -> Path:
        return self.root / INDEX_NAME

    def folder_for(self, type_: str) -> str:
        """Where a new document of this type goes, relative to the root ("" for the project's flat folder)."""
        if self.level == "team":
            return "standards" if type_ == "standard" else "knowledge"
        return ""

    def read(self, *, check_files: bool = True) -> ParsedIndex:
        """The INDEX (empty when the file does not exist yet) with its problems, files checked too
        unless ``check_files`` is False (matching: a missing file shows when it is read)."""
        try:
            text = read_regular_file(self.root, INDEX_NAME)
        except FileNotFoundError:
            return ParsedIndex()
        except NiniError as exc:
            return ParsedIndex(problems=[exc.message])
        parsed = parse_index(text)
        for number, row in enumerate(parsed.rows if check_files else [], start=1):
            problem = self._file_problem(row.file)
            if problem:
                parsed.problems.append(f"row {number} ({row.title or row.file}): {problem}")
        return parsed

    def read_document(self, relative: str) -> str:
        """A document of this library by its File value; NOT_FOUND / INVALID_ARGUMENT when it cannot be read safely."""
        problem = self._file_problem(relative)
        if problem:
            raise NiniError(
                ErrorCode.NOT_FOUND if "missing" in problem else ErrorCode.INVALID_ARGUMENT,
                f"{self.level}/{relative}: {problem}",
            )
        return read_regular_file(self.root, relative)

    def _file_problem(self, relative: str) -> str | None:
        parts = relative.split("/")
        if not relative or relative.startswith("/") or any(part in ("", ".", "..") for part in parts):
            return f"File {relative!r} is not a path inside the library"
        if not ID_PATTERN.fullmatch(parts[-1].removesuffix(".md")) and not re.fullmatch(
            r"EXP-\d{4,}[-\w]*\.md", parts[-1]
        ):
            return f"File {relative!r} is not named EXP-<number>.md"
        if self.level == "team" and (len(parts) != 2 or parts[0] not in ("standards", "knowledge")):
            return f"File {relative!r} is not in standards/ or knowledge/"
        if self.level == "project" and len(parts) != 1:
            return f"File {relative!r} is not in the library's folder"
        path = self.root
        for part in parts:
            path = path / part
            try:
                mode = os.lstat(path).st_mode
            except FileNotFoundError:
                return f"File {relative} is missing"
            if stat.S_ISLNK(mode):
                return f"File {relative} goes through a link, which nini does not follow"
        return None if stat.S_ISREG(mode) else f"File {relative} is not a regular file"


def read_regular_file(root: Path, relative: str) -> str:
    """The UTF-8 text of ``root/relative``, opened without following a link in its last component
    (the caller checked the others); FileNotFoundError when it is absent."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(root / relative, flags)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise NiniError(
            ErrorCode.INVALID_ARGUMENT, f"{relative}: cannot be read ({exc.strerror}); a link is never followed"
        ) from exc
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise NiniError(ErrorCode.INVALID_ARGUMENT, f"{relative}: not a regular file")
        data = handle.read(MAX_DOCUMENT_BYTES + 1)
    if len(data) > MAX_DOCUMENT_BYTES:
        raise NiniError(ErrorCode.TOO_LARGE, f"{relative}: over {MAX_DOCUMENT_BYTES:,} bytes")
    return data.decode("utf-8", errors="replace")


def parse_index(text: str) -> ParsedIndex:
    """The rows of the first table in ``text`` and what is wrong with it (the File check aside)."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.lstrip().startswith("|")), None)
    if start is None:
        return ParsedIndex(problems=["no table: the header row " + _header_line() + " is missing"], preamble=text)
    parsed = ParsedIndex(preamble="\n".join(lines[:start]).rstrip() + "\n")
    header = _cells(lines[start])
    if tuple(header) != COLUMNS:
        parsed.problems.append(f"header is {' | '.join(header)}; it must be {' | '.join(COLUMNS)} in this order")
        return parsed
    body = lines[start + 1 :]
    if not body or not re.fullmatch(r"\s*\|?(\s*:?-+:?\s*\|)+\s*:?-*:?\s*\|?\s*", body[0]):
        parsed.problems.append("the line under the header is not a |---| separator")
    else:
        body = body[1:]
    seen: set[str] = set()
    for number, line in enumerate(body, start=1):
        if not line.strip():
            break  # the table ends at the first blank line
        cells = _cells(line)
        if len(cells) != len(COLUMNS):
            parsed.problems.append(f"row {number}: {len(cells)} cells, {len(COLUMNS)} expected")
            continue
        row = IndexRow(*cells)
        problems = _value_problems(row)
        if row.id and row.id in seen:
            problems.append(f"{row.id} appears twice")
        seen.add(row.id)
        if problems:
            parsed.problems.append(f"row {number} ({row.title or row.file}): " + "; ".join(problems))
            continue
        parsed.rows.append(row)
    known = {row.id for row in parsed.rows}
    for row in parsed.rows:
        for ref_column, ref in (("Replaces", row.replaces), ("ReplacedBy", row.replaced_by)):
            missing = [item for item in _ids(ref) if item not in known]
            if missing:
                parsed.problems.append(
                    f"{row.id}: {ref_column} names {', '.join(missing)}, which the INDEX does not have"
                )
    return parsed


def render_index(parsed: ParsedIndex, level: str) -> str:
    """The INDEX text of ``parsed``: its preamble (or the default one) and the table."""
    preamble = parsed.preamble.strip() or PREAMBLE[level].strip()
    lines = [preamble, "", _header_line(), "|" + "|".join("---" for _ in COLUMNS) + "|"]
    lines += ["| " + " | ".join(_escape(cell) for cell in row.cells()) + " |" for row in parsed.rows]
    return "\n".join(lines) + "\n"


def _value_problems(row: IndexRow) -> list[str]:
    problems = []
    for name, value, allowed in (
        ("Type", row.type, TYPES),
        ("Status", row.status, STATUSES),
        ("Scope", row.scope, SCOPES),
        ("Strength", row.strength, STRENGTHS),
    ):
        if value not in allowed:
            problems.append(f"{name} is {value!r}, not one of {'|'.join(allowed)}")
    if not row.title:
        problems.append("Title is empty")
    if not row.id:
        problems.append(f"File {row.file!r} is not named EXP-<number>.md")
    for name, value in (("Replaces", row.replaces), ("ReplacedBy", row.replaced_by)):
        if value and value != "-" and not all(ID_PATTERN.fullmatch(item) for item in value.replace(",", " ").split()):
            problems.append(f"{name} must list EXP-<number> IDs, not {value!r}")
    return problems


def _ids(value: str) -> list[str]:
    return [item for item in value.replace(",", " ").split() if item != "-"]


def _cells(line: str) -> list[str]:
    inner = line.strip()
    inner = inner[1:] if inner.startswith("|") else inner
    inner = inner[:-1] if inner.endswith("|") and not inner.endswith("\\|") else inner
    return [cell.strip().replace("\\|", "|") for cell in _SPLIT.split(inner)]


def _escape(cell: str) -> str:
    return " ".join(cell.replace("|", "\\|").split())  # one line, pipes escaped


def _header_line() -> str:
    return "| " + " | ".join(COLUMNS) + " |"
