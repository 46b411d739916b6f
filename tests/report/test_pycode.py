"""Code in a notebook is someone else's: parsing it is quiet, bounded, and never raises."""

from __future__ import annotations

import warnings

from nini.report import pycode


def test_a_latex_label_parses_without_printing_a_warning() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an "invalid escape sequence" warning would raise here
        tree = pycode.parse("plt.title('$\\lambda$ over time')")
    assert tree is not None and len(tree.body) == 1


def test_code_nested_too_deep_or_too_long_gives_none() -> None:
    assert pycode.parse("-" * 100_000 + "1") is None  # exhausts the parser's stack
    assert pycode.parse("(" * 1_000 + ")" * 1_000) is None  # too many nested parentheses
    assert pycode.parse("x = 1\n" * (pycode.MAX_CODE_CHARS // 6 + 1)) is None


def test_magics_and_prose_give_none() -> None:
    assert pycode.parse("%time fit(x)") is None
    assert pycode.parse("This is prose, not code.") is None
