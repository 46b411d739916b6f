"""Candidates waiting for the user: ``.nini/experience/pending-compounding-candidates.json``, and on
a server that names its users, each named user's own ``pending-compounding-candidates.<key>.json``
(``nini.owners.owner_key``): what one user said is never shown to another.

``{"candidates": [...], "asked": false}``, candidates in their EXP-CANDIDATE JSON form. Every change
is a read-modify-write under an exclusive lock (a run's capture and ``nini remember`` may overlap),
written atomically, so a process killed mid-write leaves the old file or the new one. A file that
is not valid JSON (edited by hand, a foreign tool) is moved aside as ``*.damaged-<time>`` and named
in ``PendingState.problems``: nothing in it is lost and new candidates still have a place to go.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from nini.fsutil import atomic_write_text
from nini.memory.experience.model import Candidate

log = logging.getLogger("nini.memory.experience")

PENDING_NAME = "pending-compounding-candidates.json"


@dataclass
class PendingState:
    candidates: list[Candidate] = field(default_factory=list)
    asked: bool = False
    problems: list[str] = field(default_factory=list)

    def find(self, candidate_id: str) -> Candidate | None:
        return next((c for c in self.candidates if c.id == candidate_id), None)


class PendingFile:
    """The pending candidates of one project (``folder`` is its ``.nini/experience``) and one user
    (``key``: a named user's ``owner_key``; None: the server's own user, the plain file)."""

    def __init__(self, folder: Path, key: str | None = None) -> None:
        self.folder = folder
        self.path = folder / (PENDING_NAME if key is None else PENDING_NAME.replace(".json", f".{key}.json"))

    def load(self) -> PendingState:
        if not self.folder.is_dir():  # nothing pending; reading makes no .nini/ (only a write does)
            return PendingState()
        with self._locked():
            return self._read()

    @contextlib.contextmanager
    def change(self) -> Iterator[PendingState]:
        """The state to change in place; written back (atomically) when the block ends without error."""
        with self._locked():
            state = self._read()
            yield state
            payload = {"candidates": [c.to_json() for c in state.candidates], "asked": state.asked}
            atomic_write_text(self.path, json.dumps(payload, ensure_ascii=False, indent=2) + "\n")

    def add(self, candidates: list[Candidate]) -> PendingState:
        with self.change() as state:
            state.candidates.extend(candidates)
            state.asked = False
        return state

    def remove(self, ids: list[str]) -> None:
        with self.change() as state:
            state.candidates = [c for c in state.candidates if c.id not in set(ids)]

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self.folder.mkdir(parents=True, exist_ok=True)
        with open(self.folder / f".{self.path.name}.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _read(self) -> PendingState:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return PendingState()
        try:
            data = json.loads(text)
            if not isinstance(data, dict) or not isinstance(data.get("candidates", []), list):
                raise ValueError('not {"candidates": [...], "asked": ...}')
            candidates = [Candidate.from_json(item) for item in data.get("candidates", []) if isinstance(item, dict)]
            return PendingState(candidates, bool(data.get("asked", False)))
        except ValueError as exc:
            aside = self.path.with_name(f"{self.path.name}.damaged-{time.strftime('%Y%m%d-%H%M%S')}")
            self.path.rename(aside)
            problem = f"{self.path.name} was not valid ({exc}); it was kept as {aside.name} and a new one started"
            log.warning(problem)
            return PendingState(problems=[problem])
