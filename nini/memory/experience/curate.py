"""The curator: how confirmed candidates join a library, as a plan the user confirms, then carried
out all or nothing.

Planning compares each candidate with the others going to the same library and with the active
rows of its INDEX (``Similarity`` of title, trigger and decision): close in both trigger and
decision means merge (many into one), close in trigger but a different decision means supersede
(the new replaces the old), anything less certain means keep it independent. Executing backs up
INDEX.md (``.backups/<time>/``, with a manifest of the files it creates), writes the new documents,
marks replaced rows deprecated with ReplacedBy (files are never deleted), sets Replaces, takes the
broader Scope and the higher Strength, writes the INDEX, and removes the candidates from pending.
Any failure restores the backup and removes what was created. ``rollback`` undoes the last deposit.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from nini.errors import ErrorCode, NiniError
from nini.fsutil import atomic_write_bytes, atomic_write_text, no_space, out_of_space
from nini.memory.experience.documents import index_row, render_document
from nini.memory.experience.index import INDEX_NAME, Library, ParsedIndex, render_index
from nini.memory.experience.model import SCOPES, STRENGTHS, Candidate, IndexRow
from nini.memory.experience.pending import PendingFile
from nini.memory.experience.similarity import Similarity

SAME_TRIGGER = 0.6  # trigger similarity from which two experiences are about the same situation
UNSURE = 0.35  # from here up to SAME_TRIGGER the rules are unsure: a model, when there is one, decides
SAME_DECISION = 0.6  # decision similarity from which they say the same thing
BACKUPS = ".backups"
WORDS = {
    "zh": {
        "new": "新增",
        "merge": "合并",
        "supersede": "取代",
        "keep": "独立保存",
        "deposited": "已沉淀 {n} 条经验：{items}",
        "deprecated": "；{old} 已标记为 deprecated（由 {new} 取代）",
        "rollback": "。回滚：nini experience rollback {levels}",
    },
    "en": {
        "new": "new",
        "merge": "merge",
        "supersede": "supersede",
        "keep": "keep independent",
        "deposited": "Deposited {n} experience(s): {items}",
        "deprecated": "; {old} marked deprecated (replaced by {new})",
        "rollback": ". To roll back: nini experience rollback {levels}",
    },
}


@dataclass
class Action:
    """What happens to one group of candidates: a new document, merged or superseding old rows."""

    kind: str  # keep | merge | supersede
    level: str
    candidates: list[Candidate]
    replaces: list[IndexRow] = field(default_factory=list)
    reason: str = ""

    def merged(self) -> Candidate:
        """The one candidate this action writes: the first, with the others' alternatives and pointers,
        the broadest scope and the highest strength of everything it absorbs."""
        first = Candidate.from_json(self.candidates[0].to_json())
        for other in self.candidates[1:]:
            first.alternatives = list(dict.fromkeys([*first.alternatives, *other.alternatives]))
            first.pointers = list(dict.fromkeys([*first.pointers, *other.pointers]))
        scopes = [c.scope for c in self.candidates] + [r.scope for r in self.replaces]
        strengths = [c.strength for c in self.candidates] + [r.strength for r in self.replaces]
        first.scope = max(scopes, key=lambda s: SCOPES.index(s) if s in SCOPES else 0)
        first.strength = max(strengths, key=lambda s: STRENGTHS.index(s) if s in STRENGTHS else 0)
        first.level = self.level
        return first

    def describe(self, language: str = "zh") -> str:
        words = WORDS.get(language, WORDS["zh"])
        titles = " + ".join(c.title for c in self.candidates)
        old = ", ".join(f"{r.id} {r.title}" for r in self.replaces)
        text = f"[{words[self.kind]}] {titles} → {self.level}"
        return text + (f" ({old})" if old else "") + (f": {self.reason}" if self.reason else "")


@dataclass
class Plan:
    actions: list[Action]

    def describe(self, language: str = "zh") -> list[str]:
        return [action.describe(language) for action in self.actions]

    def candidate_ids(self) -> list[str]:
        return [c.id for action in self.actions for c in action.candidates]


# (candidate, the closest active row) -> "merge" | "supersede" | "keep" with a reason, or None (no answer)
Judge = Callable[[Candidate, IndexRow], "tuple[str, str] | None"]


def plan_deposit(
    candidates: list[Candidate], libraries: dict[str, Library], similarity: Similarity, judge: Judge | None = None
) -> Plan:
    """Group the candidates going to each library, then compare each group with that library's active rows
    (asking ``judge`` about a row the similarities leave unsure)."""
    actions: list[Action] = []
    for level, library in libraries.items():
        going = [c for c in candidates if c.level == level]
        if not going:
            continue
        groups: list[list[Candidate]] = []
        for candidate in going:
            home = next(
                (
                    g
                    for g in groups
                    if _same(similarity, g[0].trigger, candidate.trigger, g[0].decision, candidate.decision)
                ),
                None,
            )
            if home is None:
                groups.append([candidate])
            else:
                home.append(candidate)
        active = library.read().active()
        for group in groups:
            actions.append(_against_library(group, active, level, similarity, judge))
    return Plan(actions)


def _against_library(
    group: list[Candidate], active: list[IndexRow], level: str, similarity: Similarity, judge: Judge | None
) -> Action:
    lead = group[0]
    kind = "merge" if len(group) > 1 else "keep"
    reason = "the same judgement, several times" if len(group) > 1 else ""
    if not active:
        return Action(kind, level, group, reason=reason)
    triggers = similarity.scores(lead.trigger or lead.decision, [row.trigger for row in active])
    decisions = similarity.scores(lead.decision, [row.title for row in active])
    same_situation = [(t, d, row) for t, d, row in zip(triggers, decisions, active, strict=True) if t >= SAME_TRIGGER]
    merges = [row for t, d, row in same_situation if d >= SAME_DECISION]
    if merges:
        return Action(
            "merge", level, group, merges, "same situation, same decision as " + ", ".join(r.id for r in merges)
        )
    if same_situation:
        old = max(same_situation, key=lambda item: item[0])[2]
        return Action("supersede", level, group, [old], f"same situation as {old.id}, a different decision")
    closest, row = max(zip(triggers, active, strict=True), key=lambda item: item[0])
    verdict = judge(lead, row) if judge is not None and closest >= UNSURE else None
    if verdict is not None and verdict[0] in ("merge", "supersede"):
        return Action(verdict[0], level, group, [row], f"{row.id}: {verdict[1]}".rstrip(": "))
    return Action(kind, level, group, reason=reason)


def _same(similarity: Similarity, trigger_a: str, trigger_b: str, decision_a: str, decision_b: str) -> bool:
    return (
        similarity.pair(trigger_a, trigger_b) >= SAME_TRIGGER
        and similarity.pair(decision_a, decision_b) >= SAME_DECISION
    )


def execute(plan: Plan, libraries: dict[str, Library], pending: PendingFile | None, language: str = "zh") -> str:
    """Carry the plan out, all or nothing; the one line saying what changed and how to roll it back."""
    levels = sorted({action.level for action in plan.actions})
    backups: dict[str, Path] = {}
    with contextlib.ExitStack() as stack:
        for level in levels:
            stack.enter_context(_locked(libraries[level]))
        parsed = {level: _readable(libraries[level]) for level in levels}
        try:
            for level in levels:
                backups[level] = _backup(libraries[level])
            written = []
            for action in plan.actions:
                written.append(_apply(action, libraries[action.level], parsed[action.level], backups[action.level]))
            for level in levels:
                atomic_write_text(libraries[level].index_path, render_index(parsed[level], level))
            if pending is not None:
                pending.remove(plan.candidate_ids())
        except BaseException as exc:
            for level, backup in backups.items():
                _restore(libraries[level], backup)
            if isinstance(exc, NiniError):
                raise NiniError(
                    exc.code, f"{exc.message}; nothing was changed (the INDEX was restored from its backup)"
                ) from exc
            if isinstance(exc, OSError) and out_of_space(exc):
                full = no_space(" and ".join(f"the {level} experience library" for level in levels))
                raise NiniError(full.code, f"{full.message}; nothing was changed", full.details) from exc
            if isinstance(exc, OSError):
                raise NiniError(
                    ErrorCode.INTERNAL, f"deposit failed ({exc.strerror or exc}); nothing was changed"
                ) from exc
            raise
    words = WORDS.get(language, WORDS["zh"])
    items = "、".join(
        f"{new_id}（{level}）" if language == "zh" else f"{new_id} ({level})" for new_id, level, _old in written
    )
    line = words["deposited"].format(n=len(written), items=items)
    for new_id, _level, old in written:
        if old:
            line += words["deprecated"].format(old=", ".join(old), new=new_id)
    return line + words["rollback"].format(levels=" ".join(levels))


def deprecate(library: Library, entry_id: str, replaced_by: str = "") -> str:
    """Mark one row deprecated (its file stays), with a backup like a deposit's."""
    with _locked(library):
        parsed = _readable(library)
        row = parsed.by_id(entry_id)
        if row is None:
            raise NiniError(ErrorCode.NOT_FOUND, f"{library.level}: no {entry_id} in INDEX.md")
        if replaced_by and parsed.by_id(replaced_by) is None:
            raise NiniError(ErrorCode.INVALID_ARGUMENT, f"{library.level}: no {replaced_by} in INDEX.md to replace it")
        backup = _backup(library)
        row.status, row.replaced_by = "deprecated", replaced_by or row.replaced_by
        try:
            atomic_write_text(library.index_path, render_index(parsed, library.level))
        except BaseException:
            _restore(library, backup)
            raise
    return f"{entry_id} deprecated in {library.level}; to roll back: nini experience rollback {library.level}"


def rollback(library: Library) -> str:
    """Undo the library's last change: its INDEX back from the newest backup, the documents that
    change created moved into that backup folder (kept, not deleted)."""
    with _locked(library):
        folder = library.root / BACKUPS
        backups = (
            sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.endswith(".rolled-back"))
            if folder.is_dir()
            else []
        )
        if not backups:
            raise NiniError(ErrorCode.NOT_FOUND, f"{library.level}: no change to roll back")
        latest = backups[-1]
        _restore(library, latest, keep_created=True)
        latest.rename(latest.with_name(latest.name + ".rolled-back"))
    return f"{library.level}: rolled back to the INDEX of {latest.name}"


def _readable(library: Library) -> ParsedIndex:
    parsed = library.read()
    if parsed.problems:
        raise NiniError(
            ErrorCode.CONFLICT,
            f"{library.level} INDEX.md has problems ({'; '.join(parsed.problems[:3])}); "
            "fix them (nini experience validate) before changing the library: nini never rewrites a broken INDEX",
        )
    return parsed


def _apply(action: Action, library: Library, parsed: ParsedIndex, backup: Path) -> tuple[str, str, list[str]]:
    entry_id = _next_id(library, parsed)
    candidate = action.merged()
    folder = library.folder_for(candidate.type)
    relative = f"{folder}/{entry_id}.md" if folder else f"{entry_id}.md"
    target = library.root / relative
    old_ids = [row.id for row in action.replaces]
    if os.path.lexists(target):
        raise NiniError(ErrorCode.CONFLICT, f"{library.level}/{relative} already exists and is not in the INDEX")
    _record_created(backup, relative)
    atomic_write_text(target, render_document(candidate, entry_id, library.level, replaces=old_ids))
    for planned in action.replaces:  # the rows as they are now, not as they were when planned
        row = parsed.by_id(planned.id)
        if row is None or row.status != "active":
            raise NiniError(
                ErrorCode.CONFLICT, f"{library.level}: {planned.id} changed since the plan was made; plan again"
            )
        row.status = "deprecated"
        row.replaced_by = ", ".join(
            item for item in [*row.replaced_by.replace(",", " ").split(), entry_id] if item != "-"
        )
    parsed.rows.append(index_row(candidate, relative, replaces=old_ids))
    return entry_id, library.level, old_ids


def _next_id(library: Library, parsed: ParsedIndex) -> str:
    numbers = [int(row.id[4:]) for row in parsed.rows if row.id]
    for path in library.root.rglob("EXP-*.md"):  # a file not (or no longer) in the INDEX still holds its number
        found = re.match(r"EXP-(\d+)", path.name)
        if found:
            numbers.append(int(found.group(1)))
    return f"EXP-{max(numbers, default=0) + 1:04d}"


def _backup(library: Library) -> Path:
    folder = library.root / BACKUPS / time.strftime("%Y%m%d-%H%M%S")
    suffix = 0
    while folder.exists():
        suffix += 1
        folder = folder.with_name(f"{folder.name.split('.')[0]}.{suffix}")
    folder.mkdir(parents=True)
    existed = library.index_path.is_file()
    if existed:
        shutil.copy2(library.index_path, folder / INDEX_NAME)
    (folder / "manifest.json").write_text(json.dumps({"index_existed": existed, "created": []}), encoding="utf-8")
    return folder


def _record_created(backup: Path, relative: str) -> None:
    manifest = json.loads((backup / "manifest.json").read_text(encoding="utf-8"))
    manifest["created"].append(relative)
    atomic_write_text(backup / "manifest.json", json.dumps(manifest))


def _restore(library: Library, backup: Path, *, keep_created: bool = False) -> None:
    manifest = json.loads((backup / "manifest.json").read_text(encoding="utf-8"))
    for relative in manifest.get("created", []):
        path = library.root / relative
        if path.is_file() and not path.is_symlink():
            if keep_created:
                (backup / "created").mkdir(exist_ok=True)
                os.replace(path, backup / "created" / path.name)
            else:
                path.unlink()
    if manifest.get("index_existed"):
        atomic_write_bytes(library.index_path, (backup / INDEX_NAME).read_bytes())
    else:
        library.index_path.unlink(missing_ok=True)


@contextlib.contextmanager
def _locked(library: Library) -> Iterator[None]:
    library.root.mkdir(parents=True, exist_ok=True)
    with open(library.root / ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
