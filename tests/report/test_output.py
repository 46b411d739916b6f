"""Writing reports: names that never collide or overwrite, whole files only, ipynb and pdf."""

from __future__ import annotations

import base64
import os
import re
import sys
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest

from nini.errors import ErrorCode, NiniError
from nini.report import output
from nini.report.builder import RenderedReport, ReportOptions, build_report
from nini.report.model import ChartFile, ReportInput, Step
from nini.report.output import to_notebook, write_report

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)
NAME = re.compile(r"^report-\d{8}-\d{6}(-\d+)?$")


def rendered_report(folder: Path, title: str = "月度报告") -> RenderedReport:
    """A real report with one chart file, whose Markdown links the chart relative to ``folder``."""
    chart = folder.parent / "charts" / "revenue.png"
    chart.parent.mkdir(parents=True, exist_ok=True)
    chart.write_bytes(PNG)
    step = Step(
        id="x1", order=0, language="python", status="succeeded", code="...", label="total", result={"revenue": 42}
    )
    data = ReportInput(source="test", steps=[step], charts=[ChartFile("revenue.png", chart.resolve(), 0, "x1")])
    return build_report(data, ReportOptions(title=title), link_base=folder)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return tmp_path / "reports"


@pytest.fixture
def frozen(monkeypatch: pytest.MonkeyPatch) -> str:
    """Every report is written "in the same second"."""
    monkeypatch.setattr(output, "_timestamp", lambda: "20250102-030405")
    return "report-20250102-030405"


def test_markdown_and_html_share_one_new_stem(folder: Path) -> None:
    report = rendered_report(folder)
    written = write_report(report, folder)
    assert list(written) == ["md", "html"]
    assert (
        written["md"].parent == folder and written["md"].stem == written["html"].stem and NAME.match(written["md"].stem)
    )
    assert written["md"].read_text(encoding="utf-8") == report.markdown
    assert written["html"].read_text(encoding="utf-8") == report.html
    assert sorted(p.name for p in folder.iterdir()) == sorted(p.name for p in written.values())  # no temp files
    assert oct(written["md"].stat().st_mode & 0o777) == "0o644"


def test_reports_in_the_same_second_get_numbered_stems(folder: Path, frozen: str) -> None:
    stems = [write_report(rendered_report(folder, f"第 {n} 份"), folder)["md"].stem for n in range(3)]
    assert stems == [frozen, f"{frozen}-2", f"{frozen}-3"]
    assert "第 0 份" in (folder / f"{frozen}.md").read_text(encoding="utf-8")  # the first is untouched


def test_a_name_taken_in_any_format_is_never_overwritten(folder: Path, frozen: str) -> None:
    folder.mkdir()
    (folder / f"{frozen}.html").write_text("an earlier report", encoding="utf-8")
    written = write_report(rendered_report(folder), folder)
    assert {p.name for p in written.values()} == {f"{frozen}-2.md", f"{frozen}-2.html"}
    assert (folder / f"{frozen}.html").read_text(encoding="utf-8") == "an earlier report"
    assert not (folder / f"{frozen}.md").exists()  # taken, then given back with its stem


def test_a_custom_prefix(folder: Path, frozen: str) -> None:
    written = write_report(rendered_report(folder), folder, formats=["html"], stem="sales-report")
    assert [p.name for p in written.values()] == ["sales-report-20250102-030405.html"]


def _write_one(folder: str, title: str) -> tuple[str, str]:
    output._timestamp = lambda: "20250102-030405"  # in a worker process too
    written = write_report(rendered_report(Path(folder), title), Path(folder), formats=("md", "html"))
    return title, written["md"].stem


@pytest.mark.parametrize("pool", [ThreadPoolExecutor, ProcessPoolExecutor])
def test_concurrent_writers_get_distinct_complete_files(folder: Path, frozen: str, pool: type) -> None:
    folder.mkdir()
    titles = [f"report number {n}" for n in range(16)]
    with pool(max_workers=4) as workers:
        results = list(workers.map(_write_one, [str(folder)] * len(titles), titles))
    stems = [stem for _, stem in results]
    assert len(set(stems)) == len(titles)
    for title, stem in results:
        assert f"# {title}" in (folder / f"{stem}.md").read_text(encoding="utf-8")
        assert f"<title>{title}</title>" in (folder / f"{stem}.html").read_text(encoding="utf-8")
    assert len(list(folder.iterdir())) == 2 * len(titles)  # and no temp file left behind


def test_a_failure_midway_leaves_nothing(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(markdown: str, where: Path) -> str:
        raise NiniError(ErrorCode.INTERNAL, "disk full")

    monkeypatch.setattr(output, "to_notebook", broken)
    with pytest.raises(NiniError, match="disk full"):
        write_report(rendered_report(folder), folder, formats=("md", "html", "ipynb"))
    assert list(folder.iterdir()) == []


@pytest.mark.parametrize(
    ("formats", "stem"),
    [([], None), (["md", "docx"], None), ([" "], None), (["md"], "../escape"), (["md"], ".hidden")],
)
def test_wrong_formats_and_prefixes(folder: Path, formats: list[str], stem: str | None) -> None:
    with pytest.raises(NiniError) as caught:
        write_report(rendered_report(folder), folder, formats=formats, stem=stem)
    assert caught.value.code is ErrorCode.INVALID_ARGUMENT
    assert not folder.exists() or list(folder.iterdir()) == []


def test_formats_are_normalised() -> None:
    assert output.check_formats(["HTML", " md", "html", ""]) == ["html", "md"]


# ipynb


def test_the_notebook_is_valid_with_the_charts_attached(folder: Path) -> None:
    report = rendered_report(folder)
    written = write_report(report, folder, formats=("ipynb",))
    notebook = nbformat.read(written["ipynb"], as_version=4)
    nbformat.validate(notebook)
    assert {cell.cell_type for cell in notebook.cells} == {"markdown"}
    headings = [line for line in report.markdown.splitlines() if line.startswith("## ")]
    assert [cell.source.splitlines()[0] for cell in notebook.cells[1:]] == headings
    assert notebook.cells[0].source.startswith("# 月度报告")
    (charts,) = [cell for cell in notebook.cells if "attachments" in cell]
    assert "![revenue](attachment:revenue.png)" in charts.source and "![revenue](../charts" not in charts.source
    assert base64.b64decode(charts.attachments["revenue.png"]["image/png"]) == PNG
    assert "[revenue.png](../charts/revenue.png)" in charts.source  # download links stay links


def test_notebook_images_from_data_uris_remote_links_and_code_fences() -> None:
    svg = base64.b64encode(b"<svg xmlns='http://www.w3.org/2000/svg'/>").decode()
    markdown = (
        "# T\n\n## A\n\n![one](data:image/png;base64," + base64.b64encode(PNG).decode() + ")\n"
        "![two](data:image/svg+xml;base64," + svg + ")\n![far](https://example.org/x.png)\n![gone](missing.png)\n\n"
        "```\n## not a section\n```\n\n## B\n\ntext\n"
    )
    notebook = nbformat.reads(to_notebook(markdown, {}), as_version=4)
    nbformat.validate(notebook)
    assert len(notebook.cells) == 3 and "## not a section" in notebook.cells[1].source
    attachments = notebook.cells[1].attachments
    assert sorted(next(iter(a)) for a in attachments.values()) == ["image/png", "image/svg+xml"]
    assert any(a.get("image/svg+xml", "").startswith("<svg") for a in attachments.values())
    assert "![far](https://example.org/x.png)" in notebook.cells[1].source
    assert "![gone](missing.png)" in notebook.cells[1].source


# pdf


def no_converters(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "weasyprint", None)  # importing it raises ImportError
    monkeypatch.setattr(output.shutil, "which", lambda name: None)


def test_pdf_without_a_converter_is_a_clear_error_and_writes_nothing(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    no_converters(monkeypatch)
    with pytest.raises(NiniError) as caught:
        write_report(rendered_report(folder), folder, formats=("md", "html", "pdf"))
    assert caught.value.code is ErrorCode.NOT_FOUND
    for name in ("weasyprint", "wkhtmltopdf", "chromium"):
        assert name in caught.value.message
    assert not folder.exists() or list(folder.iterdir()) == []


def fake_converter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str) -> None:
    """A ``wkhtmltopdf`` on PATH that runs ``body`` (a shell script; $4 is the output file)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "wkhtmltopdf"
    script.write_text("#!/bin/sh\n" + body, encoding="utf-8")
    script.chmod(0o755)
    monkeypatch.setitem(sys.modules, "weasyprint", None)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")


def test_pdf_through_a_converter_found_on_path(folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_converter(
        tmp_path, monkeypatch, 'grep -q "<html" "$3" && printf "%%PDF-1.4 from %s" "$(basename "$3")" > "$4"\n'
    )
    written = write_report(rendered_report(folder), folder, formats=("html", "pdf"))
    assert written["pdf"].stem == written["html"].stem and written["pdf"].read_bytes().startswith(
        b"%PDF-1.4 from report.html"
    )
    assert len(list(folder.iterdir())) == 2  # the converter worked in a private folder, removed


def test_a_converter_that_fails_is_reported_and_writes_nothing(
    folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_converter(
        tmp_path, monkeypatch, 'echo "Exit with code 1 due to network error: HostNotFoundError" >&2\nexit 1\n'
    )
    with pytest.raises(NiniError) as caught:
        write_report(rendered_report(folder), folder, formats=("md", "pdf"))
    assert caught.value.code is ErrorCode.INTERNAL and "HostNotFoundError" in caught.value.message
    assert "wkhtmltopdf" in caught.value.message and list(folder.iterdir()) == []


def test_pdf_on_this_machine_works_or_says_what_to_install(folder: Path) -> None:
    try:
        written = write_report(rendered_report(folder), folder, formats=("pdf",))
    except NiniError as exc:
        assert exc.code is ErrorCode.NOT_FOUND and "install" in exc.message
    else:
        assert written["pdf"].read_bytes().startswith(b"%PDF-")
