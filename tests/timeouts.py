"""The one setting every wait in the tests derives from: ``NINI_TEST_TIMEOUT_SCALE``.

A test waits on an event, a file, a port or a state, never for a fixed time; the limit on that wait
only says when to give up. The limits are written as what a quiet 2-core machine needs with a wide
margin (``timeout(60)``), and this module multiplies them: on a machine loaded many times over (a CI
runner shared with other jobs, ``scripts/load.py``), ``NINI_TEST_TIMEOUT_SCALE=3`` stretches every
wait at once instead of test by test. A limit that is the behaviour under test (``timeout_s=1`` to
make a run time out) is not a wait and stays as written.
"""

from __future__ import annotations

import os

SCALE_VARIABLE = "NINI_TEST_TIMEOUT_SCALE"
DEFAULT_SCALE = 1.0


def _read_scale() -> float:
    """The factor from the environment (at least 1: a limit is never made shorter than written)."""
    raw = os.environ.get(SCALE_VARIABLE, "").strip()
    try:
        return max(1.0, float(raw)) if raw else DEFAULT_SCALE
    except ValueError:
        raise ValueError(f"{SCALE_VARIABLE} must be a number, got {raw!r}") from None


# Read once, when tests/conftest.py imports this module: the autouse ``nini_home`` fixture removes
# every NINI_* variable from each test's environment, this one included.
SCALE = _read_scale()


def scale() -> float:
    """The factor every limit is multiplied by."""
    return SCALE


def timeout(seconds: float) -> float:
    """How long to wait for something that takes well under ``seconds`` on a quiet machine, in seconds."""
    return seconds * scale()


def timeout_ms(seconds: float) -> float:
    """:func:`timeout` in milliseconds, as Playwright takes it."""
    return timeout(seconds) * 1000
