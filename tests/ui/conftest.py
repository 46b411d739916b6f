"""A real `jupyter lab` with nini, driven by Debian's Chromium (headless, through Playwright's
Python driver; no browser is downloaded), against the scripted model server of tests/.

The lab runs on 127.0.0.1 with a token, its own NINI_HOME, Jupyter config, settings and workspace
folders, so nothing of the machine's own setup leaks in. One lab per xdist worker serves every module
under default settings (``lab``), put back to its start before each (tests/ui/clean_lab.py); a module
needing other settings starts its own. These tests skip, saying why, where
Chromium, Playwright or the built labextension is missing; `make test` installs all three.
Screenshots of each state land in test-output/ui/ (or $NINI_UI_SCREENSHOTS).
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests import timeouts
from tests.conftest import REPO_ROOT, scripted_model_settings
from tests.llm_server import ScriptedLLM
from tests.ui.clean_lab import StartState, reset

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]
LABEXTENSION = Path(sys.prefix) / "share" / "jupyter" / "labextensions" / "nini" / "package.json"
SCREENSHOTS = Path(os.environ.get("NINI_UI_SCREENSHOTS", REPO_ROOT / "test-output" / "ui"))
NO_NEWS = {"fetchNews": "false", "checkForUpdates": False}
# A key variable set on the shared lab's server, for the Models tab's "is set on the server" (test_models_guided.py)
SET_KEY = "D33_GUIDED_TEST_API_KEY"


def missing_for_browser_tests() -> str | None:
    """Why the browser tests cannot run here, or None."""
    if not Path(CHROMIUM).is_file():
        return "Chromium is not installed (make test installs Debian's chromium as root)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright package is missing (pip install -e '.[dev]')"
    if not LABEXTENSION.is_file():
        return f"nini's labextension is not installed in {sys.prefix} (it is built by pip install, which needs npm)"
    return None


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Lab:
    """`jupyter lab` in a subprocess, and its REST API."""

    def __init__(
        self,
        root: Path,
        llm: ScriptedLLM,
        *,
        settings: dict | None = None,
        environment: dict[str, str] | None = None,
        wait: bool = True,
    ) -> None:
        """Start the lab (``environment``: variables its process has besides the machine's); with
        ``wait=False`` return at once: call ``wait()`` before using it."""
        self.root, self.port, self.token = root, free_port(), secrets.token_hex(16)
        self.home, self.notebooks = root / "nini-home", root / "notebooks"
        for folder in (
            self.home,
            self.notebooks,
            root / "config" / "labconfig",
            root / "lab-settings",
            root / "workspaces",
        ):
            folder.mkdir(parents=True, exist_ok=True)
        values = scripted_model_settings(llm) | (settings or {})
        (self.home / "settings.json").write_text(json.dumps(values))
        notification = root / "lab-settings" / "@jupyterlab" / "apputils-extension"
        notification.mkdir(parents=True)
        (notification / "notification.jupyterlab-settings").write_text(json.dumps(NO_NEWS))
        notebooks = root / "lab-settings" / "@jupyterlab" / "notebook-extension"
        notebooks.mkdir(parents=True)  # a notebook opens with its kernel, not a "Select Kernel" dialog
        (notebooks / "tracker.jupyterlab-settings").write_text(json.dumps({"autoStartDefaultKernel": True}))
        env = {k: v for k, v in os.environ.items() if not k.startswith(("NINI_", "JUPYTER"))}
        env.update(
            NINI_HOME=str(self.home),
            JUPYTER_CONFIG_DIR=str(root / "config"),
            JUPYTER_RUNTIME_DIR=str(root / "runtime"),
            JUPYTERLAB_SETTINGS_DIR=str(root / "lab-settings"),
            JUPYTERLAB_WORKSPACES_DIR=str(root / "workspaces"),
            PYTHONPATH=str(REPO_ROOT),
        )
        env.update(environment or {})
        command = [
            str(Path(sys.executable).with_name("jupyter")),
            "lab",
            "--no-browser",
            "--allow-root",
            f"--port={self.port}",
            "--ServerApp.ip=127.0.0.1",
            f"--IdentityProvider.token={self.token}",
            f"--ServerApp.root_dir={self.notebooks}",
            "--ServerApp.port_retries=0",
            # jupyter_lsp's search for language servers (an Rscript run among them) at each lab's start:
            # nothing of nini's, and CPU the lab's own start competes with on a loaded machine
            "--LanguageServerManager.autodetect=False",
        ]
        self.log = (root / "lab.log").open("w")
        self.process = subprocess.Popen(command, env=env, stdout=self.log, stderr=subprocess.STDOUT, cwd=self.notebooks)
        if wait:
            self.wait()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def wait(self) -> None:
        deadline = time.monotonic() + timeouts.timeout(90)
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"jupyter lab exited: {(self.root / 'lab.log').read_text()[-2000:]}")
            try:
                self.get("/api/status")
                return
            except OSError:
                time.sleep(0.3)
        raise TimeoutError(f"jupyter lab did not answer in {timeouts.timeout(90):g} s")

    @contextmanager
    def without_frontend(self) -> Iterator[None]:
        """nini's frontend disabled for the pages loaded meanwhile (the server reads its page config at each
        page load): the negative control, the same lab without it."""
        config = self.root / "config" / "labconfig" / "page_config.json"
        config.write_text(json.dumps({"disabledExtensions": {"nini": True}}))
        try:
            yield
        finally:
            config.unlink()

    def request(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            f"{self.url}{path}", data=data, method=method, headers={"Authorization": f"token {self.token}"}
        )
        with urllib.request.urlopen(request, timeout=timeouts.timeout(30)) as response:
            return json.loads(response.read() or b"null")

    def get(self, path: str) -> Any:
        return self.request("GET", path)

    def kernels(self) -> list[dict]:
        """GET /api/kernels, asked again while jupyter_server answers 500 for a kernel it lists before it has
        given it ``last_activity`` (a race in its start_kernel: the kernel joins the list one await early)."""
        deadline = time.monotonic() + timeouts.timeout(30)
        while True:
            try:
                return self.get("/api/kernels")
            except urllib.error.HTTPError as error:
                if error.code != 500 or time.monotonic() > deadline:
                    raise
            time.sleep(0.1)  # a poll: the list is whole once start_kernel's next step has run

    def nini(self, method: str, path: str, body: Any = None) -> Any:
        """A nini endpoint's data (the envelope's ``data``)."""
        reply = self.request(method, f"/nini/api/{path}", body)
        assert reply["ok"] is True, reply
        return reply["data"]

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=timeouts.timeout(20))
        except subprocess.TimeoutExpired:
            self.process.kill()
        self.log.close()


@pytest.fixture(scope="session")
def scripted_llm() -> Iterator[ScriptedLLM]:
    """The worker's scripted model server, shared by its modules (each gets it emptied: ``llm``)."""
    with ScriptedLLM() as server:
        yield server


def forget(server: ScriptedLLM) -> ScriptedLLM:
    """``server`` as a module finds it fresh: no reply queued, no request recorded."""
    server.clear()
    with server._lock:  # the handler threads append under it
        for recorded in (server.requests, server.request_headers, server.paths, server.disconnected):
            recorded.clear()
    return server


@pytest.fixture(scope="module")
def llm(scripted_llm: ScriptedLLM) -> ScriptedLLM:
    """The scripted model, emptied for this module: what a module queues and reads is its own."""
    return forget(scripted_llm)


class SharedChromium:
    """Playwright's driver and one Chromium, started once per xdist worker: the driver's start alone
    costs 2-10 s on a loaded 2-core machine, and each module paid it with a browser of its own. Each
    module still gets pages of their own (``browser.new_page`` makes a new context: no cookie, storage
    or cache of a module before), and the contexts a module left open are closed at its end.

    Playwright's sync API leaves its event loop marked as the thread's running loop after each call
    (playwright/_impl/_greenlets.py), which makes asyncio.run and pytest's asyncio tests of the other
    modules on the worker refuse to start. So between the UI modules the mark is taken off (``awake``
    puts it back for a module's time), as closing the driver did when each module had its own."""

    def __init__(self) -> None:
        self._manager: Any = None  # playwright's PlaywrightContextManager, entered
        self._driver: Any = None
        self._browser: Any = None

    @contextmanager
    def awake(self) -> Iterator[Any]:
        """The browser, for one module."""
        if self._manager is None:
            from playwright.sync_api import sync_playwright

            self._manager = sync_playwright()
            self._driver = self._manager.__enter__()
        else:
            asyncio._set_running_loop(self._manager._loop)  # as the module's last call left it
        try:
            if self._browser is None or not self._browser.is_connected():  # a crash is not passed on
                self._browser = self._driver.chromium.launch(
                    executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
                )
            yield self._browser
            for context in self._browser.contexts:  # a page a failed test left open
                context.close()
        finally:
            asyncio._set_running_loop(None)

    def stop(self) -> None:
        if self._manager is None:
            return
        asyncio._set_running_loop(self._manager._loop)
        try:
            if self._browser is not None and self._browser.is_connected():
                self._browser.close()
        finally:
            self._manager.__exit__(None, None, None)


@pytest.fixture(scope="session")
def chromium() -> Iterator[SharedChromium]:
    """The worker's Playwright and Chromium (see ``SharedChromium``)."""
    reason = missing_for_browser_tests()
    if reason:
        pytest.skip(reason)
    shared = SharedChromium()
    try:
        yield shared
    finally:
        shared.stop()


@pytest.fixture(scope="module")
def browser(chromium: SharedChromium) -> Iterator[Any]:
    """The worker's Chromium, for this module's pages."""
    with chromium.awake() as launched:
        yield launched


@pytest.fixture(scope="session")
def shared_lab(tmp_path_factory: pytest.TempPathFactory, scripted_llm: ScriptedLLM) -> Iterator[tuple[Lab, StartState]]:
    """The worker's one lab under default settings, and the state it started in. A module that needs
    other settings (approval off, a named user, a language, no provider...) starts its own ``Lab``."""
    reason = missing_for_browser_tests()
    if reason:
        pytest.skip(reason)
    started = Lab(
        tmp_path_factory.mktemp("shared-lab"), scripted_llm, environment={SET_KEY: "sk-guided-not-a-real-key"}
    )
    try:
        yield started, StartState.of(started)
    finally:
        started.stop()


@pytest.fixture(scope="module")
def lab(shared_lab: tuple[Lab, StartState], llm: ScriptedLLM) -> Lab:
    """The shared lab, put back as it started (tests/ui/clean_lab.py) whatever the modules before did:
    a module sees it as fresh as a lab of its own, and no test depends on the order modules run in."""
    started, start = shared_lab
    reset(started, start)
    forget(llm)  # what the cancelled runs of the module before still asked
    return started


def new_page(browser: Any, lab: Lab) -> Any:
    page = browser.new_page(viewport={"width": 1440, "height": 960})
    page.set_default_timeout(timeouts.timeout_ms(60))  # every wait below without its own limit
    page.goto(f"{lab.url}/lab?token={lab.token}")
    page.wait_for_selector("#jp-main-dock-panel")
    return page


@contextmanager
def watched_page(browser: Any, lab: Lab) -> Iterator[Any]:
    """A page of the lab that fails the test at its end when nini raised an error in the page."""
    opened = new_page(browser, lab)
    errors: list[str] = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    yield opened
    opened.close()
    assert not [e for e in errors if "nini" in e.lower()], errors


@pytest.fixture(scope="module")
def page(browser: Any, lab: Lab) -> Iterator[Any]:
    """One watched page of the module's lab, shared by its tests (a module needing more overrides it)."""
    with watched_page(browser, lab) as opened:
        yield opened


def open_sidebar(page: Any, timeout_ms: float | None = None) -> None:
    """Click nini's tab in the left bar and wait for the chat: what a user does first. Not when the chat
    is up already: clicking the current tab folds the sidebar away."""
    if not page.is_visible("#nini-panel .nini-chat .nini-input"):
        page.click('.jp-SideBar.jp-mod-left [data-id="nini-panel"]', timeout=timeout_ms)
    page.wait_for_selector("#nini-panel .nini-chat .nini-input", state="visible", timeout=timeout_ms)


def widen_sidebar(page: Any, by: int = 260) -> None:
    """Drag the left sidebar's edge to the right, as a user does for a roomier chat."""
    handle = page.locator("#jp-main-split-panel > .lm-SplitPanel-handle").first
    box = handle.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + 200)
    page.mouse.down()
    page.mouse.move(box["x"] + by, box["y"] + 200, steps=5)
    page.mouse.up()


def ask(page: Any, question: str) -> None:
    """Type a question in the chat and press Enter, as a user does."""
    page.fill(".nini-input", question)
    page.press(".nini-input", "Enter")


def wait_idle(page: Any, timeout_ms: float | None = None) -> None:
    """Until the chat's turn is over (its `done` event drawn)."""
    page.wait_for_selector('.nini-chat[data-running="false"]', state="attached", timeout=timeout_ms)


def current_session(page: Any) -> str:
    """The id of the session the chat shows ('' for a new chat)."""
    return page.get_attribute(".nini-sessions", "data-session") or ""


def open_session(page: Any, session_id: str | None = None) -> str:
    """Open a past session from the chat's session list, as a user does: ``session_id``, or the newest;
    its id."""
    if page.get_attribute(".nini-sessions", "aria-expanded") != "true":
        page.click(".nini-sessions")
    item = f'.nini-session-item[data-id="{session_id}"]' if session_id else ".nini-session-item"
    page.locator(f"{item} .nini-session-open").first.click()
    page.wait_for_function(
        "id => document.querySelector('.nini-sessions').dataset.session === id || (!id && "
        "document.querySelector('.nini-sessions').dataset.session)",
        arg=session_id or "",
    )
    return current_session(page)


def wait_for_connected_kernel(lab: Lab, timeout_s: float = 60) -> None:
    """Until the notebook's kernel is idle with the page connected to it: a cell run before is dropped."""
    timeout_s = timeouts.timeout(timeout_s)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if any(k["execution_state"] == "idle" and k["connections"] > 0 for k in lab.kernels()):
            return
        time.sleep(0.2)
    raise TimeoutError(f"no connected idle kernel in {timeout_s:g} s: {lab.kernels()}")


def show_files(page: Any) -> None:
    """Bring the file browser up (clicking its tab when it is already up would fold it away)."""
    if not page.is_visible("#filebrowser"):
        page.click('.jp-SideBar.jp-mod-left [data-id="filebrowser"]')
    page.wait_for_selector("#filebrowser", state="visible")


def open_notebook(page: Any, lab: Lab, name: str, source: str) -> None:
    """Write a one-cell notebook, open it in the lab and run its cell, as a user does."""
    lab.request(
        "PUT",
        f"/api/contents/{name}",
        {
            "type": "notebook",
            "content": {
                "cells": [
                    {"cell_type": "code", "source": source, "metadata": {}, "outputs": [], "execution_count": None}
                ],
                "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
                "nbformat": 4,
                "nbformat_minor": 5,
            },
        },
    )
    show_files(page)
    page.dblclick(f'.jp-DirListing-item[title*="{name}"]')
    page.wait_for_selector(".jp-Notebook .jp-Cell")
    wait_for_connected_kernel(lab)
    page.click(".jp-Notebook .jp-Cell .jp-InputArea-editor")
    page.keyboard.press("Shift+Enter")
    page.wait_for_selector(".jp-Notebook .jp-Cell .jp-InputPrompt:has-text('[1]')")


def screenshot(page: Any, name: str) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path))
    return path


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """A failed browser test leaves a screenshot of the page as it was: failed-<test>.png."""
    outcome = yield
    report = outcome.get_result()
    page = getattr(item, "funcargs", {}).get("page")
    if report.when == "call" and report.failed and page is not None:
        try:
            screenshot(page, f"failed-{item.name}")
        except Exception:  # the page may be gone with the browser; the failure itself is what counts
            pass
