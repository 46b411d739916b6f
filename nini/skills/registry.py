"""``SkillRegistry``: the unified list of function and Markdown skills, kept in step with disk.

Thread safety: a refresh builds a complete new ``_State`` and swaps it in under a lock, so readers
(any thread or task) always see one consistent skill set without locking.
"""

from __future__ import annotations

import builtins
import hashlib
import logging
import threading
import weakref
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from nini.config import Settings
from nini.errors import ErrorCode, NiniError
from nini.fsutil import atomic_write_text
from nini.skills import meta as meta_skills
from nini.skills import state as skill_state
from nini.skills.discovery import FoundFile, Scan, SkillRoot, is_unchanged, scan_roots, standard_roots
from nini.skills.function import FunctionSkill, load_skill_module
from nini.skills.markdown import (
    ParsedSkill,
    SkillFileError,
    decode_skill_bytes,
    parse_skill_text,
    read_skill_bytes,
    read_skill_text,
    split_frontmatter,
)
from nini.skills.records import SkillDefinition, SkillProblem, SkillRecord
from nini.skills.snapshot import render_prompt_block, render_snapshot

if TYPE_CHECKING:
    from nini.skills.services import SkillServices

log = logging.getLogger("nini.skills")
MAX_RESOURCE_BYTES = 1 << 20


@dataclass(frozen=True)
class _State:
    records: tuple[SkillRecord, ...] = ()
    functions: tuple[FunctionSkill, ...] = ()
    problems: tuple[SkillProblem, ...] = ()


class SkillRegistry:
    """Function skills registered in code plus everything discovered under the skill roots."""

    def __init__(
        self,
        settings: Settings,
        project_dir: Path | None = None,
        *,
        roots: list[SkillRoot] | None = None,
        function_skills: list[FunctionSkill] | None = None,
        snapshot_path: Path | None = None,
    ) -> None:
        from nini.skills.builtin import builtin_skills

        self._settings = settings
        self._roots = roots if roots is not None else standard_roots(settings, project_dir)
        self._snapshot_path = snapshot_path or settings.snapshot_path
        self._views: weakref.WeakSet[SkillRegistry] = weakref.WeakSet()  # see view()
        self._lock = threading.RLock()
        self._registered: dict[str, FunctionSkill] = {}
        self._parsed: dict[tuple[str, int, int], ParsedSkill | SkillFileError] = {}
        self._modules: dict[tuple[str, int, int], list[FunctionSkill] | Exception] = {}
        self._scan: Scan | None = None
        self._state = _State()
        # the router and memories skills use (``nini.skills.services``): the runtime that builds
        # this registry gives them; views share them
        self.services: SkillServices | None = None
        for function_skill in builtin_skills(settings) if function_skills is None else function_skills:
            self._registered[function_skill.name] = function_skill
        self.refresh(force=True)

    # -- changes ---------------------------------------------------------------------------------

    def register(self, function_skill: FunctionSkill) -> None:
        """Add a function skill defined in code (built-ins use this too)."""
        with self._lock:
            if function_skill.name in self._registered:
                raise NiniError(
                    ErrorCode.CONFLICT, f"a function skill named {function_skill.name!r} is already registered"
                )
            self._registered[function_skill.name] = function_skill
            self._rebuild(self._scan or self._rescan())
            self._update_views()

    def unregister(self, name: str) -> None:
        with self._lock:
            if self._registered.pop(name, None) is None:
                raise NiniError(ErrorCode.NOT_FOUND, f"no function skill named {name!r} is registered in code")
            self._rebuild(self._scan or self._rescan())
            self._update_views()

    def view(self, user_dir: Path, snapshot_path: Path) -> SkillRegistry:
        """These skills with ``user_dir`` as the user skills folder: a named user's own skills on a
        shared server (``Runtime.registry_for``). Every other root, and the function skills
        registered in code now or later (an MCP server's tools), are this registry's; what is saved
        in ``user_dir`` is seen by the view only. Its snapshot goes to ``snapshot_path``."""
        roots = [replace(root, path=user_dir) if root.kind == "user" else root for root in self._roots]
        with self._lock:
            view = SkillRegistry(
                self._settings,
                roots=roots,
                function_skills=list(self._registered.values()),
                snapshot_path=snapshot_path,
            )
            view.services = self.services
            self._views.add(view)
        return view

    def _update_views(self) -> None:
        for view in list(self._views):
            with view._lock:
                view._registered = dict(self._registered)
                view._rebuild(view._scan or view._rescan())

    @property
    def user_skills_dir(self) -> Path:
        """The folder the user's own skills are written to (``nini.skills.editing``): its user root."""
        return next((root.path for root in self._roots if root.kind == "user"), self._settings.user_skills_dir)

    def refresh(self, force: bool = False) -> bool:
        """Re-read the skill roots if anything on disk changed; True when the skill set changed.

        The check is a ``stat`` per folder and skill file; only changed files are parsed again.
        The snapshot is rewritten only when its content would differ.
        """
        with self._lock:
            if not force and self._scan is not None and is_unchanged(self._scan):
                return False
            return self._rebuild(self._rescan())

    def set_enabled(self, name: str, enabled: bool, type: str | None = None) -> dict[str, Any]:
        """Persist an enable/disable override and return the updated record.

        ``type`` picks the Markdown skill when it shares its name with a function skill; without
        it the function skill is meant (as in ``get_record``), so only an explicit
        ``type="markdown"`` can reach the conflicting skill, and enabling that one is refused.
        """
        with self._lock:
            record = self.get_record(name, type)
            if record.metadata.get("conflict_with"):
                if enabled:
                    raise NiniError(
                        ErrorCode.CONFLICT,
                        f"Markdown skill {name!r} has the same name as a function skill; rename it to enable it",
                    )
                # already disabled; overrides are kept by name, so writing one would disable the
                # function skill of the same name as well
                return record.to_dict()
            skill_state.write_override(self._settings.skills_state_path, record.name, enabled)
            self.refresh(force=True)
            return self.get_record(name, type).to_dict()

    # -- reading ---------------------------------------------------------------------------------

    def list(self, type: str | None = None) -> list[dict[str, Any]]:
        """The unified list of skill records (DESIGN.md section 4), sorted by name."""
        if type not in (None, "function", "markdown"):
            raise NiniError(ErrorCode.INVALID_ARGUMENT, f"type must be 'function' or 'markdown', not {type!r}")
        return [r.to_dict() for r in self._state.records if type is None or r.type == type]

    def get(self, name: str) -> dict[str, Any]:
        return self.get_record(name).to_dict()

    def get_record(self, name: str, type: str | None = None) -> SkillRecord:
        """The record for ``name``; a function skill wins over a Markdown skill of the same name."""
        matches = [r for r in self._state.records if r.name == name and (type is None or r.type == type)]
        if not matches:
            raise NiniError(ErrorCode.NOT_FOUND, f"no skill named {name!r}", {"name": name})
        return min(matches, key=lambda r: r.type != "function")

    def function(self, name: str) -> FunctionSkill:
        for function_skill in self._state.functions:
            if function_skill.name == name:
                return function_skill
        raise NiniError(ErrorCode.NOT_FOUND, f"no function skill named {name!r}", {"name": name})

    def root_of(self, record: SkillRecord) -> Path | None:
        """The skills root ``record`` was found under (None for a skill defined in code): its files
        are then read beneath that root without following a link out of it."""
        if record.path is None:
            return None
        for root in self._roots:
            if root.kind == record.source and root.path / record.location == record.path:
                return root.path
        return None

    @property
    def roots(self) -> tuple[SkillRoot, ...]:
        """The skill roots in priority order: of two skills of one name, the one in the earlier root wins."""
        return tuple(self._roots)

    @property
    def problems(self) -> builtins.list[dict[str, Any]]:
        """What ``nini skills doctor`` lists: skipped files, broken rules, shadows, conflicts, and
        skills refused because they take the name of one of nini's meta-skills (``meta_skills``)."""
        return [p.to_dict() for p in self._state.problems]

    def problem_records(self) -> builtins.list[SkillProblem]:
        return list(self._state.problems)

    def prompt_block(self) -> str:
        """The skills text the agent injects into its context each turn (records only, no bodies)."""
        return render_prompt_block(self._state.records)

    def write_snapshot(self) -> Path:
        """Write ``SKILLS_SNAPSHOT.md`` if its content changed; return its path."""
        path = self._snapshot_path
        text = render_snapshot(self._state.records)
        try:
            current = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            current = None
        if current != text:
            atomic_write_text(path, text)
        return path

    # -- read before execute ---------------------------------------------------------------------

    def load_definition(self, name: str) -> SkillDefinition:
        """Read a Markdown skill's SKILL.md from disk now, for use now.

        Every use of a Markdown skill goes through here, so the agent follows the file as it is at
        the moment of use, and the record of that use carries ``content_hash``. A definition that is
        gone or unreadable raises SKILL_DEFINITION_UNAVAILABLE and nothing is run.
        """
        record = self.get_record(name, type="markdown")
        try:
            if record.path is None:
                raise SkillFileError("it has no file")
            data = read_skill_bytes(record.path)  # refuses an oversized file before reading it
            _frontmatter, body = split_frontmatter(decode_skill_bytes(data))
        except (OSError, SkillFileError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise NiniError(
                ErrorCode.SKILL_DEFINITION_UNAVAILABLE,
                f"the definition of Markdown skill {name!r} ({record.location}) cannot be read: "
                f"{reason}; nothing was run",
                {"name": name, "location": record.location},
            ) from exc
        return SkillDefinition(
            name=record.name,
            body=body,
            content_hash=hashlib.sha256(data).hexdigest(),
            location=record.location,
            folder=record.path.parent,
        )

    def read_resource(self, name: str, relative_path: str) -> str:
        """A text file referenced by a Markdown skill, read only from inside that skill's folder."""
        folder = self.load_definition(name).folder.resolve()
        candidate = PurePosixPath(relative_path.replace("\\", "/"))
        # "." and "./" have no parts at all: they name the folder itself, not a file in it
        if (
            not relative_path.strip()
            or not candidate.parts
            or candidate.is_absolute()
            or ".." in candidate.parts
            or ":" in candidate.parts[0]
        ):
            raise NiniError(
                ErrorCode.INVALID_ARGUMENT,
                f"skill {name!r} may only read files inside its own folder by relative path, not {relative_path!r}",
            )
        target = (folder / candidate).resolve()
        if not target.is_relative_to(folder):
            raise NiniError(ErrorCode.INVALID_ARGUMENT, f"{relative_path!r} leads outside skill {name!r}'s folder")
        try:
            if target.stat().st_size > MAX_RESOURCE_BYTES:
                raise NiniError(ErrorCode.INVALID_ARGUMENT, f"{relative_path!r} is larger than 1 MiB")
            return target.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise NiniError(ErrorCode.NOT_FOUND, f"skill {name!r} has no file {relative_path!r}") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise NiniError(ErrorCode.INVALID_ARGUMENT, f"{relative_path!r} cannot be read as text: {exc}") from None

    # -- building --------------------------------------------------------------------------------

    def _rescan(self) -> Scan:
        return scan_roots(self._roots, watch_files=(self._settings.skills_state_path,))

    def _rebuild(self, scan: Scan) -> bool:
        problems: list[SkillProblem] = []
        functions = self._collect_functions(scan, problems)
        markdown = self._collect_markdown(scan, problems)
        overrides, state_problem = skill_state.read_overrides(self._settings.skills_state_path)
        if state_problem:
            problems.append(SkillProblem("warning", "state", state_problem))

        records: list[SkillRecord] = []
        function_names = set()
        for function_skill in functions:
            function_names.add(function_skill.name)
            records.append(_function_record(function_skill, overrides.get(function_skill.name, True)))
        for record in markdown:
            if record.name in function_names:
                record = replace(record, enabled=False, metadata={**record.metadata, "conflict_with": "function"})
                problems.append(
                    _problem_for(
                        record,
                        "warning",
                        "conflict",
                        f"Markdown skill {record.name!r} has the same name as a function "
                        "skill; it is listed disabled and the function skill is used",
                    )
                )
            else:
                record = replace(record, enabled=overrides.get(record.name, True))
            records.append(record)
        records.sort(key=lambda r: (r.name, r.type))

        new_state = _State(tuple(records), tuple(functions), tuple(problems))
        changed = new_state.records != self._state.records
        self._scan, self._state = scan, new_state
        for problem in problems:
            if problem.severity == "error":
                log.warning("skill skipped: %s (%s:%s)", problem.message, problem.source, problem.location)
        try:
            self.write_snapshot()
        except NiniError as exc:
            log.warning("skills snapshot not written: %s", exc.message)
            self._state = replace(new_state, problems=(*problems, SkillProblem("warning", "snapshot", exc.message)))
        return changed

    def _collect_functions(self, scan: Scan, problems: builtins.list[SkillProblem]) -> builtins.list[FunctionSkill]:
        found = dict(self._registered)
        for file in (f for f in scan.files if f.kind == "python"):
            if not file.root.trust_code:
                problems.append(
                    _file_problem(
                        file,
                        "warning",
                        "untrusted",
                        "skill.py not loaded: Python skills load only from the user skills "
                        "dir and extra dirs in settings, not from project folders",
                    )
                )
                continue
            loaded = self._load_module(file)
            if isinstance(loaded, Exception):
                problems.append(
                    _file_problem(
                        file, "error", "invalid", f"skill.py failed to import: {type(loaded).__name__}: {loaded}"
                    )
                )
                continue
            for function_skill in loaded:
                refused = meta_skills.refusal(function_skill.name, file.root.kind)
                if refused:
                    problems.append(_file_problem(file, "warning", "refused", refused, function_skill.name))
                    continue
                if function_skill.name in found:
                    problems.append(
                        _file_problem(
                            file,
                            "warning",
                            "shadowed",
                            f"function skill {function_skill.name!r} is shadowed by one "
                            f"already registered ({found[function_skill.name].location})",
                            function_skill.name,
                        )
                    )
                    continue
                meta = {**function_skill.metadata, "source": file.root.kind}
                found[function_skill.name] = replace(function_skill, metadata=meta, source_location=file.location)
        return sorted(found.values(), key=lambda s: s.name)

    def _load_module(self, file: FoundFile) -> builtins.list[FunctionSkill] | Exception:
        if file.cache_key in self._modules:
            return self._modules[file.cache_key]
        module_name = "nini_user_skill_" + hashlib.sha1(file.cache_key[0].encode()).hexdigest()[:12]
        try:
            loaded: list[FunctionSkill] | Exception = load_skill_module(file.path, module_name)
        except Exception as exc:  # whatever a user's module raises must not stop discovery
            loaded = exc
        if file.settled:  # a just-saved file may change again under the same key: load it again next time
            self._modules[file.cache_key] = loaded
        return loaded

    def _collect_markdown(self, scan: Scan, problems: builtins.list[SkillProblem]) -> builtins.list[SkillRecord]:
        winners: dict[str, SkillRecord] = {}
        live_keys = set()
        for file in (f for f in scan.files if f.kind == "markdown"):
            live_keys.add(file.cache_key)
            parsed = self._parse(file)
            if isinstance(parsed, SkillFileError):
                problems.append(_file_problem(file, "error", "invalid", f"skipped: {parsed}"))
                continue
            refused = meta_skills.refusal(parsed.name, file.root.kind)
            if refused:  # before it can win: a project's copy would otherwise outrank nini's own
                problems.append(_file_problem(file, "warning", "refused", refused, parsed.name))
                continue
            for warning in parsed.warnings:
                problems.append(_file_problem(file, "warning", "rule", warning, parsed.name))
            if parsed.name in winners:
                winner = winners[parsed.name]
                problems.append(
                    _file_problem(
                        file,
                        "warning",
                        "shadowed",
                        f"{parsed.name!r} is shadowed by {winner.source}:{winner.location}",
                        parsed.name,
                    )
                )
                continue
            metadata = {**parsed.metadata, "source": file.root.kind}
            if parsed.warnings:
                metadata["warnings"] = list(parsed.warnings)
            winners[parsed.name] = SkillRecord(
                parsed.name, parsed.description, "markdown", file.location, True, parsed.category, metadata, file.path
            )
        # forget parses of files that are gone or changed, so the cache does not grow forever
        self._parsed = {k: v for k, v in self._parsed.items() if k in live_keys}
        return list(winners.values())

    def _parse(self, file: FoundFile) -> ParsedSkill | SkillFileError:
        if file.cache_key in self._parsed:
            return self._parsed[file.cache_key]
        try:
            parsed: ParsedSkill | SkillFileError = parse_skill_text(
                read_skill_text(file.path, file.size), file.path.parent.name
            )
        except SkillFileError as exc:
            parsed = exc
        except OSError as exc:
            parsed = SkillFileError(f"cannot be read: {exc.strerror or exc}")
        if file.settled:  # a just-saved file may change again under the same key: parse it again next time
            self._parsed[file.cache_key] = parsed
        return parsed


def _function_record(function_skill: FunctionSkill, enabled: bool) -> SkillRecord:
    metadata = {"source": "code", **function_skill.metadata, "input_schema": function_skill.input_schema()}
    return SkillRecord(
        function_skill.name,
        function_skill.description,
        "function",
        function_skill.location,
        enabled,
        function_skill.category,
        metadata,
    )


def _file_problem(file: FoundFile, severity, kind, message: str, name: str | None = None) -> SkillProblem:
    return SkillProblem(severity, kind, message, file.root.kind, file.location, name, file.path)


def _problem_for(record: SkillRecord, severity, kind, message: str) -> SkillProblem:
    return SkillProblem(severity, kind, message, record.source, record.location, record.name, record.path)
