"""The sidebar's export button, in a real `jupyter lab` and Chromium (issue 31, item 6): by default it
downloads a notebook whose steps re-run in nini's sandbox; unticked, plain cells, saying so."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest

from tests.ui.conftest import Lab, open_session, open_sidebar, screenshot, watched_page

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def session(lab: Lab) -> str:
    """A session with one step, made before the page loads (the chat lists sessions when it starts)."""
    made = lab.nini("POST", "sessions", {"title": "exported"})["id"]
    assert lab.nini("POST", f"sessions/{made}/run-code", {"code": "print(6 * 7)", "label": "answer"})["success"] is True
    return made


@pytest.fixture(scope="module")
def page(browser: Any, lab: Lab, session: str) -> Iterator[Any]:
    with watched_page(browser, lab) as opened:
        yield opened


def download(page: Any, selector: str, folder: Path) -> nbformat.NotebookNode:
    with page.expect_download() as waiting:
        page.click(selector)
    path = folder / waiting.value.suggested_filename
    waiting.value.save_as(path)
    return nbformat.read(path, as_version=4)


def test_the_export_button_gives_a_sandboxed_notebook_by_default(page: Any, session: str, tmp_path: Path) -> None:
    open_sidebar(page)
    open_session(page, session)
    page.click('#nini-panel .lm-TabBar-tab:has-text("Reports")')
    button = page.locator(".nini-export-notebook")
    button.wait_for(state="visible")
    assert page.locator(".nini-export-sandboxed").is_checked()
    screenshot(page, "export-button")

    contained = download(page, ".nini-export-notebook", tmp_path)
    assert "%%nini_run" in contained.cells[0].source
    (step,) = [c for c in contained.cells if "nini-agent-code" in c.metadata.get("tags", [])]
    assert step.source.startswith("%%nini_run --label=answer") and step.source.endswith("print(6 * 7)")

    page.uncheck(".nini-export-sandboxed")
    plain = download(page, ".nini-export-notebook", tmp_path / "plain")
    (step,) = [c for c in plain.cells if "nini-agent-code" in c.metadata.get("tags", [])]
    assert step.source == "print(6 * 7)" and "without a sandbox" in plain.cells[0].source  # the sidebar's language
