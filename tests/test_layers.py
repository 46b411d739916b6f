"""The layers of nini hold: every import between nini's packages points down (issue 37).

Each module of ``nini``, ``jupyter_ext`` and ``r_sandbox`` belongs to one layer group (``LAYERS``, by
module prefix, the most specific prefix wins). A module may import only modules of its own group or
of a lower layer: at run time, under ``if TYPE_CHECKING:`` and inside a function alike (a type-only
import still ties the two modules' designs together, and it is how the old ``Session`` -> ``Runtime``
circle of 29 files formed). Imports are read from the source with ``ast``, relative ones resolved,
``importlib.import_module("...")`` and ``__import__("...")`` with a literal name included, so nothing
has to be imported to be checked. docs/development.md ("Architecture: layers") has the picture.

An exception goes into ``ALLOWED`` with its reason; the aim is an empty list, and an entry that is no
longer needed fails the test, so the list only shrinks. A module no prefix maps fails too: a new
top-level module cannot slip past the contract by having no layer.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

ROOTS = ("nini", "jupyter_ext", "r_sandbox")

# Layer groups, lowest first: (level, the other groups of the same level it may import).
# Two groups on one level are apart unless named here: history and execution know nothing of each
# other; r_sandbox imports no nini module at all; core nini never imports jupyter_ext, except the
# ``%load_ext nini`` shim in nini/__init__.py (IPython looks the hook up on the module it is given).
# The root package itself (``from nini import __version__``, ``import nini`` to find its folder) may be
# imported by every nini module: Python has run it before any of them anyway, so naming it adds no tie.
GROUPS: dict[str, tuple[int, frozenset[str]]] = {
    "foundation": (0, frozenset()),
    "r_sandbox": (0, frozenset()),
    "history": (1, frozenset()),
    "execution": (1, frozenset()),
    "session": (2, frozenset()),
    "memory": (3, frozenset()),
    "report": (4, frozenset()),
    "skills": (5, frozenset()),
    "agent": (6, frozenset()),
    "runtime": (7, frozenset()),
    "entry": (8, frozenset()),
    "jupyter_ext": (8, frozenset({"entry", "shim"})),
    "shim": (8, frozenset({"entry", "jupyter_ext"})),
}

# Module prefix -> layer group. A prefix covers the module of that name and everything beneath it,
# except the root package ``nini``, which covers nini/__init__.py only: every other nini module is
# named here, so a new one must be given a layer.
LAYERS: dict[str, str] = {
    "nini.errors": "foundation",
    "nini.config": "foundation",
    "nini.settings_execution": "foundation",  # sections of nini.config's Settings, re-exported there
    "nini.settings_sections": "foundation",
    "nini.language": "foundation",
    "nini.fsutil": "foundation",
    "nini.rooted": "foundation",
    "nini.limits": "foundation",
    "nini.logs": "foundation",
    "nini.redact": "foundation",
    "nini.owners": "foundation",
    "nini.tokens": "foundation",
    "nini.notebook": "foundation",
    "nini.safe_html": "foundation",
    "r_sandbox": "r_sandbox",
    "nini.history": "history",
    "nini.execution": "execution",
    "nini.session": "session",
    "nini.memory": "memory",
    "nini.report": "report",
    "nini.skills": "skills",
    "nini.mcp": "skills",  # the package's __init__ (a docstring) goes with its client
    "nini.mcp.client": "skills",
    "nini.agent": "agent",
    "nini.runtime": "runtime",
    "nini.runtime_sessions": "runtime",  # the session book-keeping Runtime inherits
    "nini.doctor": "runtime",
    "nini.cli": "entry",
    "nini.mcp.server": "entry",
    "jupyter_ext": "jupyter_ext",
    "nini": "shim",
}
ROOT_ONLY = "nini"  # the prefix that covers its own module only

# (importer, imported, reason): the imports the contract must allow for now. The aim is an empty list.
ALLOWED: list[tuple[str, str, str]] = []


@dataclass(frozen=True)
class Import:
    """One import of a module of ROOTS, where it is written."""

    importer: str
    imported: str
    path: Path
    line: int

    def where(self, root: Path) -> str:
        return f"{self.path.relative_to(root)}:{self.line}"


def modules(root: Path) -> dict[str, Path]:
    """Every module of ROOTS under ``root``: name -> file. A folder counts only when it and every
    folder above it up to its root is a package (has ``__init__.py``): the frontend's node_modules
    hold stray .py files that are no part of nini."""
    found: dict[str, Path] = {}
    for top in ROOTS:
        for path in sorted((root / top).rglob("*.py")):
            folders = path.relative_to(root).parts[:-1]
            if not all(
                (root.joinpath(*folders[: depth + 1]) / "__init__.py").is_file() for depth in range(len(folders))
            ):
                continue
            parts = list(folders) if path.name == "__init__.py" else [*folders, path.stem]
            found[".".join(parts)] = path
    return found


def group_of(module: str) -> str | None:
    """The layer group of ``module`` by the most specific prefix in LAYERS; None when none maps it."""
    parts = module.split(".")
    for length in range(len(parts), 0, -1):
        prefix = ".".join(parts[:length])
        if prefix in LAYERS and (prefix != ROOT_ONLY or prefix == module):
            return LAYERS[prefix]
    return None


def may_import(importer: str, imported: str) -> bool:
    """Whether the contract lets ``importer`` import ``imported`` (both mapped)."""
    mine, theirs = group_of(importer), group_of(imported)
    assert mine is not None and theirs is not None
    level, sideways = GROUPS[mine]
    if imported == ROOT_ONLY and importer.startswith(f"{ROOT_ONLY}."):
        return True
    return mine == theirs or GROUPS[theirs][0] < level or theirs in sideways


def imports_of(module: str, path: Path, known: set[str]) -> list[Import]:
    """Every import of a ROOTS module written in ``path`` (anywhere in it: top level, under
    TYPE_CHECKING, inside functions). ``from X import name`` counts as importing ``X.name`` when that
    is a module, else ``X``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[Import] = []

    def add(name: str, line: int) -> None:
        if name.split(".")[0] in ROOTS:
            found.append(Import(module, name, path, line))

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base, node.lineno)
        elif isinstance(node, ast.Call) and _dynamic_import(node):
            add(node.args[0].value, node.lineno)  # type: ignore[attr-defined]
    return found


def _dynamic_import(call: ast.Call) -> bool:
    """``importlib.import_module("a.b")``, ``import_module("a.b")`` or ``__import__("a.b")``."""
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    first = call.args[0] if call.args else None
    return name in ("import_module", "__import__") and isinstance(first, ast.Constant) and isinstance(first.value, str)


@functools.cache
def all_imports(root: Path) -> list[Import]:
    """Every import of every module under ``root``; read once per tree (a test's tree is written whole
    before it is checked)."""
    found = modules(root)
    known = set(found)
    return [imp for name, path in found.items() for imp in imports_of(name, path, known)]


def unmapped(root: Path) -> list[str]:
    """Modules under ``root`` that no LAYERS prefix maps (imported ones included)."""
    names = set(modules(root)) | {imp.imported for imp in all_imports(root)}
    return sorted(name for name in names if group_of(name) is None)


def violations(root: Path, allowed: list[tuple[str, str, str]] = ALLOWED) -> list[str]:
    """Every import under ``root`` that goes up or sideways and is not in ``allowed``, as
    ``file:line: importer (group) imports imported (group)``."""
    exceptions = {(importer, imported) for importer, imported, _reason in allowed}
    lines = []
    for imp in all_imports(root):
        if group_of(imp.importer) is None or group_of(imp.imported) is None:
            continue  # unmapped() reports these
        if may_import(imp.importer, imp.imported) or (imp.importer, imp.imported) in exceptions:
            continue
        lines.append(
            f"{imp.where(root)}: {imp.importer} ({group_of(imp.importer)}) imports "
            f"{imp.imported} ({group_of(imp.imported)})"
        )
    return lines


# --- the contract on the code as it is -------------------------------------------------------------
def test_every_module_has_a_layer() -> None:
    missing = unmapped(REPO_ROOT)
    assert not missing, "modules with no layer (add their prefix to LAYERS in tests/test_layers.py):\n" + "\n".join(
        missing
    )


def test_imports_point_down() -> None:
    found = violations(REPO_ROOT)
    assert not found, f"{len(found)} import(s) break the layers (docs/development.md):\n" + "\n".join(found)


def test_every_allowed_exception_is_still_needed() -> None:
    present = {(imp.importer, imp.imported) for imp in all_imports(REPO_ROOT)}
    stale = [f"{a} -> {b} ({reason})" for a, b, reason in ALLOWED if (a, b) not in present]
    assert not stale, "ALLOWED entries no import needs any more (remove them):\n" + "\n".join(stale)
    assert all(reason.strip() for _a, _b, reason in ALLOWED)


def test_the_checker_sees_the_whole_code() -> None:
    """The walk finds the packages' modules (a broken walk would find nothing and pass)."""
    found = modules(REPO_ROOT)
    assert {"nini", "nini.history.store", "nini.runtime", "jupyter_ext.handlers.base", "r_sandbox.worker"} <= set(found)
    assert not any("node_modules" in str(path) for path in found.values())
    assert len(all_imports(REPO_ROOT)) > 500


# --- negative controls: the checker fails on what it must fail on -----------------------------------
def _package(root: Path, files: dict[str, str]) -> None:
    for relative, source in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source, encoding="utf-8")


@pytest.fixture
def fake_tree(tmp_path: Path) -> Path:
    """A small tree shaped like the real one: a store, an agent, a foundation module."""
    _package(
        tmp_path,
        {
            "nini/__init__.py": "",
            "nini/errors.py": "class NiniError(Exception): ...\n",
            "nini/history/__init__.py": "",
            "nini/agent/__init__.py": "",
            "nini/agent/runner.py": "from nini.history import store\nfrom nini.errors import NiniError\n",
            "nini/execution/__init__.py": "",
            "jupyter_ext/__init__.py": "",
            "r_sandbox/__init__.py": "",
        },
    )
    return tmp_path


def test_a_clean_tree_passes(fake_tree: Path) -> None:
    _package(fake_tree, {"nini/history/store.py": "from nini.errors import NiniError\n"})
    assert violations(fake_tree) == []
    assert unmapped(fake_tree) == []


@pytest.mark.parametrize(
    ("source", "line", "imported"),
    [
        ("import os\nfrom nini.agent.runner import run\n", 2, "nini.agent.runner"),
        ("import nini.agent.runner\n", 1, "nini.agent.runner"),
        (
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from nini.agent import runner\n",
            3,
            "nini.agent.runner",
        ),
        ("def later():\n    from ..agent.runner import run\n    return run\n", 2, "nini.agent.runner"),
        ("from .. import agent\n", 1, "nini.agent"),
        ("import importlib\nimportlib.import_module('nini.execution')\n", 2, "nini.execution"),
    ],
    ids=["top-level", "import-statement", "type-checking", "relative-in-function", "relative-package", "dynamic"],
)
def test_an_upward_import_in_the_store_fails(fake_tree: Path, source: str, line: int, imported: str) -> None:
    _package(fake_tree, {"nini/history/bad.py": source})
    group = group_of(imported)
    assert violations(fake_tree) == [
        f"nini/history/bad.py:{line}: nini.history.bad (history) imports {imported} ({group})"
    ]
    allowed = [("nini.history.bad", imported, "a test's exception")]
    assert violations(fake_tree, allowed) == []


def test_sideways_and_forbidden_pairs_fail(fake_tree: Path) -> None:
    _package(
        fake_tree,
        {
            "nini/execution/kernels.py": "from nini.history import store\n",
            "r_sandbox/worker.py": "from nini.errors import NiniError\n",
            "nini/cli/__init__.py": "from jupyter_ext import app\n",
            "jupyter_ext/app.py": "import nini\nfrom nini.cli import main\n",
            "r_sandbox/client.py": "import nini\n",
            "nini/history/store.py": "",
        },
    )
    assert violations(fake_tree) == [
        "nini/cli/__init__.py:1: nini.cli (entry) imports jupyter_ext.app (jupyter_ext)",
        "nini/execution/kernels.py:1: nini.execution.kernels (execution) imports nini.history.store (history)",
        "r_sandbox/client.py:1: r_sandbox.client (r_sandbox) imports nini (shim)",
        "r_sandbox/worker.py:1: r_sandbox.worker (r_sandbox) imports nini.errors (foundation)",
    ]


def test_the_load_ext_shim_may_import_jupyter_ext(fake_tree: Path) -> None:
    _package(fake_tree, {"nini/__init__.py": "def load_ipython_extension(ip):\n    from jupyter_ext import magics\n"})
    assert violations(fake_tree) == []


def test_a_module_with_no_layer_fails(fake_tree: Path) -> None:
    _package(fake_tree, {"nini/newthing.py": "", "nini/agent/runner.py": "from nini.elsewhere import x\n"})
    assert unmapped(fake_tree) == ["nini.elsewhere", "nini.newthing"]
