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
    entries = []  # (size, name, value, describe): sized first, described only while the budget lasts
    for name, value in list(namespace.items()):
        if name.startswith("_") or name in HIDDEN:
            continue
        try:
            found = _kind(value)
        except Exception:  # a hostile or broken object: left out, never the turn's failure
            continue
        if found is not None:
            entries.append((found[0], name, value, found[1]))
    entries.sort(key=lambda entry: -entry[0])
    lines, used = [HEADER], count_tokens(HEADER)
    for index, (_size, name, value, describe) in enumerate(entries):
        try:
            text = describe(name, value)
        except Exception:
            continue
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
    return (
        f"__import__('nini.execution.namespace', fromlist=['describe_namespace'])"
        f".describe_namespace(globals(), {int(max_tokens)})"
    )


def _kind(value: Any) -> tuple[int, Callable[[str, Any], str]] | None:
    """(size in bytes, for the order; how to describe it), or None for what is not data. The size
    comes from dtypes and lengths, never from a scan of the values."""
    kind = type(value)
    module = kind.__module__.split(".")[0]
    if module == "pandas" and kind.__name__ == "DataFrame":
        return int(value.memory_usage(index=False, deep=False).sum()), _frame
    if module == "pandas" and kind.__name__ == "Series":
        return int(value.memory_usage(index=False, deep=False)), _series
    if module == "numpy" and kind.__name__ == "ndarray":
        return int(
            value.nbytes
        ), lambda name, array: f"- `{name}`: ndarray, shape {tuple(array.shape)}, dtype {array.dtype}"
    if isinstance(value, bool | int | float | complex) or (module == "numpy" and hasattr(value, "dtype")):
        return 8, lambda name, scalar: f"- `{name}` = {_short(scalar)} ({type(scalar).__name__})"
    if isinstance(value, str):
        return len(
            value
        ), lambda name, text: f"- `{name}` = {_repr.repr(text[:MAX_STRING])} (str, {len(text):,} characters)"
    if isinstance(value, list | tuple | dict | set):
        return len(value), lambda name, items: f"- `{name}`: {type(items).__name__} of {len(items):,}; {_short(items)}"
    return None  # modules, functions, classes and other objects are not what the question is about


def _series(name: str, series: Any) -> str:
    examples = ", ".join(_short(v) for v in series.iloc[:EXAMPLE_ROWS].tolist())
    return f"- `{name}`: Series, length {len(series):,}, dtype {series.dtype}; e.g. {examples}"


def _frame(name: str, frame: Any) -> str:
    rows, columns = frame.shape
    head = frame.iloc[:EXAMPLE_ROWS, :MAX_COLUMNS]  # a view, whatever the frame's size
    parts = []
    for position, column in enumerate(head.columns):
        examples = ", ".join(_short(v) for v in head.iloc[:, position].tolist())
        parts.append(f"`{str(column)[:60]}` {frame.dtypes.iloc[position]} ({examples})")
    more = f"; and {columns - MAX_COLUMNS} more columns" if columns > MAX_COLUMNS else ""
    return f"- `{name}`: DataFrame, {rows:,} rows × {columns} columns: {'; '.join(parts)}{more}"


def _short(value: Any, shorten: Callable[[Any], str] = _repr.repr) -> str:
    text = shorten(value)
    return text if len(text) <= 60 else text[:57] + "..."
