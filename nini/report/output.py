"""Writing a rendered report to files: Markdown, HTML, and on request a notebook or a PDF.

A report never overwrites an earlier one. All formats of one report share a stem
``<prefix>-YYYYMMDD-HHMMSS[-N]``: each file is written whole to a temp file first, then
hard-linked to its name, which fails if the name exists. So two reports written in the same
second, by two threads or two processes, get two stems, and a reader never sees half a file.

Every file goes through a ``rooted.RootedDir``: a report written into a session
workspace (where agent code may have put a link in place of ``reports/``) never follows a link,
and a PDF converter works in a private temp folder, never in the workspace.
"""

from __future__ import annotations

import base64
import dataclasses
import functools
import hashlib
import mimetypes
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from nini.errors import ErrorCode, NiniError
from nini.fsutil import no_space, out_of_space
from nini.report.model import ChartFile, ReportInput
from nini.rooted import RootedDir

FORMATS = ("md", "html", "ipynb", "pdf")
MAX_STEMS = 1000  # reports with one stem prefix within one second, before giving up
PDF_TIMEOUT_S = 120
_SAFE_PREFIX = re.compile(r"^[^/\\\x00.][^/\\\x00]{0,100}$")
_IMAGE = re.compile(r'!\[([^\]]*)\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)')
_DATA_URI = re.compile(r"^data:(image/[\w.+-]+);base64,([A-Za-z0-9+/=\s]+)$")
_ATTACHABLE = {"image/png", "image/jpeg", "image/gif", "image/svg+xml", "image/webp"}
PDF_INSTALL_HINT = (
    "install one of: weasyprint (`pip install weasyprint`), wkhtmltopdf (`apt-get install "
    "wkhtmltopdf`) or Chromium (`apt-get install chromium`)"
)


def check_formats(formats: Iterable[str]) -> list[str]:
    """The requested formats in order, without repeats.

    INVALID_ARGUMENT for an unknown format or none; NOT_FOUND for pdf without a converter. Callers
    check first, so that nothing is read or written for a report that cannot be made.
    """
    asked = [str(f).strip().lower() for f in formats]
    chosen = list(dict.fromkeys(f for f in asked if f))
    unknown = [f for f in chosen if f not in FORMATS]
    if unknown or not chosen:
        raise NiniError(
            ErrorCode.INVALID_ARGUMENT,
            f"report formats are {', '.join(FORMATS)}; got {', '.join(unknown) if unknown else 'none'}",
            {"formats": asked},
        )
    if "pdf" in chosen:
        pdf_converter()
    return chosen


def write_report(
    rendered: Any,
    folder: Path,
    *,
    formats: Iterable[str] = ("md", "html"),
    stem: str | None = None,
    within: RootedDir | None = None,
) -> dict[str, Path]:
    """Write ``rendered`` (a ``RenderedReport``) into ``folder``; ``{format: path}`` in the order asked.

    ``stem`` is the file names' prefix (default ``report``); the time and, when taken, ``-N``
    follow it. ``within`` is the session workspace when ``folder`` lies in one: every component
    beneath its root is then opened without following links. PDF needs a converter (see
    ``pdf_converter``); without one nothing is written.
    """
    chosen = check_formats(formats)
    prefix = stem or "report"
    if not _SAFE_PREFIX.match(prefix):
        raise NiniError(ErrorCode.INVALID_ARGUMENT, f"invalid report file name prefix {prefix!r}")
    convert_pdf = pdf_converter() if "pdf" in chosen else None
    folder = Path(folder)
    target, subdir = _target(folder, within)
    target.makedirs(subdir)
    contents = {fmt: _pdf(rendered.html, convert_pdf) if fmt == "pdf" else _content(rendered, fmt) for fmt in chosen}
    names = _claim(target, subdir, f"{prefix}-{_timestamp()}", contents)
    return {fmt: folder / name for fmt, name in names.items()}


def _target(folder: Path, within: RootedDir | None) -> tuple[RootedDir, str]:
    """The rooted folder to write through, and ``folder`` relative to it."""
    if within is not None:
        try:
            return within, folder.relative_to(within.root).as_posix()
        except ValueError:
            raise NiniError(
                ErrorCode.INVALID_ARGUMENT, "the report folder is not inside the session workspace"
            ) from None
    try:
        folder.mkdir(parents=True, exist_ok=True)  # a folder the user named: made as they name it
    except OSError as exc:
        if out_of_space(exc):
            raise no_space("the report folder") from None
        raise NiniError(
            ErrorCode.INVALID_ARGUMENT, f"cannot create the report folder {folder}: {exc.strerror}"
        ) from None
    return RootedDir(folder, label="the report folder"), ""


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
    workspace links to its own copies, never back into NINI_HOME (whose paths it must not show).
    A chart that is gone or refused (a link planted by agent code) is left out."""
    copies = []
    if data.charts:
        try:
            folder.mkdir(parents=True, exist_ok=True)  # a RootedDir writes beneath a folder that exists
        except OSError as exc:
            raise _write_error(folder, exc) from None
    for chart in data.charts:
        target = folder / chart.name
        try:
            content = chart.read_bytes()
        except (OSError, NiniError):
            continue
        try:
            if not target.is_file() or target.stat().st_size != len(content):
                # written like the report's files (0644 less the umask), not as a private temp file's 0600
                RootedDir(folder, label="the report folder").write_bytes(chart.name, content)
        except OSError as exc:
            raise _write_error(target, exc) from None
        copies.append(dataclasses.replace(chart, path=target, fs=None, relative=None))
    return dataclasses.replace(data, charts=copies)


def _timestamp() -> str:
    return datetime.now().strftime("%Y%m%d-%H%M%S")


def _content(rendered: Any, fmt: str) -> bytes:
    if fmt == "md":
        return rendered.markdown.encode("utf-8")
    if fmt == "html":
        return rendered.html.encode("utf-8")
    return to_notebook(rendered.markdown, rendered.linked_files()).encode("utf-8")


def _claim(target: RootedDir, subdir: str, base: str, contents: dict[str, bytes]) -> dict[str, str]:
    """Give every content its final name under the first stem whose names are all free."""
    for n in range(1, MAX_STEMS + 1):
        stem = base if n == 1 else f"{base}-{n}"
        placed: dict[str, str] = {}
        for fmt, content in contents.items():
            name = f"{stem}.{fmt}"
            if not target.create_new(_join(subdir, name), content):
                break
            placed[fmt] = name
        else:
            return placed
        # Another report holds one of these names: give back the ones this attempt took.
        for name in placed.values():
            target.unlink(_join(subdir, name))
    raise NiniError(ErrorCode.CONFLICT, f"no free report file name for {base}")


def _join(subdir: str, name: str) -> str:
    return f"{subdir}/{name}" if subdir and subdir != "." else name


def _write_error(path: Path, exc: OSError) -> NiniError:
    if out_of_space(exc):
        return no_space(f"the report file {path.name}")
    return NiniError(ErrorCode.INTERNAL, f"could not write the report file {path.name}: {exc.strerror or exc}")


# notebook


def to_notebook(markdown: str, charts: Mapping[str, ChartFile] | None = None) -> str:
    """The report as a notebook of Markdown cells, one per ``##`` section.

    Images become cell attachments (embedded data, or the chart files the report links to, by
    link: ``RenderedReport.linked_files``), so the notebook shows its charts wherever it is opened.
    Nothing is read by path: a link the report does not know stays a link.
    """
    import nbformat
    from nbformat.v4 import new_markdown_cell, new_notebook

    cells = []
    for section in _sections(markdown):
        attachments: dict[str, dict[str, str]] = {}
        source = _IMAGE.sub(functools.partial(_attach, charts=charts or {}, attachments=attachments), section)
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


def _attach(match: re.Match[str], charts: Mapping[str, ChartFile], attachments: dict[str, dict[str, str]]) -> str:
    alt, target = match.group(1), match.group(2)
    found = _image_data(target, charts)
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


def _image_data(target: str, charts: Mapping[str, ChartFile]) -> tuple[str, str, str] | None:
    """(mime, base64 or SVG text, file name) of an image reference, or None to keep it a link."""
    if match := _DATA_URI.match(target):
        mime, encoded = match.group(1), re.sub(r"\s+", "", match.group(2))
        if mime not in _ATTACHABLE:
            return None
        extension = (mimetypes.guess_extension(mime) or ".img").lstrip(".")
        name = f"image-{hashlib.sha1(encoded.encode('ascii')).hexdigest()[:10]}.{extension}"
        data = base64.b64decode(encoded).decode("utf-8") if mime == "image/svg+xml" else encoded
        return mime, data, name
    from urllib.parse import unquote

    chart = charts.get(unquote(target))
    mime = mimetypes.guess_type(chart.name)[0] if chart is not None else None
    if chart is None or mime not in _ATTACHABLE:
        return None  # http:, attachment:, a file the report does not know: stays a link
    try:
        raw = chart.read_bytes()
    except (OSError, NiniError):
        return None
    try:
        data = raw.decode("utf-8") if mime == "image/svg+xml" else base64.b64encode(raw).decode("ascii")
    except UnicodeDecodeError:
        return None
    return mime, data, chart.name


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
    if wkhtml := shutil.which("wkhtmltopdf"):
        return lambda html, pdf: _run(wkhtml, [wkhtml, "--quiet", "--enable-local-file-access", str(html), str(pdf)])
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        if chrome := shutil.which(name):
            return functools.partial(_chromium, chrome)
    if pandoc := shutil.which("pandoc"):
        return lambda html, pdf: _run(pandoc, [pandoc, str(html), "--from", "html", "--output", str(pdf)])
    raise NiniError(
        ErrorCode.NOT_FOUND,
        f"PDF output needs a converter and none was found: {PDF_INSTALL_HINT}. "
        "Markdown, HTML and ipynb reports need none.",
        {"format": "pdf"},
    )


def _chromium(exe: str, html: Path, pdf: Path) -> None:
    """The PDF converter through a Chromium or Chrome at ``exe`` (headless print of the page)."""
    _run(
        exe,
        [
            exe,
            "--headless",
            "--disable-gpu",
            "--no-sandbox",
            "--no-pdf-header-footer",
            f"--print-to-pdf={pdf}",
            html.as_uri(),
        ],
    )


def _pdf(html: str, convert: Callable[[Path, Path], None] | None) -> bytes:
    """``html`` as PDF bytes, converted in a private temp folder (never in a workspace)."""
    assert convert is not None
    with tempfile.TemporaryDirectory(prefix="nini-pdf-") as private:
        source, target = Path(private) / "report.html", Path(private) / "report.pdf"
        source.write_text(html, encoding="utf-8")
        convert(source, target)
        try:
            produced = target.read_bytes()
        except OSError:
            produced = b""
    if not produced.startswith(b"%PDF-"):
        raise NiniError(ErrorCode.INTERNAL, "the PDF converter wrote no PDF")
    return produced


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
        raise NiniError(
            ErrorCode.INTERNAL,
            f"{name} could not convert the report to PDF (exit {done.returncode}): {' '.join(tail) or 'no message'}",
        )
