"""Agent code handling R's own environments: the lookups and hand-offs the static policy refuses.

An environment's members are the real functions, so ``[[`` on one is a lookup by name (the policy
checks the name). These do what ``[[`` does and are checked the same way: ``.subset2``,
``getElement``, purrr's ``pluck``/``chuck``, magrittr's ``extract2``, ``[`` on an environment's
members as a list; ``eapply`` hands every member to a function, and so does an environment given to
a function that calls what it is given (``Reduce(function(e, n) e[[n]], n, baseenv())``,
``Map(f, list(baseenv()))``) or looped over (``for (f in as.list(baseenv()))``): lookups by computed
names (for these, only R's or a package's environments count: the code's own hold its own values). Code given
R's own environment runs past the masks, so a formula or function made around one (``as.formula(text, env =
baseenv())`` then ``purrr::as_mapper``) is refused too.

These are early, clear refusals. What they cannot see, the worker contains at run time: the
functions of ``rules.REPLACED``/``CHECKED`` and the ``.Internal``s of ``rules.REMOVED_INTERNALS``
are out of R itself, whichever way code reaches them.
"""

from __future__ import annotations

from r_sandbox import rules
from r_sandbox.calls import call_args, callee, is_call, match_args, single_token, string_tokens
from r_sandbox.contexts import Contexts
from r_sandbox.parse_data import Node

Finding = tuple[str, str, Node]  # (rule, name, where)
PIPES = ("PIPE", "%>%", "%T>%", "%<>%")
# Named arguments of higher-order functions that name where a *name* is looked up, not what is
# called: do.call("mean", x, envir = e) is checked as a lookup of "mean".
LOOKUP_ENVIRONMENTS = {"do.call": "envir", "exec": ".env"}


def environment_findings(call: Node, name_token: Node, name: str, contexts: Contexts) -> list[Finding]:
    """What the policy refuses in ``call`` (of the function ``name``) for how it uses environments."""
    found: list[Finding] = []
    if name in rules.ENV_ACCESSORS:
        found += _accessor(call, name_token, name, contexts)
    if name in rules.HIGHER_ORDER:
        found += _handed_on(call, name_token, name, contexts)
    if name in rules.ENVIRONMENT_TAKERS:
        found += _taker(call, name_token, name, contexts)
    return found


def subset_findings(node: Node, contexts: Contexts) -> list[Finding]:
    """``as.list(baseenv())[i]`` and ``for (f in as.list(baseenv()))``: members picked or walked."""
    kids = node.children
    if len(kids) >= 3 and kids[1].token == "'['" and contexts.is_foreign_environment(kids[0]):
        members = [kid for kid in kids[2:] if kid.token == "expr"]  # x[i], x[c("a", "b")]
        strings = [string_tokens(m) for m in members]
        if members and all(found is not None for found in strings):
            tokens = [t for found in strings if found is not None for t in found]
            return [(rules.rule_of(t.value), t.value, t) for t in tokens if t.value in rules.DENIED_FUNCTIONS]
        return [("computed-name", "[", kids[1])]
    if len(kids) >= 2 and kids[0].token == "FOR":
        condition = kids[1].children  # ( SYMBOL in expr )
        if len(condition) >= 4 and contexts.is_foreign_environment(condition[3]):
            return [("computed-name", "for", kids[0])]
    return []


def piped_input(call: Node) -> Node | None:
    """The left side of ``lhs |> f(...)`` or ``lhs %>% f(...)``: ``f``'s first argument."""
    holder = call.parent
    if holder is None or len(holder.children) != 3 or holder.children[2] is not call:
        return None
    operator = holder.children[1]
    return holder.children[0] if operator.token in PIPES or operator.value in PIPES else None


def _accessor(call: Node, name_token: Node, name: str, contexts: Contexts) -> list[Finding]:
    """``.subset2(env, "name")`` checked like ``env[["name"]]``."""
    formals = rules.ENV_ACCESSORS[name]
    supplied = [expr for _arg, expr in call_args(call) if expr is not None]
    target = piped_input(call)
    if target is None:
        target = match_args(call, formals).get(formals[0])
        supplied = [expr for expr in supplied if expr is not target]
    if target is None or not contexts.is_environment(target) or not supplied:
        return []
    member = single_token(supplied[0])
    if member is not None and member.token == "STR_CONST":
        value = member.value or ""
        return [(rules.rule_of(value), value, member)] if value in rules.DENIED_FUNCTIONS else []
    return [("computed-name", name, name_token)]


def _handed_on(call: Node, name_token: Node, name: str, contexts: Contexts) -> list[Finding]:
    """An environment (or a list of them) handed to a function that calls what it is given
    (``eapply(baseenv(), f)`` calls ``f`` on every member)."""
    skipped = LOOKUP_ENVIRONMENTS.get(name)
    given = [expr for arg, expr in call_args(call) if expr is not None and (arg is None or arg != skipped)]
    if (piped := piped_input(call)) is not None:
        given.append(piped)
    for expr in given:
        if contexts.is_foreign_environment(expr) or any(contexts.is_foreign_environment(i) for i in _list_items(expr)):
            return [("computed-name", name, name_token)]
    return []


def _taker(call: Node, name_token: Node, name: str, contexts: Contexts) -> list[Finding]:
    """A formula or function made around an environment of R or of a package."""
    formals, env_formal = rules.ENVIRONMENT_TAKERS[name]
    if env_formal in formals:
        expr = match_args(call, formals).get(env_formal)
    else:  # structure(fo, .Environment = e): an attribute, named exactly
        expr = next((e for arg, e in call_args(call) if arg == env_formal), None)
    if expr is not None and contexts.is_foreign_environment(expr):
        return [("foreign-environment", f"{name}({env_formal} = …)", name_token)]
    return []


def _list_items(expr: Node) -> list[Node]:
    """The elements of ``list(a, b)`` or ``c(a, b)``; nothing for anything else."""
    name_token = callee(expr) if is_call(expr) else None
    if name_token is None or name_token.value not in ("list", "c"):
        return []
    return [item for _arg, item in call_args(expr) if item is not None]
