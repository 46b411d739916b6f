"""Images in a notebook's Markdown cells: relative files and cell attachments become the report's
charts (embedded in the HTML, copied next to the Markdown); remote, escaping and linked ones are
never read or fetched."""

from __future__ import annotations

import base64
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from tests.report.test_report_cli import PNG, written
from tests.test_cli import _restore_nini_logger, ok  # noqa: F401 - autouse fixture shared with test_cli
from tests.test_cli_sessions import nini  # noqa: F401 - the in-process `nini` fixture

SECRET_PNG = PNG + b"SECRET-BYTES-OF-ANOTHER-FOLDER"
SVG = "<svg xmlns='http://www.w3.org/2000/svg' width='4' height='4'><rect width='4' height='4'/></svg>"


def image_notebook(tmp_path: Path) -> Path:
    """A notebook in tmp_path/work whose Markdown shows one image of each kind."""
    work = tmp_path / "work"
    (work / "figs").mkdir(parents=True)
    (work / "figs" / "flow chart.png").write_bytes(PNG)
    (tmp_path / "secret.png").write_bytes(SECRET_PNG)  # outside the notebook's folder
    (work / "figs" / "linked.png").symlink_to(tmp_path / "secret.png")
    diagram = new_markdown_cell("## Design\n\n![pipeline diagram](attachment:diagram.svg)\n")
    diagram.attachments = {"diagram.svg": {"image/svg+xml": SVG}}
    notebook = new_notebook(
        cells=[
            new_markdown_cell('# Image test\n\nThe flow: ![data flow](figs/flow%20chart.png "the flow")'),
            diagram,
            new_markdown_cell(
                "Escapes: ![up](../secret.png) ![abs](" + str(tmp_path / "secret.png") + ") "
                "![link](figs/linked.png) ![logo](https://example.invalid/logo.png)"
            ),
            new_code_cell(
                "# total\ntotal = 1 + 2\nprint('total:', total)",
                execution_count=1,  # a computed value: a finding
                outputs=[nbformat.v4.new_output("stream", name="stdout", text="total: 3\n")],
            ),
        ]
    )
    path = work / "images.ipynb"
    nbformat.write(notebook, path)
    return path


def test_local_images_and_attachments_are_embedded_and_copied_and_nothing_else_is_read(nini, tmp_path: Path) -> None:  # noqa: ANN001
    out = tmp_path / "out"
    md, html = written(ok(nini("report", str(image_notebook(tmp_path)), "--out", str(out))))
    files = out / "images_report_files"
    assert sorted(p.name for p in files.iterdir()) == ["data-flow.png", "pipeline-diagram.svg"]
    assert (files / "data-flow.png").read_bytes() == PNG and (files / "pipeline-diagram.svg").read_text() == SVG

    page = html.read_text(encoding="utf-8")
    assert page.count(f"data:image/png;base64,{base64.b64encode(PNG).decode()}") == 1
    assert page.count("data:image/svg+xml;base64,") == 1
    text = md.read_text(encoding="utf-8")
    assert "](images_report_files/data-flow.png)" in text and "](images_report_files/pipeline-diagram.svg)" in text
    for output in (text, page):
        assert "SECRET-BYTES" not in output and base64.b64encode(SECRET_PNG).decode() not in output
        assert str(tmp_path) not in output  # no host path, not even the escaping one's
    assert "- total: 3\n" in text and "total: total" not in text  # a printed label is not repeated
    # the remote image is a plain link in both, never an image to load
    assert "](https://example.invalid/logo.png)" in text and "![logo]" not in text
    assert (
        '<a href="https://example.invalid/logo.png" rel="noopener noreferrer nofollow">' in page
        and 'src="https://' not in page
    )
