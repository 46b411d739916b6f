"""Reading calls off R's parse tree the way R's evaluator reads them.

The policy asks questions such as "which function does this call call" and "what is assign()'s
``envir`` here"; the answers must match R's own rules (a string in call position names a function,
arguments match exactly, then by unique prefix, then by position), or a rewritten call slips past.
"""

from __future__ import annotations

from r_sandbox.parse_data import Node

NS_GET = ("NS_GET", "NS_GET_INT")
FUNCTION_TOKENS = ("FUNCTION", "'\\\\'")  # function(x) and \(x)
ASSIGN_TOKENS = ("LEFT_ASSIGN", "EQ_ASSIGN", "RIGHT_ASSIGN")
EXPRESSION_TOKENS = ("expr", "expr_or_assign_or_help", "equal_assign")  # top-level `x = 1` is not "expr"


def siblings(node: Node) -> list[Node]:
    return node.parent.children if node.parent is not None else [node]


def previous(node: Node) -> Node | None:
    """The token or expression just before ``node`` under the same parent."""
    kin = siblings(node)
    index = kin.index(node)
    return kin[index - 1] if index > 0 else None


def following(node: Node) -> Node | None:
    """The token or expression just after ``node`` under the same parent."""
    kin = siblings(node)
    index = kin.index(node)
    return kin[index + 1] if index + 1 < len(kin) else None


def is_call(node: Node) -> bool:
    """``f(...)``: an expression, then ``(`` (a function definition starts with FUNCTION instead)."""
    kids = node.children
    return node.token == "expr" and len(kids) >= 2 and kids[0].token == "expr" and kids[1].token == "'('"


def is_function(node: Node) -> bool:
    return node.token == "expr" and any(child.token in FUNCTION_TOKENS for child in node.children)


def callee(call: Node) -> Node | None:
    """The token naming the function called: ``f(...)``, ``pkg::f(...)``, ``"f"(...)``.

    None for a computed function (``x$f(...)``, ``f()(...)``, ``(function(x) x)(1)``).
    """
    head = call.children[0].children
    if len(head) == 1 and head[0].token in ("SYMBOL_FUNCTION_CALL", "STR_CONST"):
        return head[0]
    if len(head) == 3 and head[1].token in NS_GET:
        return head[2]
    return None


def assignment_target(node: Node) -> Node | None:
    """The expression assigned to, when ``node`` is ``target <- value`` (``=``, ``<<-``, ``->``, ``->>``)."""
    kids = node.children
    if node.token not in EXPRESSION_TOKENS or len(kids) != 3 or kids[1].token not in ASSIGN_TOKENS:
        return None
    return kids[2] if kids[1].token == "RIGHT_ASSIGN" else kids[0]


def call_args(call: Node) -> list[tuple[str | None, Node | None]]:
    """The supplied arguments of a call in order: ``(name or None, expression or None if empty)``."""
    args: list[tuple[str | None, Node | None]] = []
    segment: list[Node] = []
    for child in call.children[2:]:
        if child.token in ("','", "')'"):
            if segment or child.token == "','" or args:
                args.append(_argument(segment))
            segment = []
        else:
            segment.append(child)
    return args


def _argument(segment: list[Node]) -> tuple[str | None, Node | None]:
    if len(segment) >= 2 and segment[1].token == "EQ_SUB":
        return segment[0].value, segment[2] if len(segment) > 2 else None
    return None, segment[0] if segment else None


def match_args(call: Node, formals: tuple[str, ...]) -> dict[str, Node]:
    """Arguments of ``call`` by formal name, matched as R matches them (exact, unique prefix, position).

    Prefixes and positions only reach formals before ``...``.
    """
    before_dots = formals[: formals.index("...")] if "..." in formals else formals
    matched: dict[str, Node] = {}
    named: list[tuple[str, Node]] = []
    positional: list[Node | None] = []
    for name, expr in call_args(call):
        if name is None:
            positional.append(expr)
        elif expr is not None and name in formals and name != "..." and name not in matched:
            matched[name] = expr
        elif expr is not None:
            named.append((name, expr))
    for name, expr in named:
        candidates = [f for f in before_dots if f.startswith(name) and f not in matched]
        if len(candidates) == 1:
            matched[candidates[0]] = expr
    free = [f for f in before_dots if f not in matched]
    for formal, expr in zip(free, positional, strict=False):
        if expr is not None:
            matched[formal] = expr
    return matched


def single_token(expr: Node) -> Node | None:
    """The token an expression consists of (``x``, ``"a"``, ``TRUE``), if it is just one."""
    kids = expr.children
    if expr.token == "expr" and len(kids) == 1 and not kids[0].children:
        return kids[0]
    return None


def string_tokens(expr: Node) -> list[Node] | None:
    """The string tokens of ``"a"`` or ``c("a", "b")``; None for anything else."""
    token = single_token(expr)
    if token is not None:
        return [token] if token.token == "STR_CONST" else None
    name_token = callee(expr) if is_call(expr) else None
    if name_token is None or name_token.value != "c":
        return None
    found = []
    for _name, arg in call_args(expr):
        inner = single_token(arg) if arg is not None else None
        if inner is None or inner.token != "STR_CONST":
            return None
        found.append(inner)
    return found


def enclosing_function(node: Node) -> Node | None:
    """The innermost ``function(...)`` / ``\\(...)`` expression around ``node``."""
    parent = node.parent
    while parent is not None and not is_function(parent):
        parent = parent.parent
    return parent
