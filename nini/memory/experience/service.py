"""``ExperienceMemory``: one object per process that every surface (the agent's hooks, the
read_experience skill, the CLI, REST, the magic) goes through, so each rule lives in one place.

It knows where the libraries and the pending file are (settings and the project directory) and
holds the matcher (parsed INDEX files, embeddings) between runs. Nothing here writes a library
without ``confirm=True``: that is the caller saying the user agreed.

Pending candidates are their owner's (``owner=``, a Jupyter user's name: ``pending_for``): on a
server that names its users, each named user's go to a file of their own, and an id that is in
another user's file is NOT_FOUND as one in no file. The libraries themselves are shared: the
team's and the project's, read by everyone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nini.errors import ErrorCode, NiniError
from nini.memory.experience import curate
from nini.memory.experience.capture import explicit_candidate, extract_with_model
from nini.memory.experience.evaluate import DROP_REASONS, stage1, stage2
from nini.memory.experience.index import Library
from nini.memory.experience.match import Match, Matcher, libraries
from nini.memory.experience.model import LEVELS, Candidate
from nini.memory.experience.pending import PendingFile, PendingState
from nini.owners import is_server_user, owner_key

if TYPE_CHECKING:
    from nini.config import Settings

CAPTURED = {
    "zh": "已暂存 {n} 条经验候选（用于 nini remember 阶段沉淀选择）",
    "en": "{n} experience candidate(s) kept for later (choose what to keep with nini remember)",
}


@dataclass
class CaptureResult:
    kept: list[Candidate] = field(default_factory=list)
    dropped: list[dict[str, str]] = field(default_factory=list)  # {title, reason, why}
    problems: list[str] = field(default_factory=list)

    def line(self, language: str = "zh") -> str | None:
        return CAPTURED.get(language, CAPTURED["zh"]).format(n=len(self.kept)) if self.kept else None

    def to_dict(self) -> dict[str, Any]:
        return {"kept": [c.to_json() for c in self.kept], "dropped": self.dropped, "problems": self.problems}


class ExperienceMemory:
    def __init__(
        self, settings: Settings, project_dir: Path, matcher: Matcher | None = None, judge: curate.Judge | None = None
    ) -> None:
        self.settings = settings
        self.project_dir = project_dir
        self.matcher = matcher or Matcher()
        self.judge = judge  # a model's say where the curator's similarities are unsure (None: rules only)

    @property
    def language(self) -> str:
        return self.settings.ui.current_language

    @property
    def libraries(self) -> dict[str, Library]:
        return libraries(self.settings.experience_team_dir, self.project_dir)

    @property
    def pending(self) -> PendingFile:
        """The server's own user's pending candidates (the CLI's, the magics')."""
        return self.pending_for(None)

    def pending_for(self, owner: str | None) -> PendingFile:
        """``owner``'s pending candidates: the plain file for the server's own user (``session_owner``
        or None), a file of their own for anyone else."""
        key = None if is_server_user(owner, self.settings.session_owner) else owner_key(owner or "")
        return PendingFile(self.project_dir / ".nini" / "experience", key)

    # -- matching ------------------------------------------------------------------------------------

    def match(self, request: str, stage: str, datasets: str = "") -> list[Match]:
        options = self.settings.experience
        if not options.enabled or options.max_matches == 0:
            return []
        return self.matcher.match(
            self.libraries,
            request,
            stage,
            datasets=datasets,
            threshold=options.match_threshold,
            limit=options.max_matches,
        )

    def read(self, reference: str) -> str:
        """A document by its reference (``team/knowledge/EXP-0001.md``), only if its INDEX lists it."""
        level, _, relative = reference.strip().partition("/")
        library = self.libraries.get(level)
        if library is None:
            raise NiniError(ErrorCode.INVALID_ARGUMENT, f"{reference!r}: a reference starts with team/ or project/")
        if not any(row.file == relative for row in library.read(check_files=False).rows):
            raise NiniError(ErrorCode.NOT_FOUND, f"{reference}: not in the {level} INDEX.md")
        return library.read_document(relative)

    # -- capture ---------------------------------------------------------------------------------------

    async def capture_conversation(
        self,
        llm: Any,
        messages: list[dict[str, Any]],
        *,
        session_id: str | None,
        stage: str,
        datasets: list[str],
        owner: str | None = None,
    ) -> CaptureResult:
        """What a model finds in the conversation's user messages, stage-1 filtered, added to ``owner``'s pending."""
        found = await extract_with_model(llm, messages, session_id=session_id, stage=stage, datasets=datasets)
        return self._keep(found, datasets, owner)

    def capture_statement(
        self,
        text: str,
        *,
        stage: str = "analysis",
        session_id: str | None = None,
        datasets: list[str] | None = None,
        owner: str | None = None,
        **options: Any,
    ) -> CaptureResult:
        """An explicit statement of the user's (``remember --add``): a candidate if it passes stage 1."""
        if not text.strip():
            raise NiniError(ErrorCode.INVALID_ARGUMENT, "say what to remember")
        self._check_options(options)
        candidate = explicit_candidate(text, stage=stage, session_id=session_id, datasets=datasets or [], **options)
        return self._keep([candidate], datasets or [], owner)

    def _keep(self, found: list[Candidate], datasets: list[str], owner: str | None) -> CaptureResult:
        result = CaptureResult()
        pending = self.pending_for(owner)
        state = pending.load()
        known = {_key(c) for c in state.candidates}
        for candidate in found:
            verdict = stage1(candidate, datasets)
            if verdict.candidate is None:
                result.dropped.append(
                    {
                        "title": candidate.title or candidate.decision[:80],
                        "reason": verdict.reason or "",
                        "why": DROP_REASONS.get(verdict.reason or "", ""),
                    }
                )
            elif _key(verdict.candidate) not in known:
                known.add(_key(verdict.candidate))
                result.kept.append(verdict.candidate)
        if result.kept:
            result.problems = pending.add(result.kept).problems
        return result

    @staticmethod
    def _check_options(options: dict[str, Any]) -> None:
        if options.get("level") not in (None, *LEVELS):
            raise NiniError(ErrorCode.INVALID_ARGUMENT, f"level must be team or project, not {options['level']!r}")
        if options.get("type_") not in (None, "standard", "knowledge"):
            raise NiniError(ErrorCode.INVALID_ARGUMENT, f"type must be standard or knowledge, not {options['type_']!r}")

    # -- pending and deposit ---------------------------------------------------------------------------

    def pending_view(self, owner: str | None = None) -> tuple[PendingState, list[dict[str, Any]]]:
        """``owner``'s pending candidates, each with its stage-2 evaluation, numbered from 1."""
        state = self.pending_for(owner).load()
        shown = [
            {"number": n, "candidate": c.to_json(), "evaluation": stage2(c)} for n, c in enumerate(state.candidates, 1)
        ]
        return state, shown

    def mark_asked(self, owner: str | None = None) -> None:
        with self.pending_for(owner).change() as state:
            state.asked = True

    def edit(self, candidate_id: str, changes: dict[str, Any], owner: str | None = None) -> Candidate:
        """Change fields of one of ``owner``'s pending candidates (their edit); it must still pass stage 1."""
        with self.pending_for(owner).change() as state:
            current = state.find(candidate_id)
            if current is None:
                raise NiniError(ErrorCode.NOT_FOUND, f"no pending candidate {candidate_id}")
            # who proposed it is not an edit: a model's candidate stays judged as one
            edited = Candidate.from_json({**current.to_json(), **changes, "id": current.id, "source": current.source})
            if edited.level not in LEVELS:
                raise NiniError(ErrorCode.INVALID_ARGUMENT, f"level must be team or project, not {edited.level!r}")
            verdict = stage1(edited)
            if verdict.candidate is None:
                raise NiniError(
                    ErrorCode.INVALID_ARGUMENT, f"after the edit: {DROP_REASONS[verdict.reason or 'NO_DECISION']}"
                )
            state.candidates[state.candidates.index(current)] = verdict.candidate
        return verdict.candidate

    def discard(self, ids: list[str], owner: str | None = None) -> None:
        """Drop ``owner``'s pending candidates ``ids``; NOT_FOUND for an id that is not among them."""
        with self.pending_for(owner).change() as state:
            missing = [i for i in ids if state.find(i) is None]
            if missing:
                raise NiniError(ErrorCode.NOT_FOUND, f"no pending candidate {missing[0]}")
            state.candidates = [c for c in state.candidates if c.id not in set(ids)]

    def plan(self, ids: list[str], targets: dict[str, str] | None = None, owner: str | None = None) -> curate.Plan:
        """The curator's plan for ``owner``'s pending candidates (by id), each to its level or ``targets[id]``."""
        state = self.pending_for(owner).load()
        chosen = []
        for candidate_id in ids:
            candidate = state.find(candidate_id)
            if candidate is None:
                raise NiniError(ErrorCode.NOT_FOUND, f"no pending candidate {candidate_id}")
            level = (targets or {}).get(candidate_id, candidate.level)
            if level not in LEVELS:
                raise NiniError(ErrorCode.INVALID_ARGUMENT, f"target must be team or project, not {level!r}")
            candidate.level = level
            chosen.append(candidate)
        if not chosen:
            raise NiniError(ErrorCode.INVALID_ARGUMENT, "no candidate chosen")
        return curate.plan_deposit(chosen, self.libraries, self.matcher.similarity, self.judge)

    def deposit(self, plan: curate.Plan, *, confirm: bool, owner: str | None = None) -> str:
        """Carry out a plan the user confirmed (of ``owner``'s candidates); refused without ``confirm``."""
        if confirm is not True:
            raise NiniError(
                ErrorCode.INVALID_ARGUMENT,
                "nothing is written to an experience library without the user's confirmation (confirm: true)",
            )
        for level in {action.level for action in plan.actions}:
            self._check_writable(level)
        return curate.execute(plan, self.libraries, self.pending_for(owner), self.language)

    # -- the libraries -----------------------------------------------------------------------------------

    def entries(self, level: str | None = None) -> list[dict[str, Any]]:
        rows = []
        for name, library in self.libraries.items():
            if level in (None, name):
                rows += [
                    {**row.to_dict(), "level": name, "reference": f"{name}/{row.file}"}
                    for row in library.read(check_files=False).rows
                ]
        return rows

    def validate(self) -> dict[str, list[str]]:
        return {name: library.read().problems for name, library in self.libraries.items()}

    def library(self, level: str) -> Library:
        """The library ``level``, to change (deprecate, roll back): POLICY_VIOLATION for a read-only team library."""
        if level not in LEVELS:
            raise NiniError(ErrorCode.INVALID_ARGUMENT, f"level must be team or project, not {level!r}")
        self._check_writable(level)
        return self.libraries[level]

    def _check_writable(self, level: str) -> None:
        """Refuse a change of the team library where ``experience.team_writable`` is false (a hub's
        users who are not its maintainers), before anything is locked or written."""
        if level == "team" and not self.settings.experience.team_writable:
            raise NiniError(
                ErrorCode.POLICY_VIOLATION,
                "the team experience library is read-only for you "
                "(experience.team_writable is false); choose the project library, or ask a maintainer",
            )


def _key(candidate: Candidate) -> tuple[str, str]:
    return (" ".join(candidate.decision.lower().split()), " ".join(candidate.signal.lower().split()))
