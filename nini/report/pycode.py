"""Python source from a notebook or a session, parsed safely: the code is someone else's.

Every report module that reads code (labels, captions, imports, printed names) parses through
``parse``: bounded in size, quiet (a notebook's LaTeX label ``'\\lambda'`` is an "invalid escape
sequence" warning that is not nini's to print), and None for whatever does not parse, including
code nested deep enough to exhaust the parser.
"""

from __future__ import annotations

import ast
import warnings

MAX_CODE_CHARS = 200_000  # a cell longer than this is generated code, not a step to read labels from


def parse(code: str) -> ast.Module | None:
    """The module ``code`` parses to, or None (too long, not Python, or too deep to parse)."""
    if len(code) > MAX_CODE_CHARS:
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(code)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
