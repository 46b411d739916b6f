"""Experience memory tests: a project folder, a team folder and a memory object over them."""

from __future__ import annotations

from pathlib import Path

import pytest

from nini.config import Settings
from nini.memory.experience import ExperienceMemory
from nini.memory.experience.model import Candidate


@pytest.fixture
def memory(settings: Settings, tmp_path: Path) -> ExperienceMemory:
    project = tmp_path / "project"
    project.mkdir()
    return ExperienceMemory(settings, project)


def candidate(
    decision: str = "use the median",
    alternatives: tuple[str, ...] = ("mean",),
    signal: str = "the revenue column has outliers",
    **values: object,
) -> Candidate:
    return Candidate(decision=decision, alternatives=list(alternatives), signal=signal, **values)  # type: ignore[arg-type]
