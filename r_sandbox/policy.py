"""Static policy for agent R code: refuse, before it runs, code that can reach a denied capability.

R's own parser reads the code (``r_sandbox.parse_data``), so comments and strings never raise a false
alarm and no spelling hides a name: backquotes, escapes, ``base::``, a string in call position, a
replacement form (``environment(f) <- e`` calls ``environment<-``). What is refused:

* a denied function (``r_sandbox.rules``) called, aliased, passed as a value, or fetched by a literal
  name from a namespace (``base::``), an environment (``e$system``, ``e[["system"]]``) or a lookup
  function (``get``, ``match.fun``, ``do.call``, ...);
* a lookup with a name computed at run time: ``get(paste0("sys", "tem"))``, ``e[[name]]`` on an
  environment, a lookup function passed as a value (``lapply(names, get)``), and environments
  handled like lists or given to R's own code (``r_sandbox.environments``: ``.subset2``, ``pluck``,
  ``eapply``, ``Reduce(f, n, baseenv())``, ``as.formula(text, env = baseenv())``);
* ``pkg:::name`` always; packages outside the allowed list; a package named at run time;
* arguments that name a program or a pipe (``utils::tar(tar = ...)``, ``pdf(file = "|cmd")``);
* assignments into protected environments, and definitions that replace R's own functions or
  methods for the session (``setMethod("show", ...)``).

What is allowed on purpose: reading environments (``environment(fo)``, ``.GlobalEnv``,
``topenv()``); ``x$url`` on data; bare names inside data-masking verbs (``filter(d, source ==
"web")``: a column), inside ``[``/``[[`` and inside quoted code (``~``, ``quote``); ``do.call`` or
``match.fun`` with a function object; ``local()``. A bare name the code binds first is a variable.
What the static check cannot see is stopped at run time (the worker's guard and capability stubs)
and, finally, by the sandbox.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from r_sandbox import messages, rules
from r_sandbox.calls import (
    EXPRESSION_TOKENS,
    NS_GET,
    assignment_target,
    call_args,
    callee,
    enclosing_function,
    following,
    is_call,
    is_function,
    match_args,
    previous,
    single_token,
    string_tokens,
)
from r_sandbox.contexts import Contexts
from r_sandbox.environments import environment_findings, subset_findings
from r_sandbox.parse_data import Node, ParseFailure, parse_r

__all__ = ["PolicyReport", "SyntaxProblem", "Violation", "check_r_code", "violations_message"]

PACKAGE_LOADERS: dict[str, tuple[str, ...]] = {
    "library": (
        "package",
        "help",
        "pos",
        "lib.loc",
        "character.only",
        "logical.return",
        "warn.conflicts",
        "quietly",
        "verbose",
        "mask.ok",
        "exclude",
        "include.only",
        "attach.required",
    ),
    "require": (
        "package",
        "lib.loc",
        "quietly",
        "warn.conflicts",
        "character.only",
        "mask.ok",
        "exclude",
        "include.only",
        "attach.required",
    ),
    "requireNamespace": ("package", "...", "quietly"),
    "loadNamespace": ("package", "lib.loc", "keep.source", "partial", "versionCheck", "keep.parse.data"),
    "attachNamespace": ("ns", "pos", "depends", "exclude", "include.only"),
    "asNamespace": ("ns", "base.OK"),
    "getNamespace": ("name",),
    ".getNamespace": ("name",),
}
NAMESPACE_GETTERS: dict[str, tuple[str, ...]] = {
    "::": ("pkg", "name"),
    ":::": ("pkg", "name"),
    "getExportedValue": ("ns", "name"),
}
# Functions that assign into an environment: their formals and which of them name the environment.
ASSIGNERS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "assign": (("x", "value", "pos", "envir", "inherits", "immediate"), ("pos", "envir")),
    "delayedAssign": (("x", "value", "eval.env", "assign.env"), ("assign.env",)),
    "makeActiveBinding": (("sym", "fun", "env"), ("env",)),
    "list2env": (("x", "envir", "parent", "hash", "size"), ("envir",)),
}
# Formals of the functions whose arguments can name a program (rules.PROGRAM_ARGUMENTS).
PROGRAM_FORMALS: dict[str, tuple[str, ...]] = {
    "tar": ("tarfile", "files", "compression", "compression_level", "tar", "extra_flags"),
    "untar": (
        "tarfile",
        "files",
        "list",
        "exdir",
        "compressed",
        "extras",
        "verbose",
        "restore_times",
        "support_old_tars",
        "tar",
    ),
    "zip": ("zipfile", "files", "flags", "extras", "zip"),
    "unzip": ("zipfile", "files", "list", "overwrite", "junkpaths", "exdir", "unzip", "setTimes"),
    "file.show": ("...", "header", "title", "delete.file", "pager", "encoding"),
    "fread": ("input", "file", "text", "cmd"),
    "options": ("...",),
}


@dataclass(frozen=True)
class Violation:
    """One refused use: ``rule`` is ``denied-<group>``, ``package-not-allowed``, ``internal-access``,
    ``computed-name``, ``dynamic-package``, ``protected-environment``, ``foreign-environment``,
    ``program-argument`` or ``base-override``; ``name`` the function or package; ``message`` one
    line for people."""

    rule: str
    name: str
    line: int
    column: int
    message: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class SyntaxProblem:
    """R could not parse the code: R's message (with its context lines) and the line it points at."""

    line: int | None
    message: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class PolicyReport:
    """The verdict on one piece of R code; ``allowed`` follows from the other two fields."""

    violations: list[Violation] = field(default_factory=list)
    syntax_error: SyntaxProblem | None = None
    allowed: bool = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "allowed", self.syntax_error is None and not self.violations)

    def to_dict(self) -> dict[str, Any]:
        return {
            "allowed": self.allowed,
            "violations": [v.to_dict() for v in self.violations],
            "syntax_error": self.syntax_error.to_dict() if self.syntax_error else None,
        }


def check_r_code(code: str, allowed_packages: Iterable[str] | None = None, language: str = "zh") -> PolicyReport:
    """Check R code against the policy; ``allowed_packages`` adds to ``rules.DEFAULT_PACKAGES``;
    messages in ``language`` (zh or en).

    Raises ``RSandboxError("R_UNAVAILABLE", ...)`` when R or rpy2 cannot be loaded. Starts embedded R
    on first use (through ``rpy2.rinterface``); call it from the thread that owns R.
    """
    parsed = parse_r(code)
    if isinstance(parsed, ParseFailure):
        return PolicyReport(syntax_error=SyntaxProblem(parsed.line, parsed.message))
    found = _Checker(parsed, rules.DEFAULT_PACKAGES | set(allowed_packages or ()), language).run()
    unique = {(v.line, v.column, v.rule, v.name): v for v in found}
    return PolicyReport(violations=[unique[key] for key in sorted(unique)])


def violations_message(report: PolicyReport, language: str = "zh") -> str | None:
    """Why the code was refused, every violation on a line of its own (None when it is allowed)."""
    if report.syntax_error is not None:
        first = report.syntax_error.message.splitlines()[0] if report.syntax_error.message else ""
        return messages.message("syntax", first, report.syntax_error.line, language)
    return "\n".join(v.message for v in report.violations) or None


@dataclass(frozen=True)
class _Binding:
    target: Node  # the bound name's token
    after: tuple[int, int]  # bound once the text has passed this point...
    scope: Node | None = None  # ...or, for a parameter, inside this function


class _Checker:
    """One pass over the parse tree of one piece of code."""

    def __init__(self, roots: list[Node], packages: frozenset[str] | set[str], language: str) -> None:
        self.nodes = [node for root in roots for node in root.walk()]
        self.packages = packages
        self.language = language
        self.found: list[Violation] = []
        self.bindings: dict[str, list[_Binding]] = {}
        for node in self.nodes:
            self._collect_bindings(node)
        self.targets = {b.target.id for group in self.bindings.values() for b in group if b.scope is None}
        self.quoted: set[int] = set()  # symbols R reads as names, not values: library(pkg), `::`(pkg, f)
        self.contexts = Contexts(self.nodes)

    def run(self) -> list[Violation]:
        for node in self.nodes:
            if node.token == "SYMBOL_FUNCTION_CALL":
                self._denied(node, node.value)
            elif node.token == "SYMBOL":
                self._symbol(node)
            elif node.token == "STR_CONST":
                self._string(node)
            elif node.token == "SYMBOL_PACKAGE":
                self._namespace_access(node)
            elif node.token in EXPRESSION_TOKENS:
                self._expression(node)
        return self.found

    # --- bindings: a name the code binds first is a variable ----------------------------------------
    def _collect_bindings(self, node: Node) -> None:
        target = assignment_target(node)
        if (
            target is not None
            and (token := single_token(target)) is not None
            and token.token in ("SYMBOL", "STR_CONST")
        ):
            self._bind(token, _Binding(token, node.end))
        if node.token == "expr" and node.children and node.children[0].token == "FOR":
            condition = node.children[1]  # forcond: ( SYMBOL in expr )
            self._bind(condition.children[1], _Binding(condition.children[1], condition.end))
        if is_function(node):
            for formal in (c for c in node.children if c.token == "SYMBOL_FORMALS"):
                self._bind(formal, _Binding(formal, node.start, scope=node))

    def _bind(self, token: Node, binding: _Binding) -> None:
        if token.value is not None:
            self.bindings.setdefault(token.value, []).append(binding)

    def _is_variable(self, name: str, ref: Node) -> bool:
        function = enclosing_function(ref)
        for b in self.bindings.get(name, ()):
            if b.scope is not None:
                if b.scope.contains(ref):
                    return True
            elif b.after < ref.start or (function is not None and not function.contains(b.target)):
                return True
        return False

    # --- tokens -------------------------------------------------------------------------------------
    def _symbol(self, node: Node) -> None:
        before = previous(node)
        name = node.value or ""
        if before is not None and before.token in ("'$'", "'@'"):
            if before.parent is not None and self.contexts.is_environment(before.parent.children[0]):
                self._denied(node, name)  # baseenv()$system: the real function
            return
        if before is not None and before.token in NS_GET:
            return  # pkg::name, checked with the package (_namespace_access)
        if (
            node.id in self.targets
            or node.id in self.quoted
            or self.contexts.is_data(node)
            or self._is_variable(name, node)
        ):
            return
        self._denied(node, name)
        if (name in PACKAGE_LOADERS or name in rules.LOOKUPS) and _handed_on(node):
            # lapply(pkgs, library, character.only = TRUE), lapply(names, get), f <- get: the
            # names come from elsewhere (tail(library) only shows the function's source)
            self._add("dynamic-package" if name in PACKAGE_LOADERS else "computed-name", name, node)

    def _string(self, node: Node) -> None:
        before, after, parent = previous(node), following(node), node.parent
        if before is not None and before.token in NS_GET:
            return  # base::"system": checked with the package
        if after is not None and after.token in NS_GET:
            self._namespace_access(node)  # "pkg"::f
            return
        if (
            parent is not None
            and parent.parent is not None
            and is_call(parent.parent)
            and parent.parent.children[0] is parent
        ):
            self._denied(node, node.value)  # "system"("ls") calls system

    def _namespace_access(self, package_token: Node) -> None:
        """``pkg::name`` and ``pkg:::name`` (the package token, then ``::``, then the name)."""
        operator, member = following(package_token), None
        if operator is not None:
            member = following(operator)
        name = (member.value if member is not None else None) or ""
        if operator is not None and operator.token == "NS_GET_INT":
            self._add("internal-access", f"{package_token.value}:::{name}", package_token)
            return
        self._package(package_token, package_token.value)
        if member is not None:
            self._denied(member, name)

    # --- expressions --------------------------------------------------------------------------------
    def _expression(self, node: Node) -> None:
        if is_call(node) and (name_token := callee(node)) is not None:
            self._call(node, name_token, name_token.value or "")
        target = assignment_target(node)
        while target is not None:  # environment(f) <- e calls `environment<-`
            target = self._replacement(target)
        kids = node.children
        if len(kids) >= 3 and kids[1].token == "LBB" and self.contexts.is_environment(kids[0]):
            member = single_token(kids[2]) if kids[2].token == "expr" else None
            if member is not None and member.token == "STR_CONST":
                self._denied(member, member.value)  # asNamespace("base")[["system"]]
            else:
                self._add("computed-name", "[[", kids[1])  # loadNamespace("base")[[paste0("sys", "tem")]]
        for rule, name, where in subset_findings(node, self.contexts):
            self._add(rule, name, where)

    def _replacement(self, target: Node) -> Node | None:
        """Check one level of a complex assignment target and return the next one inwards."""
        if is_call(target):
            name_token = callee(target)
            if name_token is not None and name_token.value:
                self._denied(name_token, name_token.value + "<-")
            first = call_args(target)[:1]
            return first[0][1] if first else None
        kids = target.children
        return kids[0] if len(kids) > 1 and kids[0].token == "expr" else None  # x[i], x[[i]], x$a, x@a

    def _call(self, call: Node, name_token: Node, name: str) -> None:
        if name in PACKAGE_LOADERS:
            self._loader(call, name_token, name)
        elif name in NAMESPACE_GETTERS:
            self._namespace_getter(call, name_token, name)
        elif name in ASSIGNERS:
            formals, env_formals = ASSIGNERS[name]
            args = match_args(call, formals)
            for formal in env_formals:
                if formal in args and (env := _protected_environment(args[formal])) is not None:
                    self._add("protected-environment", f"{name}(… {env})", name_token)
        elif name in rules.LOOKUPS:
            self._lookup(call, name_token, name)
        for rule, what, where in environment_findings(call, name_token, name, self.contexts):
            self._add(rule, what, where)
        if name in rules.PROGRAM_ARGUMENTS:
            self._program_arguments(call, name_token, name)
        elif name in rules.PIPE_DEVICES:
            self._pipe_device(call, name_token, name)
        elif name in rules.OVERRIDES:
            self._override(call, name_token, name)

    def _loader(self, call: Node, name_token: Node, name: str) -> None:
        formals = PACKAGE_LOADERS[name]
        args = match_args(call, formals)
        first = formals[0]
        if first not in args:
            return  # library() lists packages; library(help = x) loads nothing
        by_symbol = name in ("library", "require") and not self._is_true(args.get("character.only"))
        package = self._name(args[first], symbols=by_symbol)
        if package is None:
            self._add("dynamic-package", name, name_token)
        else:
            self._package(args[first], package)

    def _namespace_getter(self, call: Node, name_token: Node, name: str) -> None:
        formals = NAMESPACE_GETTERS[name]
        args = match_args(call, formals)
        by_symbol = name != "getExportedValue"
        package, function = (self._name(args[f], symbols=by_symbol) if f in args else None for f in formals)
        if name == ":::":
            self._add("internal-access", f"{package or '?'}:::{function or '?'}", name_token)
        elif package is None or function is None:
            self._add("computed-name" if package is not None else "dynamic-package", name, name_token)
        else:
            self._package(args[formals[0]], package)
            self._denied(args[formals[1]], function)

    def _lookup(self, call: Node, name_token: Node, name: str) -> None:
        formals, name_formals = rules.LOOKUPS[name]
        args = match_args(call, formals)
        names: list[str] = []
        for formal in name_formals:
            if formal not in args:
                continue
            expr = args[formal]
            token = single_token(expr)
            if token is not None and token.token == "STR_CONST":
                names.append(token.value or "")
            elif token is not None and token.token == "SYMBOL" and name in rules.FUNCTION_VALUE_LOOKUPS:
                continue  # a function object (checked as a reference), or a variable bound by the code
            elif name in rules.FUNCTION_VALUE_LOOKUPS and is_function(expr):
                continue  # do.call(function(x) x, list(1))
            elif name == "mget" and (literal := string_tokens(expr)) is not None:
                names.extend(t.value or "" for t in literal)
            else:
                self._add("computed-name", name, name_token)
                return
        if name == "getS3method" and len(names) == 2:
            names = [f"{names[0]}.{names[1]}"]
        for looked_up in names:
            self._denied(args[name_formals[0]], looked_up)

    def _program_arguments(self, call: Node, name_token: Node, name: str) -> None:
        formals = PROGRAM_FORMALS.get(name, ("...",))
        matched = match_args(call, formals)
        supplied = {arg_name for arg_name, _expr in call_args(call) if arg_name}
        for program in rules.PROGRAM_ARGUMENTS[name]:
            expr = matched.get(program)
            if expr is None and program not in supplied:
                continue
            token = single_token(expr) if expr is not None else None
            if name == "unzip" and token is not None and token.value == "internal":
                continue
            self._add("program-argument", f"{name}({program} = …)", name_token)

    def _pipe_device(self, call: Node, name_token: Node, name: str) -> None:
        expr = match_args(call, rules.PIPE_DEVICES[name]).get("file")
        token = single_token(expr) if expr is not None else None
        if token is not None and token.token == "STR_CONST" and (token.value or "").lstrip().startswith("|"):
            self._add("program-argument", f'{name}(file = "|…")', name_token)

    def _override(self, call: Node, name_token: Node, name: str) -> None:
        if name in ("registerS3method", ".S3method"):
            self._add("base-override", name, name_token)
            return
        args = call_args(call)
        first = args[0][1] if args and args[0][1] is not None else None
        token = single_token(first) if first is not None else None
        generic = token.value if token is not None and token.token == "STR_CONST" else None
        if generic is None or generic in _r_function_names():
            self._add("base-override", f"{name}({generic or '?'})", name_token)

    # --- helpers ------------------------------------------------------------------------------------
    def _name(self, expr: Node, *, symbols: bool) -> str | None:
        """The name an argument spells literally: a string, or a bare symbol where R substitutes it."""
        token = single_token(expr)
        if token is None or token.token not in ("STR_CONST", "SYMBOL") or (token.token == "SYMBOL" and not symbols):
            return None
        self.quoted.add(token.id)
        return token.value

    def _is_true(self, expr: Node | None) -> bool:
        """Whether ``character.only`` may be TRUE: anything but a literal FALSE (or F the code keeps)."""
        token = single_token(expr) if expr is not None else None
        if token is None:
            return expr is not None
        return not (token.value == "FALSE" or (token.value == "F" and "F" not in self.bindings))

    def _denied(self, where: Node, name: str | None) -> None:
        if name in rules.DENIED_FUNCTIONS:
            self._add(rules.rule_of(name), name, where)

    def _package(self, where: Node, package: str | None) -> None:
        if package is not None and package not in self.packages:
            self._add("package-not-allowed", package, where)

    def _add(self, rule: str, name: str, where: Node) -> None:
        text = messages.message(rule, name, where.line, self.language)
        self.found.append(Violation(rule, name, where.line, where.col, text))


def _handed_on(symbol: Node) -> bool:
    """Whether a function named as a value is bound to another name or handed to a function that
    calls what it is given (``f <- get``, ``lapply(x, get)``, ``x |> lapply(get)``)."""
    expr = symbol.parent
    holder = expr.parent if expr is not None else None
    if holder is None:
        return False
    if assignment_target(holder) is not None:
        return True
    if is_call(holder) and holder.children[0] is not expr:
        name_token = callee(holder)
        return name_token is None or name_token.value in rules.HIGHER_ORDER
    return False


def _protected_environment(expr: Node) -> str | None:
    """Which protected environment an ``envir``/``pos`` argument names, if any."""
    token = single_token(expr)
    if token is not None and token.token == "NUM_CONST":
        number = (token.value or "").rstrip("L")
        if number.replace(".", "", 1).isdigit() and float(number) >= 1:
            return f"pos = {number}"
    for node in expr.walk():
        if node.token in ("SYMBOL", "SYMBOL_FUNCTION_CALL", "STR_CONST") and node.value in rules.PROTECTED_ENVIRONMENTS:
            return node.value
    return None


_FUNCTION_NAMES: list[frozenset[str]] = []  # cache: R's own function names, read once


def _r_function_names() -> frozenset[str]:
    """Every name in the namespaces of base, stats, utils, graphics, grDevices and methods."""
    if not _FUNCTION_NAMES:
        import rpy2.rinterface as ri

        names = ri.evalr(
            'unique(unlist(lapply(c("base", "stats", "utils", "graphics", "grDevices", "methods"), '
            "function(p) ls(asNamespace(p), all.names = TRUE))))"
        )
        _FUNCTION_NAMES.append(frozenset(str(n) for n in names))
    return _FUNCTION_NAMES[0]
