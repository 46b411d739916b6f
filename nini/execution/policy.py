"""Static policy for agent-written Python: refuse dangerous code before it reaches a kernel.

The sandbox (bubblewrap: no network, read-only root, only the workspace writable) is what contains
untrusted code. This check runs first because a refusal is cheaper and clearer than a sandbox
failure: it needs no kernel and names the rule and the user's line, so the model can fix its code.

It reads the cell as IPython would (``!cmd`` and ``%magic`` become ``get_ipython()`` calls), then
walks the AST. It cannot see what only exists at run time, which the sandbox must cover: paths and
names built from variables or f-strings (``getattr(f, "__glob" + "als__")``), modules reached
through a variable (``m = pd.io.common; m.os``), code run while loading data (``pd.read_pickle``,
``np.load(allow_pickle=True)``, ``joblib.load``), native extensions, and what earlier cells left in
the kernel's namespace. Code that does not parse is let through: the kernel reports the SyntaxError.

Decisions: ``sys``, ``threading``, ``pathlib``, ``glob``, ``tempfile``, ``io``, ``joblib`` and
``inspect`` stay importable; the escape hatches they expose (``sys.modules``, frames, literal paths
outside the workspace) are refused instead. All of ``concurrent`` is refused (process pools), as is
every private top-level module (``_pickle``, ``_posixsubprocess``). ``globals``, ``locals`` and
``vars`` are refused outright (they hand out namespaces, and a module's holds ``__builtins__``).
Magics: ``%time``, ``%timeit``, ``%matplotlib``, ``%%time``, ``%%timeit`` and ``%%capture`` are
allowed and the code they run is checked too; every other magic and every shell escape is refused.
A cell nested too deeply for ``ast.parse`` (``compile`` may still accept it) is refused as
``uncheckable`` rather than let through unchecked.
"""

from __future__ import annotations

import ast
import difflib
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from nini.errors import ErrorCode, NiniError

__all__ = ["Violation", "check_python", "find_violations"]

FORBIDDEN_IMPORT = "forbidden-import"
FORBIDDEN_CALL = "forbidden-call"
DUNDER_ACCESS = "dunder-access"
PATH_OUTSIDE_WORKSPACE = "path-outside-workspace"
UNCHECKABLE = "uncheckable"  # nested too deeply for the parser, or a magic argument that does not parse

# A dotted name is refused when it or any of its prefixes is listed ("os" refuses "os.path").
FORBIDDEN_MODULES = frozenset(
    """
    os posix nt subprocess pty pexpect signal resource socket socketserver ssl http urllib urllib3
    requests httpx aiohttp ftplib smtplib telnetlib xmlrpc webbrowser ctypes cffi mmap shutil
    multiprocessing concurrent importlib imp zipimport pickle cPickle dill cloudpickle shelve marshal
    builtins code codeop runpy pydoc pdb gc pip asyncio.subprocess ipykernel jupyter_client
    IPython.get_ipython IPython.core.getipython IPython.utils.process
""".split()
)
# Names reached through an imported module that hand out other modules or live frames.
INTROSPECTION = frozenset({"sys.modules", "sys._getframe", "sys._current_frames", "sys.meta_path"})
# Attribute names through which allowed libraries re-export forbidden modules (pd.io.common.os).
REEXPORTED = frozenset("os posix subprocess shutil socket ctypes builtins importlib pickle gc".split())
DUNDER_ATTRS = frozenset(
    """
    __subclasses__ __globals__ __builtins__ __code__ __closure__ __getattribute__ __bases__ __base__
    __mro__ __loader__ __spec__ __self__ __import__ f_globals f_locals f_builtins f_back gi_frame
    cr_frame ag_frame tb_frame
""".split()
)
DUNDER_NAMES = frozenset({"__builtins__", "__loader__", "__spec__"})
ESCAPE_STRINGS = frozenset(a for a in DUNDER_ATTRS if a.startswith("__"))
FORBIDDEN_CALLS = frozenset(
    """
    eval exec compile __import__ globals locals vars breakpoint input exit quit get_ipython
""".split()
)
ATTR_FUNCS = frozenset({"getattr", "setattr", "delattr", "hasattr"})
SUBPROCESS_METHODS = frozenset({"create_subprocess_exec", "create_subprocess_shell"})

PATH_FUNCS = frozenset(
    """
    open Path PurePath PosixPath load save savez savez_compressed loadtxt savetxt genfromtxt fromfile
    tofile savefig ExcelWriter HDFStore ParquetFile glob iglob
""".split()
)
PATH_PREFIXES = ("read_", "to_", "write_")
PATH_KEYWORDS = frozenset(
    """
    path filepath_or_buffer path_or_buf fname file filename io excel_writer where source
""".split()
)

_OPTIONS = re.compile(r"^(?:\s*-[nrtcpqo]+(?:\s*\d+)?(?=\s|$))*\s*")  # %timeit -n 10 -r3 -q

# What is wrong, by kind: (English, Chinese), the subjects filled in by position (``ui.language``).
WORDS: dict[str, tuple[str, str]] = {
    "import": ("import of '{0}' is not allowed", "不允许导入 '{0}'"),
    "import_from": ("import from '{0}' is not allowed", "不允许从 '{0}' 导入"),
    "use": ("use of '{0}' is not allowed", "不允许使用 '{0}'"),
    "use_module": ("use of module '{0}' is not allowed", "不允许使用模块 '{0}'"),
    "access": ("access to '{0}' is not allowed", "不允许访问 '{0}'"),
    "subscript": ("subscript '{0}' is not allowed", "不允许下标 '{0}'"),
    "call": ("call of '{0}()' is not allowed", "不允许调用 '{0}()'"),
    "on_module": ("{0}() on module '{1}' is not allowed", "不允许对模块 '{1}' 使用 {0}()"),
    "string": ("string '{0}' is not allowed here", "此处不允许字符串 '{0}'"),
    "path": ("path '{0}' is outside the workspace", "路径 '{0}' 在工作区之外"),
    "shell": ("shell command '!{0}' is not allowed", "不允许 shell 命令 '!{0}'"),
    "magic": ("IPython magic '{0}' is not allowed", "不允许 IPython 魔法命令 '{0}'"),
    "no_parse": ("the code given to '{0}' does not parse", "交给 '{0}' 的代码无法解析"),
    "too_deep": ("the code is nested too deeply to be checked", "代码嵌套太深，无法检查"),
}
MESSAGE = {"en": "line {line}: {text} (rule {rule})", "zh": "第 {line} 行：{text}（规则 {rule}）"}


@dataclass(frozen=True)
class Violation:
    rule: str  # stable id, e.g. "forbidden-import"
    line: int  # 1-based line in the user's code
    name: str  # the offending name, module, magic or path
    what: str  # what is wrong: a key of WORDS
    subjects: tuple[str, ...] = ()  # what WORDS[what] names

    @property
    def text(self) -> str:
        """What is wrong, without the line, in English."""
        return self.text_in("en")

    def text_in(self, language: str) -> str:
        return WORDS[self.what][language == "zh"].format(*self.subjects)

    def message(self, language: str = "en") -> str:
        """The line, what is wrong and the rule, in ``language`` (``ui.language``)."""
        words = MESSAGE["zh" if language == "zh" else "en"]
        return words.format(line=self.line, text=self.text_in(language), rule=self.rule)


def check_python(code: str, workspace: Path, language: str = "en") -> None:
    """Raise ``NiniError(POLICY_VIOLATION)`` for the first violation (by line) in ``code``, worded in ``language``."""
    found = find_violations(code, workspace)
    if found:
        first = found[0]
        details = {"rule": first.rule, "line": first.line, "name": first.name}
        raise NiniError(ErrorCode.POLICY_VIOLATION, first.message(language), details=details)


def find_violations(code: str, workspace: Path) -> list[Violation]:
    """Every violation in ``code``, ordered by line; empty when clean or when it does not parse."""
    return sorted(_scan(code, Path(workspace), 0) or [], key=lambda v: v.line)


def _scan(code: str, workspace: Path, offset: int) -> list[Violation] | None:
    """Violations of one cell whose line 1 is the user's line ``offset + 1``; None if unparseable."""
    # Imported here: IPython is heavy, and only this check needs it.
    from IPython.core.inputtransformer2 import TransformerManager

    try:
        python = TransformerManager().transform_cell(code)
        tree = ast.parse(python)
        line_map = _line_map(code, python)
        checker = _Checker(tree, workspace, lambda n: offset + line_map(n))
        checker.visit(tree)
    except (SyntaxError, ValueError):
        return None
    except (RecursionError, MemoryError):
        # ast.parse gives up on nesting that compile() may still accept, so refuse rather than pass.
        return [Violation(UNCHECKABLE, offset + 1, "<cell>", "too_deep")]
    return checker.found


def _line_map(original: str, python: str) -> Callable[[int], int]:
    """Map lines of the transformed cell back to the user's lines.

    Escapes are rewritten in place (one line stays one line), but a ``!cmd \\`` continuation is
    joined and a ``%%magic`` cell collapses into one call, so lines are matched rather than assumed.
    """
    a, b = original.splitlines(), python.splitlines()
    table: dict[int, int] = {}
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        start = i1 if tag == "equal" else next((i for i in range(i1, i2) if a[i].strip()), i1)
        for j in range(j1, j2):
            table[j + 1] = min(start + j - j1, max(i2 - 1, i1)) + 1
    return lambda n: table.get(n, n)


def _leaves_workspace(text: str, workspace: Path) -> bool:
    if text.startswith("file://"):
        text = text[len("file://") :]
    elif "://" in text or "\n" in text or "\0" in text:
        return False  # URLs and literal data, not paths
    if text.startswith("~"):
        return True
    roots = {os.path.abspath(workspace), os.path.realpath(workspace)}
    target = os.path.normpath(os.path.join(os.path.abspath(workspace), text))
    return not any(target == root or target.startswith(root.rstrip(os.sep) + os.sep) for root in roots)


def _function_scope(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> tuple[set[str], set[str]]:
    """(local names, names declared global) of a function, as Python's compiler decides them."""
    args = node.args
    local = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg] if a}
    declared_global: set[str] = set()
    nonlocal_: set[str] = set()
    stack: list[ast.AST] = list(node.body) if isinstance(node.body, list) else [node.body]
    while stack:
        n = stack.pop()
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            local.add(n.name)
            continue  # a nested scope; its own bindings are not ours
        if isinstance(n, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            continue
        if isinstance(n, ast.Global):
            declared_global.update(n.names)
        elif isinstance(n, ast.Nonlocal):
            nonlocal_.update(n.names)
        elif isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            local.add(n.id)
        elif isinstance(n, ast.alias):
            local.add((n.asname or n.name).split(".")[0])
        elif isinstance(n, ast.ExceptHandler) and n.name:
            local.add(n.name)
        stack.extend(ast.iter_child_nodes(n))
    return local - declared_global - nonlocal_, declared_global


def _own_globals(tree: ast.Module) -> dict[str, tuple[int, int]]:
    """Builtin names the cell rebinds for itself, with the position after which they are its own.

    Only an unconditional top-level ``def``/``class``/assignment counts, and only if the name is
    never deleted: ``if False: eval = f`` or ``eval = f; del eval`` leave the builtin reachable.
    """
    watched = FORBIDDEN_CALLS | ATTR_FUNCS
    deletes = [n for n in ast.walk(tree) if isinstance(n, ast.Delete)]
    deleted = {t.id for n in deletes for t in n.targets if isinstance(t, ast.Name)}
    own: dict[str, tuple[int, int]] = {}
    for stmt in tree.body:
        names: list[str] = []
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names = [stmt.name]
        elif isinstance(stmt, ast.Assign):
            names = [t.id for t in stmt.targets if isinstance(t, ast.Name)]
        elif isinstance(stmt, ast.AnnAssign) and stmt.value and isinstance(stmt.target, ast.Name):
            names = [stmt.target.id]
        for name in names:
            if name in watched and name not in deleted:
                own.setdefault(name, (stmt.end_lineno or stmt.lineno, stmt.end_col_offset or 0))
    return own


def _imports(tree: ast.Module) -> dict[str, str]:
    """Names bound by import statements anywhere in the cell -> the dotted name they stand for."""
    bound: dict[str, str] = {}
    for n in ast.walk(tree):
        if isinstance(n, ast.Import):
            for a in n.names:
                bound[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(n, ast.ImportFrom):
            for a in n.names:
                bound[a.asname or a.name] = f"{n.module}.{a.name}" if n.module else a.name
    return bound


def _forbidden_module(dotted: str) -> bool:
    parts = dotted.split(".")
    if parts[0].startswith("_") and parts[0] != "__future__":
        return True
    prefixes = {".".join(parts[:i]) for i in range(1, len(parts) + 1)}
    return bool(prefixes & FORBIDDEN_MODULES) or dotted in INTROSPECTION


def _ipython_method(call: ast.Call) -> str | None:
    """``system`` for ``get_ipython().system(...)``, the form IPython gives ``!ls``; else None."""
    f = call.func
    if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Call):
        inner = f.value.func
        if isinstance(inner, ast.Name) and inner.id == "get_ipython":
            return f.attr
    return None


def _magic_code(magic: str, line: str, body: str | None) -> list[tuple[str, int]] | None:
    """Code an allowed magic will run, as (code, line offset from the magic); None if refused."""
    if body is None:
        if magic == "matplotlib":
            return [] if re.fullmatch(r"\s*[\w-]*\s*", line) else None
        if magic == "timeit":
            return [(_OPTIONS.sub("", line, count=1), 0)]
        return [(line, 0)] if magic == "time" else None
    if magic == "time" and not line.strip():
        return [(body, 1)]
    if magic == "timeit":  # the line holds options and a setup statement
        return [(_OPTIONS.sub("", line, count=1), 0), (body, 1)]
    if magic == "capture" and re.fullmatch(r"[\w\s-]*", line):
        return [(body, 1)]
    return None


def _string(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)):
        return node.value if isinstance(node.value, str) else node.value.decode(errors="replace")
    return None


class _Checker(ast.NodeVisitor):
    def __init__(self, tree: ast.Module, workspace: Path, line_of: Callable[[int], int]):
        self.workspace = workspace
        self.line_of = line_of
        self.imports = _imports(tree)
        self.own = _own_globals(tree)
        self.scopes: list[tuple[set[str], set[str]]] = []  # enclosing functions, innermost last
        self.found: list[Violation] = []

    def report(self, node: ast.AST, rule: str, name: str, what: str, *subjects: str) -> None:
        """A violation at ``node``: ``what`` (a key of WORDS) about ``subjects``."""
        self.found.append(Violation(rule, self.line_of(getattr(node, "lineno", 1)), name, what, subjects))

    def is_own(self, node: ast.Name) -> bool:
        """Whether a builtin's name refers to something the cell bound itself (never the builtin)."""
        for local, declared_global in reversed(self.scopes):
            if node.id in declared_global:
                break
            if node.id in local:
                return True
        start = self.own.get(node.id)
        return start is not None and (node.lineno, node.col_offset) >= start

    def resolve(self, node: ast.AST) -> str | None:
        """``np.linalg`` -> ``numpy.linalg`` when the chain starts at an imported name."""
        if isinstance(node, ast.Name):
            return self.imports.get(node.id)
        if isinstance(node, ast.Attribute):
            base = self.resolve(node.value)
            return f"{base}.{node.attr}" if base else None
        return None

    def refused_root(self, node: ast.AST) -> bool:
        """Whether an attribute chain starts at a refused import (reported there, not at each use)."""
        while isinstance(node, ast.Attribute):
            node = node.value
        return isinstance(node, ast.Name) and _forbidden_module(self.imports.get(node.id, ""))

    def visit_Import(self, node: ast.Import) -> None:
        for a in node.names:
            if _forbidden_module(a.name):
                self.report(node, FORBIDDEN_IMPORT, a.name, "import", a.name)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""  # relative imports are judged by the names they spell
        if module and _forbidden_module(module):
            return self.report(node, FORBIDDEN_IMPORT, module, "import_from", module)
        for a in node.names:
            dotted = f"{module}.{a.name}" if module else a.name
            if a.name != "*" and (_forbidden_module(dotted) or a.name in REEXPORTED):
                self.report(node, FORBIDDEN_IMPORT, dotted, "import", dotted)

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> None:
        # Decorators, defaults and annotations run in the enclosing scope; only the body is inside.
        for field, value in ast.iter_fields(node):
            if field != "body":
                for child in value if isinstance(value, list) else [value]:
                    if isinstance(child, ast.AST):
                        self.visit(child)
        self.scopes.append(_function_scope(node))
        for child in node.body if isinstance(node.body, list) else [node.body]:
            self.visit(child)
        self.scopes.pop()

    visit_AsyncFunctionDef = visit_Lambda = visit_FunctionDef

    def visit_Name(self, node: ast.Name) -> None:
        if node.id in DUNDER_NAMES:
            self.report(node, DUNDER_ACCESS, node.id, "use", node.id)
        elif node.id in FORBIDDEN_CALLS and isinstance(node.ctx, ast.Load) and not self.is_own(node):
            self.report(node, FORBIDDEN_CALL, node.id, "use", node.id)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        resolved = self.resolve(node)
        if node.attr in DUNDER_ATTRS:
            self.report(node, DUNDER_ACCESS, node.attr, "access", f".{node.attr}")
        elif resolved and (resolved in INTROSPECTION or node.attr == "__dict__"):
            return self.report(node, DUNDER_ACCESS, resolved, "access", resolved)
        elif resolved and (_forbidden_module(resolved) or node.attr in REEXPORTED) and not self.refused_root(node):
            return self.report(node, FORBIDDEN_IMPORT, resolved, "use_module", resolved)
        elif node.attr == "get_ipython":
            self.report(node, FORBIDDEN_CALL, node.attr, "use", "get_ipython")
        self.generic_visit(node)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        key = _string(node.slice)
        if key in ESCAPE_STRINGS:
            self.report(node, DUNDER_ACCESS, key, "subscript", key)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        method = _ipython_method(node)
        if method is not None:
            return self.check_ipython(node, method)
        f, args = node.func, [*node.args, *(k.value for k in node.keywords)]
        fname = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
        skip_func = False
        # Only bare names are the builtins: df.eval(...), model.compile(), re.compile(...) are methods.
        if isinstance(f, ast.Name) and f.id in FORBIDDEN_CALLS and not self.is_own(f):
            self.report(node, FORBIDDEN_CALL, f.id, "call", f.id)
            skip_func = True
        elif isinstance(f, ast.Name) and f.id in ATTR_FUNCS and not self.is_own(f) and node.args:
            target = node.args[0]
            if isinstance(target, ast.Name) and target.id in self.imports:
                self.report(node, FORBIDDEN_CALL, f.id, "on_module", f.id, target.id)
        elif isinstance(f, ast.Attribute) and f.attr in SUBPROCESS_METHODS:
            self.report(node, FORBIDDEN_CALL, f.attr, "call", f.attr)
        for arg in args:
            if _string(arg) in ESCAPE_STRINGS:
                self.report(arg, DUNDER_ACCESS, str(_string(arg)), "string", str(_string(arg)))
        # Only literal paths can be judged here; f-strings and variables are left to the sandbox.
        if fname in PATH_FUNCS or fname.startswith(PATH_PREFIXES):
            path_args = [*node.args, *(k.value for k in node.keywords if k.arg in PATH_KEYWORDS)]
            for arg in path_args:
                text = _string(arg)
                if text is not None and _leaves_workspace(text, self.workspace):
                    self.report(arg, PATH_OUTSIDE_WORKSPACE, text, "path", text)
        for child in args if skip_func else [f, *args]:
            self.visit(child)

    def check_ipython(self, node: ast.Call, method: str) -> None:
        """Shell escapes and magics: refuse all but a few, and check the code those few run."""
        args = [_string(a) for a in node.args]
        if method in ("system", "getoutput"):
            command = args[0] if args and args[0] is not None else "..."
            return self.report(node, FORBIDDEN_CALL, "!", "shell", command)
        if method not in ("run_line_magic", "run_cell_magic") or len(args) < 2 or None in args or node.keywords:
            return self.report(node, FORBIDDEN_CALL, "get_ipython", "use", "get_ipython")
        cell = method == "run_cell_magic"
        label = ("%%" if cell else "%") + str(args[0])
        nested = _magic_code(str(args[0]), str(args[1]), args[2] if cell else None) if len(args) == 2 + cell else None
        if nested is None:
            return self.report(node, FORBIDDEN_CALL, label, "magic", label)
        here = self.line_of(node.lineno)
        for code, offset in nested:
            found = _scan(code, self.workspace, here - 1 + offset)
            if found is None:
                self.report(node, UNCHECKABLE, label, "no_parse", label)
            else:
                self.found.extend(found)
