"""Where a name in R code is data, and which expressions hold environments: the two judgements the
policy needs beyond "which function is called".

* Data: in ``filter(d, source == "web")`` the bare ``source`` is a column, evaluated in the data
  first; likewise inside ``[``/``[[`` and in quoted code (``~``, ``quote``, ``bquote``, ...). A
  function named there is never called by being named (a call is still a call).
* Environments: ``baseenv()``, ``asNamespace("stats")``, ``environment(fn)``, ``.GlobalEnv`` and
  names the code binds to one: members of these are the real functions, so ``[[`` with a computed
  name on them is a lookup by computed name. (Flow-insensitive: a name bound to an environment
  anywhere counts everywhere, which errs on the side of refusing.) Foreign ones are R's or a
  package's (everything but the code's own: ``environment()``, ``parent.frame()``, ``new.env()``):
  code run in one finds R's own bindings, not the worker's masks.
"""

from __future__ import annotations

from r_sandbox.calls import assignment_target, call_args, callee, is_call, match_args, single_token
from r_sandbox.parse_data import Node

# Verbs whose arguments are evaluated with the columns of a data frame in scope (dplyr, tidyr,
# ggplot2, data.table's `[`, base's with/within/subset/transform).
DATA_MASKING = frozenset(
    {
        "filter",
        "mutate",
        "transmute",
        "summarise",
        "summarize",
        "reframe",
        "arrange",
        "select",
        "rename",
        "rename_with",
        "relocate",
        "group_by",
        "count",
        "tally",
        "add_count",
        "add_tally",
        "distinct",
        "pull",
        "slice_min",
        "slice_max",
        "across",
        "if_any",
        "if_all",
        "case_when",
        "if_else",
        "coalesce",
        "n_distinct",
        "pivot_longer",
        "pivot_wider",
        "separate",
        "separate_wider_delim",
        "unite",
        "fill",
        "drop_na",
        "nest",
        "unnest",
        "complete",
        "expand",
        "replace_na",
        "extract",
        "aes",
        "vars",
        "facet_wrap",
        "facet_grid",
        "with",
        "within",
        "subset",
        "transform",
        "aggregate",
    }
)
QUOTING = frozenset({"quote", "bquote", "substitute", "expression", "alist", "enquote"})
ENV_GETTERS = frozenset(
    {
        "globalenv",
        "baseenv",
        "emptyenv",
        "environment",
        "topenv",
        "parent.env",
        "parent.frame",
        "sys.frame",
        "as.environment",
        "pos.to.env",
        "asNamespace",
        "getNamespace",
        ".getNamespace",
        "loadNamespace",
        "attachNamespace",
        "attach",
        "new.env",
        "list2env",
        "eapply",
    }
)
ENV_SYMBOLS = frozenset({".GlobalEnv", ".BaseNamespaceEnv", ".AutoloadEnv"})
# Environment getters that give the code's own environments (or, for emptyenv, one that finds nothing);
# new.env and list2env too unless their parent is foreign.
OWN_ENV_GETTERS = frozenset({"parent.frame", "emptyenv"})
MGET_FORMALS = ("x", "envir", "mode", "ifnotfound", "inherits")
NEW_ENV_FORMALS = {"new.env": ("hash", "parent", "size"), "list2env": ("x", "envir", "parent", "hash", "size")}


class Contexts:
    """Data positions and environment-valued expressions of one piece of code."""

    def __init__(self, nodes: list[Node]) -> None:
        self._data: set[int] = set()
        self._aliases: set[str] = set()
        self._foreign: set[str] = set()
        self._find_aliases(nodes)
        for node in nodes:
            for part in self._data_parts(node):
                self._data.update(n.id for n in part.walk())

    def _find_aliases(self, nodes: list[Node]) -> None:
        assignments = [
            (target, value) for node in nodes if (pair := _assignment(node)) is not None for target, value in [pair]
        ]
        changed = True
        while changed:  # e <- baseenv(); f <- e: both hold an environment
            changed = False
            for target, value in assignments:
                if target not in self._aliases and self.is_environment(value):
                    self._aliases.add(target)
                    changed = True
                if target not in self._foreign and self.is_foreign_environment(value):
                    self._foreign.add(target)
                    changed = True

    def is_data(self, node: Node) -> bool:
        return node.id in self._data

    def is_environment(self, expr: Node) -> bool:
        """Whether ``expr`` evaluates to an environment (as far as the text tells)."""
        while expr.token == "expr" and len(expr.children) == 3 and expr.children[0].token == "'('":
            expr = expr.children[1]  # (e)
        token = single_token(expr)
        if token is not None:
            return token.token == "SYMBOL" and (token.value in ENV_SYMBOLS or token.value in self._aliases)
        if not is_call(expr):
            return False
        name_token = callee(expr)
        name = name_token.value if name_token is not None else None
        if name in ENV_GETTERS:
            return True
        if name in ("as.list", "mget"):  # the members of an environment, as a list
            args = call_args(expr)
            return bool(args) and args[0][1] is not None and self.is_environment(args[0][1])
        return False

    def is_foreign_environment(self, expr: Node) -> bool:
        """Whether ``expr`` evaluates to an environment of R or of a package (as far as the text tells)."""
        while expr.token == "expr" and len(expr.children) == 3 and expr.children[0].token == "'('":
            expr = expr.children[1]
        token = single_token(expr)
        if token is not None:
            return token.token == "SYMBOL" and (token.value in ENV_SYMBOLS or token.value in self._foreign)
        name_token = callee(expr) if is_call(expr) else None
        name = name_token.value if name_token is not None else None
        if name in ("as.list", "mget"):  # the members of an environment, as a list
            args = call_args(expr)
            members = args[0][1] if name == "as.list" and args else match_args(expr, MGET_FORMALS).get("envir")
            return members is not None and self.is_foreign_environment(members)
        if name not in ENV_GETTERS:
            return False
        if name == "environment":
            return bool(call_args(expr))  # environment(): the code's own frame; environment(fn): fn's home
        if name in NEW_ENV_FORMALS:
            parent = match_args(expr, NEW_ENV_FORMALS[name]).get("parent")
            return parent is not None and self.is_foreign_environment(parent)
        return name not in OWN_ENV_GETTERS

    def _data_parts(self, node: Node) -> list[Node]:
        """The sub-expressions of ``node`` that are data or quoted code. ``with(e, ...)`` on an
        environment is not data: its code would look names up there, past the run-time masks."""
        kids = node.children
        if node.token != "expr" or len(kids) < 2:
            return []
        if any(kid.token == "'~'" for kid in kids):
            return [node]  # a formula: quoted as a whole
        if kids[0].token == "expr" and kids[1].token in ("'['", "LBB"):
            return [kid for kid in kids[2:] if kid.token == "expr"]
        name_token = callee(node) if is_call(node) else None
        if name_token is None or not (name_token.value in DATA_MASKING or name_token.value in QUOTING):
            return []
        args = [expr for _name, expr in call_args(node) if expr is not None]
        if name_token.value in ("with", "within", "subset", "transform") and args and self.is_environment(args[0]):
            return []
        return args


def _assignment(node: Node) -> tuple[str, Node] | None:
    target = assignment_target(node)
    if target is None:
        return None
    token = single_token(target)
    if token is None or token.token not in ("SYMBOL", "STR_CONST") or not token.value:
        return None
    kids = node.children
    value = kids[0] if kids[1].token == "RIGHT_ASSIGN" else kids[2]
    return token.value, value
