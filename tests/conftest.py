"""Shared fixtures. Every test runs with NINI_HOME in a temp dir: nothing touches the real home."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nini.config import Settings, load_settings
from tests.timeouts import scale, timeout

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_CORPORA = REPO_ROOT.parent / "shared" / "corpora"

# Bytecode is cached even where the shell says not to (PYTHONDONTWRITEBYTECODE=1, as on the machines
# here): without it every xdist worker rewrote the asserts of all ~200 test modules again (a third of
# its collection's CPU), and each `nini` process, kernel and server a test starts compiled the
# modules it imports anew. Set here, before the test modules are imported and the workers started.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False


_TEST_UIDS: dict[Path, int] = {}


def sandbox_uid(workspace: Path) -> int:
    """The sandbox uid of ``workspace`` for kernel and R worker pools used without a Runtime (whose
    store allocates them, ``nini.history.uids``): one per workspace in this test process, counted down
    from the top of the range, where no store's sequence reaches."""
    from nini.execution.sandbox import ROOT_UID_BASE, ROOT_UID_SPAN

    worker = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0)
    top = ROOT_UID_BASE + ROOT_UID_SPAN - 1 - worker * 1_000_000  # xdist workers never share a uid
    return _TEST_UIDS.setdefault(Path(workspace), top - len(_TEST_UIDS))


LONGEST = ("tests/test_readme_commands.py", "tests/test_wheel_install.py")  # ~5 and ~1.5 minutes, one worker each


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The longest modules, then the others with slow tests and the browser's, first: ``--dist loadfile``
    with ``--no-loadscope-reorder`` (the Makefile) hands files out in this order, so a long file started
    last would leave the other workers idle at the end of the suite (xdist's own order puts the files
    with the most tests first, which starts these two last)."""
    heavy: dict[str, bool] = {}
    for item in items:
        module = item.nodeid.split("::", 1)[0]
        heavy[module] = (
            heavy.get(module, False) or module.startswith("tests/ui/") or item.get_closest_marker("slow") is not None
        )
    order = {module: index for index, module in enumerate(heavy)}

    def rank(item: pytest.Item) -> tuple[int, int]:
        module = item.nodeid.split("::", 1)[0]
        return (0 if module in LONGEST else 1 if heavy[module] else 2), order[module]

    items.sort(key=rank)
    if scale() > 1:  # NINI_TEST_TIMEOUT_SCALE stretches pytest-timeout's limit too (pyproject's, unless marked)
        limit = timeout(float(config.getini("timeout") or 0))
        for item in items:
            if limit and item.get_closest_marker("timeout") is None:
                item.add_marker(pytest.mark.timeout(limit))


@pytest.fixture(autouse=True)
def nini_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh NINI_HOME per test, and no NINI_* variable from the developer's shell; the locale is
    C.UTF-8 whatever the machine's (``ui.language`` auto follows it: English), so a test of Chinese
    words says so (``LANG=zh_CN.UTF-8`` for a subprocess, ``ui.language`` or ``use_language`` in process)."""
    for key in list(os.environ):
        if key.startswith("NINI_") or key in ("LC_ALL", "LC_MESSAGES"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("LANG", "C.UTF-8")
    home = tmp_path / "nini-home"
    monkeypatch.setenv("NINI_HOME", str(home))
    return home


@pytest.fixture
def chinese_locale(nini_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A Chinese locale (``LANG=zh_CN.UTF-8``), for this process and the ones it starts: ``ui.language``
    auto words nini's messages in the spec's Chinese (``pytestmark = pytest.mark.usefixtures("chinese_locale")``
    for a module of Chinese words)."""
    monkeypatch.setenv("LANG", "zh_CN.UTF-8")


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[Any]:
    """A throwaway PostgreSQL server on 127.0.0.1 for the whole test run (one per xdist worker);
    tests make their own database in it (``pg_cluster.create_database()``)."""
    from tests import pg_cluster as cluster_module

    reason = cluster_module.unavailable()
    if reason:
        pytest.skip(reason)
    cluster = cluster_module.start()
    yield cluster
    cluster.stop()


@pytest.fixture
def settings(nini_home: Path) -> Settings:
    return load_settings()


@pytest.fixture
def project_dir(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


def write_skill(root: Path, folder: str, text: str | bytes, filename: str = "SKILL.md") -> Path:
    """Write ``root/folder/filename`` (creating folders) and return its path."""
    path = root / folder / filename
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def skill_md(
    name: str | None = None, description: str | None = None, body: str = "# Title\n\nBody text.\n", **extra: object
) -> str:
    """A SKILL.md text with the given frontmatter fields (omitted when None)."""
    import yaml

    fields = {k: v for k, v in {"name": name, "description": description, **extra}.items() if v is not None}
    if not fields:
        return body
    return "---\n" + yaml.safe_dump(fields, allow_unicode=True, sort_keys=False) + "---\n" + body


class Harness:
    """A Runtime (with real kernels) on its own event loop, shared by the tests of one module."""

    def __init__(self, loop: asyncio.AbstractEventLoop, runtime: Any) -> None:
        self.loop, self.runtime = loop, runtime

    def call(self, session: Any, skill: str, /, **arguments: Any) -> Any:
        """``invoke(session, skill, arguments)``, run to completion: a ``ToolResult``."""
        from nini.skills.invoke import invoke

        return self.loop.run_until_complete(invoke(session, skill, arguments))

    def session(self, session_id: str | None = None) -> Any:
        return self.runtime.create_session(session_id=session_id)


def runtime_harness(factory: pytest.TempPathFactory, settings_json: dict | None = None) -> Iterator[Harness]:
    """Build a module-scoped ``Harness`` in its own NINI_HOME; close kernels and store after."""
    from nini.runtime import Runtime

    home = factory.mktemp("home")
    if settings_json:
        (home / "settings.json").write_text(json.dumps(settings_json))
    loop = asyncio.new_event_loop()
    runtime = Runtime(load_settings(home=home), project_dir=factory.mktemp("project"))
    try:
        yield Harness(loop, runtime)
    finally:
        loop.run_until_complete(runtime.aclose())
        loop.close()


def execute_in_kernel(
    manager: Any,
    client: Any,
    code: str,
    hook: Any,
    *,
    interrupt_after: float | None = None,
    answers: list[str] | None = None,
    prompts: list[str] | None = None,
) -> None:
    """Run ``code`` in a started kernel, each output message to ``hook``; with ``interrupt_after``,
    the kernel is interrupted after that many seconds, as a user stopping the cell would; with
    ``answers``, each ``input()`` of the code gets the next one, as a user typing would (and its
    prompt is added to ``prompts``)."""
    timer = threading.Timer(interrupt_after, manager.interrupt_kernel) if interrupt_after else None
    if timer:
        timer.start()
    stdin: dict[str, Any] = {}
    if answers is not None:
        queue = list(answers)
        asked = prompts if prompts is not None else []

        def answer(message: dict[str, Any]) -> None:
            asked.append(message["content"].get("prompt", ""))
            client.input(queue.pop(0) if queue else "")

        stdin = {"allow_stdin": True, "stdin_hook": answer}
    try:
        client.execute_interactive(code, output_hook=hook, timeout=timeout(120), **stdin)
    finally:
        if timer:
            timer.cancel()


def scripted_model_settings(llm: Any | None) -> dict[str, Any]:
    """settings.json values pointing nini at a scripted model server (``tests/llm_server.py``), with
    no retries so each scripted reply is one request; ``None`` configures no model at all."""
    providers = [{"name": "local", "kind": "openai", "base_url": llm.base_url, "model": "m"}] if llm else []
    return {"llm": {"providers": providers, "max_retries": 0}}


def without_approval(values: dict[str, Any]) -> dict[str, Any]:
    """``values`` with ``execution.approve_in_user_kernel`` off, for tests of the user's kernel that
    are about something else: approval is on by default and has tests of its own
    (tests/jupyter_ext/test_approvals_api.py, test_magic_ask.py, tests/ui/test_where_code_runs.py)."""
    return {**values, "execution": {**values.get("execution", {}), "approve_in_user_kernel": False}}


def recorded_turn(session_id: str, n: int, output: str) -> list[dict[str, Any]]:
    """The stored messages of a long session's turn ``n`` (1-based), as the agent records them: a
    request, a run_code call, its output ``output``, an answer. Turn 5 drops a column and saves the
    result as ``sales_clean`` (the early decision a long session must not forget)."""
    if n == 5:
        request, label, save_as = "drop the region_code column from sales", "drop region_code", "sales_clean"
        code = "output_df = df.drop(columns=['region_code'])"
        answer = "Dropped region_code: sales_clean has 1,200 rows."
    else:
        request, label, save_as = f"what is the mean revenue of batch {n}?", f"mean of batch {n}", None
        code, answer = "result = df.revenue.mean()", f"The mean revenue of batch {n} is {n}.5."
    arguments = json.dumps({"code": code, "label": label, **({"save_as": save_as} if save_as else {})})
    call = {"id": f"c{n}", "name": "run_code", "arguments": arguments}
    result = json.dumps({"success": True, "stdout": output, "result": n + 0.5})
    base = {
        "session_id": session_id,
        "turn_id": f"t{n:05d}",
        "tool_call_id": None,
        "created_at": "2026-01-01T00:00:00Z",
    }
    return [
        {**base, "role": "user", "content": request, "metadata": None},
        {**base, "role": "assistant", "content": None, "metadata": {"tool_calls": [call]}},
        {**base, "role": "tool", "content": result, "tool_call_id": f"c{n}", "metadata": {"name": "run_code"}},
        {**base, "role": "assistant", "content": answer, "metadata": {"tool_calls": []}},
    ]


def record_turns(store: Any, session_id: str, turns: int, output: str) -> int:
    """``turns`` turns (``recorded_turn``) written into session ``session_id`` of ``store`` in one
    insert (a test or benchmark of reading long sessions need not run them); how many messages."""
    from nini.history.schema import messages

    rows = [row for n in range(1, turns + 1) for row in recorded_turn(session_id, n, output)]
    with store.writing() as conn:
        conn.execute(messages.insert(), rows)
    return len(rows)


def record_sessions(*session_ids: str, home: Path | None = None) -> None:
    """Sessions ``session_ids`` in the history of ``home`` (None: ``$NINI_HOME``), owned as the CLI's
    are: what ``nini run-code --session ID --new`` records, without a CLI or a kernel start (for a
    test whose subject is not how the sessions got there)."""
    from nini.history.store import HistoryStore

    settings = load_settings(home)
    store = HistoryStore.from_settings(settings)
    try:
        for session_id in session_ids:
            store.create_session(session_id=session_id, owner=settings.session_owner)
    finally:
        store.close()


def write_settings(home: Path, values: dict[str, Any]) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "settings.json").write_text(json.dumps(values))


@pytest.fixture
def nini_logger() -> Iterator[logging.Logger]:
    """Undo what configure_logging does to the global ``nini`` logger, whatever the test did."""
    logger = logging.getLogger("nini")
    before_handlers, before_level = list(logger.handlers), logger.level
    yield logger
    for handler in list(logger.handlers):
        if handler not in before_handlers:
            logger.removeHandler(handler)
            handler.close()
    for handler in before_handlers:
        if handler not in logger.handlers:
            logger.addHandler(handler)
    logger.setLevel(before_level)


@pytest.fixture
def llm_server() -> Iterator[Any]:
    """A started ``tests.llm_server.ScriptedLLM`` (script it with ``.reply(...)``), stopped after the test."""
    from tests.llm_server import ScriptedLLM

    with ScriptedLLM() as server:
        yield server
