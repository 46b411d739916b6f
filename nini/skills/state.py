"""Persisted enable/disable overrides: ``NINI_HOME/skills_state.json``."""

from __future__ import annotations

import json
import logging
import os
import secrets
import time
from pathlib import Path

from nini.fsutil import atomic_write_text

log = logging.getLogger("nini.skills")
STATE_VERSION = 1


def read_overrides(path: Path) -> tuple[dict[str, bool], str | None]:
    """``({name: enabled}, problem)``; an unreadable or malformed file reads as no overrides."""
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}, None
    except (OSError, UnicodeDecodeError) as exc:
        return {}, f"{path.name} cannot be read ({exc}); every skill uses its default"
    try:
        data = json.loads(raw)
        skills = data["skills"]
        if not isinstance(skills, dict) or not all(isinstance(v, bool) for v in skills.values()):
            raise TypeError("'skills' must map names to true or false")
    except (ValueError, KeyError, TypeError) as exc:
        return {}, f"{path.name} is malformed ({exc}); every skill uses its default"
    return {str(k): v for k, v in skills.items()}, None


def write_override(path: Path, name: str, enabled: bool) -> None:
    """Record one skill's state, keeping the others. A malformed file is kept aside, not lost."""
    overrides, problem = read_overrides(path)
    if problem and path.exists():
        # unique even for two corruptions in one second of one process: never overwrite an earlier one
        stamp = f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}-{secrets.token_hex(4)}"
        aside = path.with_name(f"{path.name}.corrupt-{stamp}")
        os.replace(path, aside)
        log.warning("moved malformed %s aside to %s", path.name, aside.name)
    overrides[name] = enabled
    atomic_write_text(
        path, json.dumps({"version": STATE_VERSION, "skills": dict(sorted(overrides.items()))}, indent=2) + "\n"
    )
