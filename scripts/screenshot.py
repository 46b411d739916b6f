"""Make docs/images/sidebar.png: the nini sidebar at work, as README shows it.

A tool, not a test: it starts the real `jupyter lab` with nini and Debian's Chromium the way the browser
tests do (tests/ui/conftest.py), with the scripted OpenAI-compatible model of tests/llm_server.py giving
the model's replies, so the picture can be made again after the sidebar changes:

    .venv/bin/python scripts/screenshot.py            # writes docs/images/sidebar.png
    .venv/bin/python scripts/screenshot.py --out x.png

Everything on the picture is real: the question is typed into the chat, the step runs the scripted code
in the session's sandboxed kernel on the bundled examples/data/sales.csv (uploaded into the session as
a user drops a file), and the answer streams in. The PNG is reduced with Pillow (when installed) to stay
small enough for a README.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.llm_server import ScriptedLLM, text, tool_call  # noqa: E402
from tests.ui.conftest import (  # noqa: E402
    CHROMIUM,
    CHROMIUM_ARGS,
    Lab,
    ask,
    missing_for_browser_tests,
    open_session,  # noqa: E402
    open_sidebar,
    wait_idle,
    widen_sidebar,
)

QUESTION = "Which region sells most? Chart revenue by region."
CODE = """import matplotlib.pyplot as plt
by_region = df.groupby("region")["revenue"].sum().sort_values(ascending=False)
print(by_region.to_string())
ax = by_region.plot.barh(title="Revenue by region", figsize=(5, 2.0))
ax.invert_yaxis()
plt.tight_layout()
result = by_region.idxmax()"""
NOTEBOOK = {
    "cells": [
        {
            "cell_type": "markdown",
            "metadata": {},
            "source": "# Sales 2025\n\nRevenue of four regions and three products, "
            "month by month (`examples/data/sales.csv`).",
        },
        {
            "cell_type": "code",
            "metadata": {},
            "outputs": [],
            "execution_count": None,
            "source": "import pandas as pd\n\nsales = pd.read_csv('sales.csv')\nsales.head()",
        },
    ],
    "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
    "nbformat": 4,
    "nbformat_minor": 5,
}
ANSWER = (
    "**East** sells most: its revenue is the largest of the four regions over the twelve months "
    "(see the chart). South follows; the step's table gives every region's total."
)
SESSION = "sales-by-region"
VIEWPORT = {"width": 1280, "height": 920}
MAX_BYTES = 300_000


def upload(lab: Lab, session: str, data: Path) -> None:
    """The CSV into the session's workspace, loaded as its dataset (what the sidebar's drop does)."""
    request = urllib.request.Request(
        f"{lab.url}/nini/api/sessions/{session}/files?name={data.name}&load=1",
        data=data.read_bytes(),
        method="POST",
        headers={"Authorization": f"token {lab.token}"},
    )
    with urllib.request.urlopen(request, timeout=120) as response:
        assert response.status == 201, response.status


def shoot(out: Path) -> None:
    reason = missing_for_browser_tests()
    if reason:
        raise SystemExit(f"screenshot: {reason}")
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="nini-screenshot-") as folder, ScriptedLLM() as llm:
        lab = Lab(Path(folder), llm, settings={"ui": {"language": "en"}})
        try:
            shutil.copy(REPO / "examples" / "data" / "sales.csv", lab.notebooks)
            (lab.notebooks / "sales.ipynb").write_text(json.dumps(NOTEBOOK))
            lab.nini("POST", "sessions", {"title": "Sales by region", "id": SESSION})
            upload(lab, SESSION, REPO / "examples" / "data" / "sales.csv")
            llm.reply(
                tool_call("run_code", code=CODE, dataset_name="sales", label="revenue by region"),
                text(ANSWER, chunks=6),
            )
            with sync_playwright() as driver:
                browser = driver.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
                page = browser.new_page(viewport=VIEWPORT)
                page.set_default_timeout(60_000)
                page.goto(f"{lab.url}/lab/tree/sales.ipynb?token={lab.token}")
                page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=90_000)
                open_sidebar(page)
                widen_sidebar(page, by=300)
                open_session(page, SESSION)
                ask(page, QUESTION)
                page.wait_for_selector(".nini-assistant strong", timeout=120_000)
                wait_idle(page, timeout_ms=120_000)
                step = page.locator('.nini-log > .nini-step[data-name="run_code"]').first
                chart = step.locator("img.nini-chart")
                try:
                    chart.wait_for()
                except Exception:
                    page.screenshot(path=str(out.with_suffix(".failed.png")))
                    raise SystemExit(f"screenshot: the step shows no chart: {step.inner_text()[:2000]}") from None
                page.wait_for_function("img => img.complete && img.naturalWidth > 100", arg=chart.element_handle())
                # the conversation from the question on: the step, its chart, the answer and the turn's line
                page.locator(".nini-user").last.evaluate("question => question.scrollIntoView({block: 'start'})")
                out.parent.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(out))
                browser.close()
        finally:
            lab.stop()
    shrink(out)


def shrink(path: Path) -> None:
    """Fewer colours (a UI has few) until the PNG is under MAX_BYTES; unchanged without Pillow."""
    try:
        from PIL import Image
    except ImportError:
        return
    original = Image.open(path).convert("RGB")
    for colours in (256, 128, 64):
        original.quantize(colors=colours, method=Image.Quantize.MEDIANCUT).save(path, optimize=True)
        if path.stat().st_size < MAX_BYTES:
            return


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "images" / "sidebar.png")
    out = parser.parse_args().out
    shoot(out)
    print(f"{out} ({out.stat().st_size // 1000} KB)")


if __name__ == "__main__":
    main()
