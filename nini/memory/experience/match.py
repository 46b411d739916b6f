"""Which experiences a run should be warned about, and the one line each gets in its prompt.

At the start of a run: the INDEX files for its stage (init: the team's only; the others: team and
project), active rows only, each scored against the request and the datasets in play
(``Similarity``), plus a stage bonus (+0.2 same stage, +0.1 adjacent) for rows that are relevant at
all (similarity of at least ``RELEVANT``: a bonus alone never makes a match). Scores of at least
the threshold (0.3) are kept, at most five, ties broken by Strength, then Scope, then team
standards first. A library's INDEX is parsed once per change of the file (size and mtime).
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nini.memory.experience.index import Library, ParsedIndex
from nini.memory.experience.model import SCOPES, STAGES, STRENGTHS, IndexRow
from nini.memory.experience.similarity import Prepared, Similarity

log = logging.getLogger("nini.memory.experience")

THRESHOLD = 0.3
MAX_MATCHES = 5
RELEVANT = 0.15
STAGE_BONUS = {0: 0.2, 1: 0.1}  # by the distance between the run's stage and the row's
LINE = {"zh": "⚠️ 高风险：{title}（参考 {file}）", "en": "⚠️ High risk: {title} (see {file})"}
HEADER = {
    "zh": "## 经验提醒\n\n以下经验与本次分析相关；需要全文时用 read_experience 读取所参考的文件。",
    "en": "## Experience\n\nThese experiences bear on this analysis; read_experience gives a referenced file in full.",
}


@dataclass
class Match:
    level: str
    row: IndexRow
    score: float

    @property
    def reference(self) -> str:
        """How the prompt and read_experience name the document: ``team/knowledge/EXP-0001.md``."""
        return f"{self.level}/{self.row.file}"

    def line(self, language: str = "zh") -> str:
        return LINE.get(language, LINE["zh"]).format(title=self.row.title, file=self.reference)

    def to_dict(self) -> dict[str, Any]:
        return {
            "level": self.level,
            "id": self.row.id,
            "title": self.row.title,
            "file": self.reference,
            "score": round(self.score, 3),
            "strength": self.row.strength,
            "scope": self.row.scope,
            "type": self.row.type,
        }


def libraries(team_dir: Path, project_dir: Path) -> dict[str, Library]:
    """The team library (a folder a team can share) and the project's, by level."""
    return {
        "team": Library("team", team_dir),
        "project": Library("project", project_dir / ".nini" / "experience" / "project"),
    }


def stage_levels(stage: str) -> tuple[str, ...]:
    return ("team",) if stage == "init" else ("team", "project")


class Matcher:
    """Matches requests against libraries; holds the parsed INDEX files and the embeddings between runs."""

    def __init__(self, similarity: Similarity | None = None) -> None:
        self.similarity = similarity or Similarity()
        self._parsed: dict[Path, tuple[tuple[int, int], tuple[ParsedIndex, list[IndexRow], Prepared | None]]] = {}

    def index(self, library: Library) -> ParsedIndex:
        """The library's INDEX, parsed again only when the file changed; problems are logged, good rows kept."""
        return self._entry(library)[0]

    def _entry(self, library: Library) -> tuple[ParsedIndex, list[IndexRow], Prepared | None]:
        """(the parsed INDEX, its active rows, those rows prepared for scoring), kept while the file is unchanged."""
        try:
            info = os.stat(library.index_path)
        except FileNotFoundError:
            return ParsedIndex(), [], None
        key = (info.st_size, info.st_mtime_ns)
        cached = self._parsed.get(library.index_path)
        if cached is not None and cached[0] == key:
            return cached[1]
        parsed = library.read(check_files=False)
        for problem in parsed.problems:
            log.warning("experience %s INDEX: %s", library.level, problem)
        entry = (parsed, parsed.active(), None)
        self._parsed[library.index_path] = (key, entry)
        return entry

    def _prepared(self, library: Library) -> tuple[list[IndexRow], Prepared | None]:
        parsed, active, prepared = self._entry(library)
        if prepared is None and active:
            prepared = self.similarity.prepare([_row_text(row) for row in active])
            key = self._parsed[library.index_path][0]
            self._parsed[library.index_path] = (key, (parsed, active, prepared))
        return active, prepared

    def match(
        self,
        libraries_by_level: dict[str, Library],
        request: str,
        stage: str,
        *,
        datasets: str = "",
        threshold: float = THRESHOLD,
        limit: int = MAX_MATCHES,
    ) -> list[Match]:
        """The rows worth a warning for this request, best first (nothing when nothing is close)."""
        if not request.strip():
            return []
        query = f"{request}\n{datasets}".strip()
        found = []
        for level in stage_levels(stage):
            library = libraries_by_level.get(level)
            if library is None:
                continue
            active, prepared = self._prepared(library)
            if prepared is None:
                continue
            for row, similarity in zip(active, self.similarity.scores_against(query, prepared), strict=True):
                score = similarity + (_stage_bonus(stage, row.stage) if similarity >= RELEVANT else 0.0)
                if score >= threshold:
                    found.append(Match(level, row, score))
        found.sort(key=_rank)
        return found[:limit]


def prompt_section(matches: list[Match], language: str = "zh") -> str | None:
    if not matches:
        return None
    return "\n".join([HEADER.get(language, HEADER["zh"]), "", *(match.line(language) for match in matches)])


def _row_text(row: IndexRow) -> str:
    tags = " ".join(tag.lstrip("#") for tag in row.tag.split() if tag.lstrip("#") not in STAGES)
    return " ".join(
        part for part in (row.title, row.trigger, row.surface_signal, row.hidden_risk, tags) if part and part != "-"
    )


def _stage_bonus(stage: str, row_stage: str | None) -> float:
    if stage not in STAGES or row_stage not in STAGES:
        return 0.0
    return STAGE_BONUS.get(abs(STAGES.index(stage) - STAGES.index(row_stage)), 0.0)


def _rank(match: Match) -> tuple[float, int, int, int]:
    row = match.row
    team_standard = 0 if (match.level == "team" and row.type == "standard") else 1
    return (-round(match.score, 3), -STRENGTHS.index(row.strength), -SCOPES.index(row.scope), team_standard)
