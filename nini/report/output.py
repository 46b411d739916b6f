"""Writing a rendered report to files: Markdown, HTML, and on request a notebook or a PDF.

A report never overwrites an earlier one. All formats of one report share a stem
``<prefix>-YYYYMMDD-HHMMSS[-N]``: each file is written whole to a temp file first, then
hard-linked to its name, which fails if the name exists. So two reports written in the same
second, by two threads or two processes, get two stems, and a reader never sees half a file.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import mimetypes
import os
import re
import shutil
import subprocess
from collections.abc import Callable, Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

from nini.errors import ErrorCode, NiniError
from nini.fsutil import atomic_write_bytes, write_temp
from nini.report.model import ReportInput

FORMATS = ("md", "html", "ipynb", "pdf")
MAX_STEMS = 1000  # reports with one stem prefix within one second, before giving up
PDF_TIMEOUT_S = 120
_SAFE_PREFIX = re.compile(r"^[^/\\\x00.][^/\\\x00]{0,100}$")
_IMAGE = re.compile(r'!\[([^\]]*)\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)')
_DATA_URI = re.compile(r"^data:(image/[\w.+-]+);base64,([A-Za-z0-9+/=\s]+)$")
_ATTACHABLE = {"image/png", "image/jpeg", "image/gif", "image/svg+xml", "image/webp"}
PDF_INSTALL_HINT = ("install one of: weasyprint (`pip install weasyprint`), wkhtmltopdf (`apt-get install "
                    "wkhtmltopdf`) or Chromium (`apt-get install chromium`)")  # fmt: skip


def check_formats(formats: Iterable[str]) -> list[str]:
    """The requested formats in order, without repeats.

    INVALID_ARGUMENT for an unknown format or none; NOT_FOUND for pdf without a converter. Callers
    check first, so that nothing is read or written for a report that cannot be made.
    """
    asked = [str(f).strip().lower() for f in formats]
    chosen = list(dict.fromkeys(f for f in asked if f))
    unknown = [f for f in chosen if f not in FORMATS]
    if unknown or not chosen:
        raise NiniError(ErrorCode.INVALID_ARGUMENT, f"report formats are {', '.join(FORMATS)}; got "
                        f"{', '.join(unknown) if unknown else 'none'}", {"formats": asked})  # fmt: skip
    if "pdf" in chosen:
        pdf_converter()
    return chosen


def write_report(
    rendered: Any, folder: Path, *, formats: Iterable[str] = ("md", "html"), stem: str | None = None
) -> dict[str, Path]:
    """Write ``rendered`` (a ``RenderedReport``) into ``folder``; ``{format: path}`` in the order asked.

    ``stem`` is the file names' prefix (default ``report``); the time and, when taken, ``-N``
    follow it. PDF needs a converter (see ``pdf_converter``); without one nothing is written.
    """
    chosen = check_formats(formats)
    prefix = stem or "report"
    if not _SAFE_PREFIX.match(prefix):
        raise NiniError(ErrorCode.INVALID_ARGUMENT, f"invalid report file name prefix {prefix!r}")
    convert_pdf = pdf_converter() if "pdf" in chosen else None
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise NiniError(ErrorCode.INVALID_ARGUMENT, f"cannot create the report folder {folder}: {exc.strerror}") from None
    temps: dict[str, Path] = {}
    try:
        for fmt in chosen:
            if fmt == "pdf":
                temps[fmt] = _temp_pdf(folder, rendered.html, convert_pdf)
            else:
                temps[fmt] = _temp_file(folder, _content(rendered, fmt, folder))
        return _claim(folder, f"{prefix}-{_timestamp()}", temps)
    finally:
        for temp in temps.values():
            temp.unlink(missing_ok=True)


def new_folder(parent: Path, name: str) -> Path:
    """A folder ``parent/name`` that did not exist before (``name-2``, ``name-3``, ... when taken),
    so the chart files of one report never replace those an earlier report links to."""
    parent.mkdir(parents=True, exist_ok=True)
    for number in range(1, 10_000):
        folder = parent / (name if number == 1 else f"{name}-{number}")
        try:
            folder.mkdir()
        except FileExistsError:
            continue
        except OSError as exc:
            raise _write_error(folder, exc) from None
        return folder
    raise NiniError(ErrorCode.CONFLICT, f"too many report folders named {name}-N in {parent}")


def copy_charts(data: ReportInput, folder: Path) -> ReportInput:
    """``data`` with its chart files copied into ``folder``: a report written away from the
    workspace links to its own copies, never back into NINI_HOME (whose paths it must not show)."""
    copies = []
    for chart in data.charts:
        target = folder / chart.name
        try:
            if not target.is_file() or target.stat().st_size != chart.path.stat().st_size:
                atomic_write_bytes(target, chart.path.read_bytes())
        except OSError as exc:
            raise _write_error(target, exc) from None
        copies.append(dataclasses.replace(chart, path=target))
    return dataclasses.replace(data, charts=copies)


def _timestamp() -> str:
    return datetime.now().strftime("%Y%m%d-%H%M%S")


def _content(rendered: Any, fmt: str, folder: Path) -> bytes:
    if fmt == "md":
        return rendered.markdown.encode("utf-8")
    if fmt == "html":
        return rendered.html.encode("utf-8")
    return to_notebook(rendered.markdown, folder).encode("utf-8")


def _claim(folder: Path, base: str, temps: dict[str, Path]) -> dict[str, Path]:
    """Give every temp file its final name under the first stem whose names are all free."""
    for n in range(1, MAX_STEMS + 1):
        stem = base if n == 1 else f"{base}-{n}"
        placed: dict[str, Path] = {}
        for fmt, temp in temps.items():
            target = folder / f"{stem}.{fmt}"
            if not _place(temp, target):
                break
            placed[fmt] = target
        else:
            return placed
        # Another report holds one of these names: give back the ones this attempt took.
        for target in placed.values():
            target.unlink(missing_ok=True)
    raise NiniError(ErrorCode.CONFLICT, f"no free report file name for {base} in {folder}")


def _place(temp: Path, target: Path) -> bool:
    """Put ``temp``'s content at ``target`` unless that exists (then False); never overwrites."""
    try:
        os.link(temp, target)
        return True
    except FileExistsError:
        return False
    except OSError:
        pass  # a file system without hard links: an exclusive create, then the bytes
    try:
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        return False
    try:
        with os.fdopen(fd, "wb") as out, temp.open("rb") as source:
            shutil.copyfileobj(source, out)
            out.flush()
            os.fsync(out.fileno())
    except OSError as exc:
        target.unlink(missing_ok=True)
        raise _write_error(target, exc) from None
    return True


def _temp_file(folder: Path, data: bytes, suffix: str = ".tmp") -> Path:
    """``data`` in a new hidden file of ``folder``, flushed to disk."""
    try:
        temp = write_temp(folder, data, prefix=".report-", suffix=suffix)
    except OSError as exc:
        raise _write_error(folder, exc) from None
    os.chmod(temp, 0o644)  # mkstemp makes it owner-only; a report is an ordinary file
    return temp


def _write_error(path: Path, exc: OSError) -> NiniError:
    return NiniError(ErrorCode.INTERNAL, f"could not write the report in {path}: {exc.strerror or exc}",
                     {"path": str(path)})  # fmt: skip


# notebook


def to_notebook(markdown: str, folder: Path) -> str:
    """The report as a notebook of Markdown cells, one per ``##`` section.

    Images become cell attachments (embedded data, or files relative to ``folder`` where the
    notebook is written), so the notebook shows its charts wherever it is opened.
    """
    import nbformat
    from nbformat.v4 import new_markdown_cell, new_notebook

    cells = []
    for section in _sections(markdown):
        attachments: dict[str, dict[str, str]] = {}
        source = _IMAGE.sub(lambda m: _attach(m, folder, attachments), section)
        cell = new_markdown_cell(source)
        if attachments:
            cell["attachments"] = attachments
        cells.append(cell)
    notebook = new_notebook(cells=cells, metadata={"nini": {"kind": "report"}})
    nbformat.validate(notebook)
    return nbformat.writes(notebook)


def _sections(markdown: str) -> list[str]:
    """The text split before each ``## `` heading outside code fences."""
    sections: list[list[str]] = [[]]
    fenced = False
    for line in markdown.splitlines(keepends=True):
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        if not fenced and line.startswith("## ") and any(part.strip() for part in sections[-1]):
            sections.append([])
        sections[-1].append(line)
    return [text for part in sections if (text := "".join(part).strip())]


def _attach(match: re.Match[str], folder: Path, attachments: dict[str, dict[str, str]]) -> str:
    alt, target = match.group(1), match.group(2)
    found = _image_data(target, folder)
    if found is None:
        return match.group(0)
    mime, data, name = found
    stem, dot, ext = name.rpartition(".")
    key, n = name, 1
    while key in attachments and attachments[key] != {mime: data}:
        n += 1
        key = f"{stem}-{n}{dot}{ext}" if dot else f"{name}-{n}"
    attachments[key] = {mime: data}
    return f"![{alt}](attachment:{key})"


def _image_data(target: str, folder: Path) -> tuple[str, str, str] | None:
    """(mime, base64 or SVG text, file name) of an image reference, or None to keep it a link."""
    if match := _DATA_URI.match(target):
        mime, encoded = match.group(1), re.sub(r"\s+", "", match.group(2))
        if mime not in _ATTACHABLE:
            return None
        extension = (mimetypes.guess_extension(mime) or ".img").lstrip(".")
        name = f"image-{hashlib.sha1(encoded.encode('ascii')).hexdigest()[:10]}.{extension}"
        data = base64.b64decode(encoded).decode("utf-8") if mime == "image/svg+xml" else encoded
        return mime, data, name
    if ":" in target.split("/", 1)[0]:  # http:, attachment:, ... stay links
        return None
    from urllib.parse import unquote

    path = (folder / unquote(target)).resolve()
    mime = mimetypes.guess_type(path.name)[0]
    if mime not in _ATTACHABLE or not path.is_file():
        return None
    raw = path.read_bytes()
    data = raw.decode("utf-8") if mime == "image/svg+xml" else base64.b64encode(raw).decode("ascii")
    return mime, data, path.name


# pdf


def pdf_converter() -> Callable[[Path, Path], None]:
    """The first PDF converter available here: weasyprint, wkhtmltopdf, Chromium, then pandoc.

    NOT_FOUND, naming what to install, when there is none.
    """
    try:
        import weasyprint  # noqa: F401 - optional, not a dependency of nini
    except Exception:  # ImportError, or OSError when its system libraries (pango) are missing
        pass
    else:
        return _weasyprint
    if exe := shutil.which("wkhtmltopdf"):
        return lambda html, pdf: _run(exe, [exe, "--quiet", "--enable-local-file-access", str(html), str(pdf)])
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        if exe := shutil.which(name):
            return lambda html, pdf, exe=exe: _run(exe, [exe, "--headless", "--disable-gpu", "--no-sandbox",
                                                         "--no-pdf-header-footer", f"--print-to-pdf={pdf}", html.as_uri()])  # fmt: skip
    if exe := shutil.which("pandoc"):
        return lambda html, pdf: _run(exe, [exe, str(html), "--from", "html", "--output", str(pdf)])
    raise NiniError(ErrorCode.NOT_FOUND, f"PDF output needs a converter and none was found: {PDF_INSTALL_HINT}. "
                    "Markdown, HTML and ipynb reports need none.", {"format": "pdf"})  # fmt: skip


def _temp_pdf(folder: Path, html: str, convert: Callable[[Path, Path], None] | None) -> Path:
    assert convert is not None
    source = _temp_file(folder, html.encode("utf-8"), suffix=".html")
    target = _temp_file(folder, b"", suffix=".pdf")
    try:
        convert(source, target)
        with target.open("rb") as produced:
            if produced.read(5) != b"%PDF-":
                raise NiniError(ErrorCode.INTERNAL, "the PDF converter wrote no PDF")
    except BaseException:
        target.unlink(missing_ok=True)
        raise
    finally:
        source.unlink(missing_ok=True)
    return target


def _weasyprint(html: Path, pdf: Path) -> None:
    import weasyprint

    weasyprint.HTML(filename=str(html)).write_pdf(str(pdf))


def _run(exe: str, argv: list[str]) -> None:
    name = Path(exe).name
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=PDF_TIMEOUT_S, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise NiniError(ErrorCode.TIMEOUT, f"{name} did not finish the PDF within {PDF_TIMEOUT_S} s") from None
    except OSError as exc:
        raise NiniError(ErrorCode.INTERNAL, f"{name} could not be started: {exc.strerror or exc}") from None
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        raise NiniError(ErrorCode.INTERNAL, f"{name} could not convert the report to PDF (exit {done.returncode}): "
                        f"{' '.join(tail) or 'no message'}")  # fmt: skip
