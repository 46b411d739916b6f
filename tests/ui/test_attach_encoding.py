"""Attaching a file in any encoding from JupyterLab's file browser (issue 35, item 6): a real
`jupyter lab` in Debian's Chromium, the scripted model.

A GBK CSV (which Jupyter's contents API cannot read as text) attached through the file browser's
"nini: Attach file to question" shows as a chip naming the encoding nini read it with, and the ask
carries its decoded text, which reaches the model (the Chinese column name in the model's request).
A binary file is refused with nini's message naming it, and attaches nothing.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.llm_server import ScriptedLLM, text
from tests.ui.conftest import Lab, ask, open_sidebar, show_files, wait_idle

pytestmark = pytest.mark.slow

TABLE = "地区,销售额\n华北,10\n华南,12\n"
FILE_CHIPS = '.nini-context .nini-chip[data-kind="file"]'


def attach_from_file_browser(page: Any, name: str) -> None:
    """Right-click ``name`` in the file browser and choose nini's attach command, as a user does."""
    show_files(page)
    page.click(f'.jp-DirListing-item[title*="{name}"]', button="right")
    page.click('.lm-Menu-item:has-text("nini: Attach file to question")')


def test_a_gbk_csv_attaches_decoded_and_its_chip_names_the_encoding(page: Any, lab: Lab, llm: ScriptedLLM) -> None:
    (lab.notebooks / "sales_gbk.csv").write_bytes(TABLE.encode("gbk"))
    open_sidebar(page)
    attach_from_file_browser(page, "sales_gbk.csv")
    chip = page.locator(FILE_CHIPS)
    chip.wait_for()
    assert chip.inner_text().strip() == "sales_gbk.csv (gb18030)"
    assert chip.get_attribute("title") == "sales_gbk.csv · encoding gb18030, detected as nini loads it (not UTF-8)"
    assert page.locator(".nini-request-error").count() == 0
    llm.reply(text("The table has two regions."))
    with page.expect_request(lambda r: r.url.split("?")[0].endswith("/ask") and r.method == "POST") as asked:
        ask(page, "What is in the attached file?")
    assert asked.value.post_data_json["notebook"]["attached_files"] == {"sales_gbk.csv": TABLE}
    page.wait_for_selector(".nini-assistant:has-text('two regions')")
    wait_idle(page)
    request = next(r for r in llm.requests if "What is in the attached file?" in str(r["messages"]))
    assert "地区,销售额" in request["messages"][0]["content"]  # the model's prompt shows the decoded text
    assert page.locator(FILE_CHIPS).count() == 0  # it went with the question


def test_a_binary_file_is_refused_naming_it(page: Any, lab: Lab) -> None:
    (lab.notebooks / "chart.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 4)
    attach_from_file_browser(page, "chart.png")
    refusal = page.locator(".nini-request-error", has_text="'chart.png' is not text")
    refusal.wait_for()
    assert str(lab.root) not in refusal.inner_text()  # no host path in what the user reads
    assert page.locator(FILE_CHIPS).count() == 0
