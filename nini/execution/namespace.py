"""``describe_namespace``: the variables of a notebook's kernel, described for the agent's prompt.

It runs inside the user's kernel (in-process for ``%%nini``; through ``user_expressions`` for the
sidebar), on whatever the user has there, so it must be cheap and must not fail: it reads shapes,
dtypes and a few leading values through views (``iloc[:3]``), never the data as a whole, so a 10 GB
DataFrame costs what a small one does; every repr is bounded and an object whose attributes or
repr raise is left out. Largest objects first, within a token budget.
"""

from __future__ import annotations

import reprlib
from collections.abc import Callable, Mapping
from typing import Any

HEADER = "## Variables in the notebook's kernel\n\nThese are in the kernel where your code runs; use them by name."
EXAMPLE_ROWS = 3
MAX_COLUMNS = 20
MAX_STRING = 200
HIDDEN = frozenset({"In", "Out", "exit", "quit", "get_ipython", "datasets"})

_repr = reprlib.Repr()
_repr.maxstring, _repr.maxother, _repr.maxlist, _repr.maxtuple, _repr.maxdict = 40, 40, 5, 5, 5


def describe_namespace(namespace: Mapping[str, Any], max_tokens: int) -> str:
    """The variables of ``namespace`` as a Markdown section of at most ``max_tokens`` tokens ("" when
    there is nothing to describe or no budget)."""
    from nini.tokens import count_tokens

    if max_tokens <= 0:
        return ""
    entries = []
    for name, value in list(namespace.items()):
        if name.startswith("_") or name in HIDDEN:
            continue
        try:
            described = _describe(name, value)
        except Exception:  # a hostile or broken object: left out, never the turn's failure
            continue
        if described is not None:
            entries.append(described)
    entries.sort(key=lambda entry: -entry[0])
    lines, used = [HEADER], count_tokens(HEADER)
    for index, (_size, text) in enumerate(entries):
        cost = count_tokens(text) + 1
        if used + cost > max_tokens - 12:  # room for the line saying what was left out
            lines.append(f"- … and {len(entries) - index} more (smaller) variables")
            break
        lines.append(text)
        used += cost
    return "\n".join(lines) if len(lines) > 1 else ""


def namespace_expression(max_tokens: int) -> str:
    """A Python expression that, evaluated in a kernel's namespace (``user_expressions``), gives
    ``describe_namespace`` of it; its text/plain is the repr of a str (``ast.literal_eval`` it)."""
    return (f"__import__('nini.execution.namespace', fromlist=['describe_namespace'])"
            f".describe_namespace(globals(), {int(max_tokens)})")  # fmt: skip


def _describe(name: str, value: Any) -> tuple[int, str] | None:
    """(size in bytes for ordering, one Markdown entry), or None for what is not data."""
    kind = type(value)
    module = kind.__module__.split(".")[0]
    if module == "pandas" and kind.__name__ == "DataFrame":
        return _frame(name, value)
    if module == "pandas" and kind.__name__ == "Series":
        size = int(value.memory_usage(index=False, deep=False))
        examples = ", ".join(_short(v) for v in value.iloc[:EXAMPLE_ROWS].tolist())
        return size, f"- `{name}`: Series, length {len(value):,}, dtype {value.dtype}; e.g. {examples}"
    if module == "numpy" and kind.__name__ == "ndarray":
        return int(value.nbytes), f"- `{name}`: ndarray, shape {tuple(value.shape)}, dtype {value.dtype}"
    if isinstance(value, bool | int | float | complex) or (module == "numpy" and hasattr(value, "dtype")):
        return 8, f"- `{name}` = {_short(value)} ({kind.__name__})"
    if isinstance(value, str):
        return len(value), f"- `{name}` = {_repr.repr(value[:MAX_STRING])} (str, {len(value):,} characters)"
    if isinstance(value, list | tuple | dict | set):
        return len(value), f"- `{name}`: {kind.__name__} of {len(value):,}; {_short(value)}"
    return None  # modules, functions, classes and other objects are not what the question is about


def _frame(name: str, frame: Any) -> tuple[int, str]:
    size = int(frame.memory_usage(index=False, deep=False).sum())  # from dtypes: no scan of the data
    rows, columns = frame.shape
    head = frame.iloc[:EXAMPLE_ROWS, :MAX_COLUMNS]  # a view, whatever the frame's size
    parts = []
    for position, column in enumerate(head.columns):
        examples = ", ".join(_short(v) for v in head.iloc[:, position].tolist())
        parts.append(f"`{str(column)[:60]}` {frame.dtypes.iloc[position]} ({examples})")
    more = f"; and {columns - MAX_COLUMNS} more columns" if columns > MAX_COLUMNS else ""
    return size, f"- `{name}`: DataFrame, {rows:,} rows × {columns} columns: {'; '.join(parts)}{more}"


def _short(value: Any, shorten: Callable[[Any], str] = _repr.repr) -> str:
    text = shorten(value)
    return text if len(text) <= 60 else text[:57] + "..."
