"""Static policy for agent R code: refuse, before it runs, code that reaches a denied function.

R's own parser reads the code (``r_sandbox.parse_data``), so comments and strings never raise a false
alarm and no spelling hides a call: backquotes, escapes, ``base::``/``base:::``, a string in call
position, a replacement form (``environment(f) <- e`` calls ``environment<-``), or the function passed
around as a value (``f <- system``, ``lapply(x, system)``). The names come from ``r_sandbox.rules``,
which the worker's run-time masks share; neither sees ``e$system`` once ``e`` holds base's environment.

Decisions beyond the rules list:

* A call of a denied name is always denied, even after ``url <- "a.csv"``: R skips non-function
  bindings when it looks up a function. A bare reference is a variable when the code binds the name
  first (an assignment finished earlier in the text, a for variable, a parameter of an enclosing
  function; inside a function body, also a binding anywhere outside that function): ``url <- url``
  and ``f <- url; url <- 1`` stay denied.
* ``x$system`` / ``x@system`` and argument names (``f(system = 1)``) are not references, but
  ``x$system(...)`` is a call and ``baseenv()$system`` / ``asNamespace("base")[["system"]]`` are denied.
* ``<<-`` is allowed: it assigns up the user's own environment chain, and base bindings are locked.
  ``assign``/``delayedAssign``/``makeActiveBinding``/``list2env`` into a protected environment, or
  into a search-path position given as a number (``pos = 1`` is the global env), are denied.
* Packages: ``library``/``require`` (symbol or string), ``requireNamespace``, ``loadNamespace``,
  ``attachNamespace``, ``pkg::f``, ``pkg:::f``,
  `` `::`(pkg, f) `` and ``getExportedValue(pkg, f)`` must name an allowed package literally;
  ``character.only = TRUE`` with a variable, or a loader passed as a value (``lapply(p, library)``),
  is ``dynamic-package``. ``loadedNamespaces()``/``isNamespaceLoaded()`` load nothing and are allowed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from r_sandbox import rules
from r_sandbox.calls import (
    EXPRESSION_TOKENS, NS_GET, assignment_target, callee, call_args, enclosing_function, following, is_call,
    is_function, match_args, previous, single_token,
)  # fmt: skip
from r_sandbox.parse_data import Node, ParseFailure, parse_r

__all__ = ["PolicyReport", "SyntaxProblem", "Violation", "check_r_code", "first_violation_message"]

PACKAGE_LOADERS: dict[str, tuple[str, ...]] = {
    "library": ("package", "help", "pos", "lib.loc", "character.only", "logical.return", "warn.conflicts",
                "quietly", "verbose", "mask.ok", "exclude", "include.only", "attach.required"),
    "require": ("package", "lib.loc", "quietly", "warn.conflicts", "character.only", "mask.ok", "exclude",
                "include.only", "attach.required"),
    "requireNamespace": ("package", "...", "quietly"),
    "loadNamespace": ("package", "lib.loc", "keep.source", "partial", "versionCheck", "keep.parse.data"),
    "attachNamespace": ("ns", "pos", "depends", "exclude", "include.only"),
}  # fmt: skip
NAMESPACE_GETTERS: dict[str, tuple[str, ...]] = {"::": ("pkg", "name"), ":::": ("pkg", "name"),
                                                 "getExportedValue": ("ns", "name")}
# Functions that assign into an environment: their formals and which of them name the environment.
ASSIGNERS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "assign": (("x", "value", "pos", "envir", "inherits", "immediate"), ("pos", "envir")),
    "delayedAssign": (("x", "value", "eval.env", "assign.env"), ("assign.env",)),
    "makeActiveBinding": (("sym", "fun", "env"), ("env",)),
    "list2env": (("x", "envir", "parent", "hash", "size"), ("envir",)),
}
# Expressions whose `$`/`[[` members are the real functions, not the masks.
ENVIRONMENT_GETTERS = frozenset(rules.PROTECTED_ENVIRONMENTS) | {
    "asNamespace", "getNamespace", ".getNamespace", "as.environment", "topenv", "parent.env", "parent.frame",
    "sys.frame", "environment", "pos.to.env", "loadNamespace",
}  # fmt: skip


@dataclass(frozen=True)
class Violation:
    """One refused use: ``rule`` is ``denied-<group>``, ``protected-environment``, ``package-not-allowed``
    or ``dynamic-package``; ``name`` the function or package; ``message`` one line for people."""

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


def check_r_code(code: str, allowed_packages: Iterable[str] | None = None) -> PolicyReport:
    """Check R code against the policy; ``allowed_packages`` adds to ``rules.DEFAULT_PACKAGES``.

    Raises ``RSandboxError("R_UNAVAILABLE", ...)`` when R or rpy2 cannot be loaded. Starts embedded R
    on first use (through ``rpy2.rinterface``); call it from the thread that owns R.
    """
    parsed = parse_r(code)
    if isinstance(parsed, ParseFailure):
        return PolicyReport(syntax_error=SyntaxProblem(parsed.line, parsed.message))
    found = _Checker(parsed, rules.DEFAULT_PACKAGES | set(allowed_packages or ())).run()
    unique = {(v.line, v.column, v.rule, v.name): v for v in found}
    return PolicyReport(violations=[unique[key] for key in sorted(unique)])


def first_violation_message(report: PolicyReport) -> str | None:
    """One line saying why the code was refused (None when it is allowed), for the worker's error."""
    if report.syntax_error is not None:
        where = f"line {report.syntax_error.line}: " if report.syntax_error.line else ""
        return f"{where}R syntax error: {report.syntax_error.message.splitlines()[0]}"
    return report.violations[0].message if report.violations else None


@dataclass(frozen=True)
class _Binding:
    target: Node  # the bound name's token
    after: tuple[int, int]  # bound once the text has passed this point...
    scope: Node | None = None  # ...or, for a parameter, inside this function


class _Checker:
    """One pass over the parse tree of one piece of code."""

    def __init__(self, roots: list[Node], packages: frozenset[str] | set[str]) -> None:
        self.nodes = [node for root in roots for node in root.walk()]
        self.packages = packages
        self.found: list[Violation] = []
        self.bindings: dict[str, list[_Binding]] = {}
        for node in self.nodes:
            self._collect_bindings(node)
        self.targets = {b.target.id for group in self.bindings.values() for b in group if b.scope is None}
        self.quoted: set[int] = set()  # symbols R reads as names, not values: library(pkg), `::`(pkg, f)

    def run(self) -> list[Violation]:
        for node in self.nodes:
            if node.token == "SYMBOL_FUNCTION_CALL":
                self._denied(node, node.value, "call")
            elif node.token == "SYMBOL":
                self._symbol(node)
            elif node.token == "STR_CONST":
                self._string(node)
            elif node.token == "SYMBOL_PACKAGE":
                self._package(node, node.value)
            elif node.token in EXPRESSION_TOKENS:
                self._expression(node)
        return self.found

    def _collect_bindings(self, node: Node) -> None:
        target = assignment_target(node)
        if target is not None and (token := single_token(target)) is not None and token.token in ("SYMBOL", "STR_CONST"):
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

    def _symbol(self, node: Node) -> None:
        before = previous(node)
        if before is not None and before.token in ("'$'", "'@'"):
            return  # x$system: a member, not the function (see _expression for environments)
        explicit = before is not None and before.token in NS_GET
        if node.id in self.targets or node.id in self.quoted or (not explicit and self._is_variable(node.value or "", node)):
            return
        self._denied(node, node.value, "namespace" if explicit else "reference")
        if node.value in PACKAGE_LOADERS:  # lapply(pkgs, library, character.only = TRUE)
            self._add("dynamic-package", node.value, node,
                      f"{node.value} passed as a value loads packages that cannot be checked; call it with a literal name")

    def _string(self, node: Node) -> None:
        before, after, parent = previous(node), following(node), node.parent
        if before is not None and before.token in NS_GET:
            self._denied(node, node.value, "namespace")  # base::"system"
        elif after is not None and after.token in NS_GET:
            self._package(node, node.value)  # "pkg"::f
        elif parent is not None and parent.parent is not None and is_call(parent.parent) \
                and parent.parent.children[0] is parent:
            self._denied(node, node.value, "call")  # "system"("ls") calls system

    def _expression(self, node: Node) -> None:
        if is_call(node) and (name_token := callee(node)) is not None:
            self._call(node, name_token, name_token.value or "")
        target = assignment_target(node)
        while target is not None:  # environment(f) <- e calls `environment<-`
            target = self._replacement(target)
        kids = node.children
        if len(kids) >= 3 and kids[1].token in ("'$'", "LBB") and _is_environment(kids[0]):
            member = kids[2] if kids[1].token != "LBB" else single_token(kids[2])
            if member is not None and member.token in ("SYMBOL", "STR_CONST"):
                self._denied(member, member.value, "member")

    def _replacement(self, target: Node) -> Node | None:
        """Check one level of a complex assignment target and return the next one inwards."""
        if is_call(target):
            name_token = callee(target)
            if name_token is not None and name_token.value:
                self._denied(name_token, name_token.value + "<-", "call")
            first = call_args(target)[:1]
            return first[0][1] if first else None
        kids = target.children
        return kids[0] if len(kids) > 1 and kids[0].token == "expr" else None  # x[i], x[[i]], x$a, x@a

    def _call(self, call: Node, name_token: Node, name: str) -> None:
        if name in PACKAGE_LOADERS:
            args = match_args(call, PACKAGE_LOADERS[name])
            first = PACKAGE_LOADERS[name][0]
            if first not in args:
                return  # library() lists packages; library(help = x) loads nothing
            by_symbol = name in ("library", "require") and not self._is_true(args.get("character.only"))
            package = self._name(args[first], symbols=by_symbol)
            if package is None:
                self._dynamic(name_token, name)
            else:
                self._package(args[first], package)
        elif name in NAMESPACE_GETTERS:
            formals = NAMESPACE_GETTERS[name]
            args = match_args(call, formals)
            by_symbol = name != "getExportedValue"
            package, function = (self._name(args[f], symbols=by_symbol) if f in args else None for f in formals)
            if package is None or function is None:
                self._dynamic(name_token, name)
                return
            self._package(args[formals[0]], package)
            self._denied(args[formals[1]], function, "namespace")
        elif name in ASSIGNERS:
            formals, env_formals = ASSIGNERS[name]
            args = match_args(call, formals)
            for formal in env_formals:
                if formal in args and (env := _protected_environment(args[formal])) is not None:
                    self._add("protected-environment", name, name_token,
                              f"{name}() into {env} is not allowed")

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

    def _denied(self, where: Node, name: str | None, kind: str) -> None:
        if name not in rules.DENIED_FUNCTIONS:
            return
        text = {
            "call": f"{name}() is not allowed",
            "namespace": f"{name} is not allowed",
            "member": f"{name} taken out of an environment is not allowed",
            "reference": f"{name} is not allowed, not even as a value (for a data column, write .data${name})",
        }[kind]
        self._add(rules.rule_of(name), name, where, text)

    def _package(self, where: Node, package: str | None) -> None:
        if package is not None and package not in self.packages:
            self._add("package-not-allowed", package, where, f"package {package} is not allowed")

    def _dynamic(self, where: Node, function: str) -> None:
        self._add("dynamic-package", function, where,
                  f"{function}() with a package or name computed at run time cannot be checked; name it literally")

    def _add(self, rule: str, name: str, where: Node, text: str) -> None:
        message = f"line {where.line}: {text} (rule {rule})"
        self.found.append(Violation(rule, name, where.line, where.col, message))


def _is_environment(expr: Node) -> bool:
    """``baseenv()``, ``.GlobalEnv``, ``asNamespace("base")``: members of these are the real functions."""
    if is_call(expr):
        name_token = callee(expr)
        return name_token is not None and name_token.value in ENVIRONMENT_GETTERS
    token = single_token(expr)
    return token is not None and token.token == "SYMBOL" and token.value in rules.PROTECTED_ENVIRONMENTS


def _protected_environment(expr: Node) -> str | None:
    """Which protected environment an ``envir``/``pos`` argument names, if any."""
    token = single_token(expr)
    if token is not None and token.token == "NUM_CONST":
        number = (token.value or "").rstrip("L")
        if number.replace(".", "", 1).isdigit() and float(number) >= 1:
            return f"search path position {number}"
    for node in expr.walk():
        if node.token in ("SYMBOL", "SYMBOL_FUNCTION_CALL", "STR_CONST") and node.value in rules.PROTECTED_ENVIRONMENTS:
            return node.value
    return None
