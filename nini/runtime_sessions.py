"""The sessions' book-keeping of a runtime: making, finding, listing, renaming and deleting sessions.

``nini.runtime.Runtime`` inherits ``SessionBook``, so callers keep saying ``runtime.create_session(...)``,
``runtime.session(...)`` and so on; the runtime itself is left to wire the services (kernels, R workers,
models, memories). The book reaches those only through the four hooks the runtime implements (``_bind``,
``_turn_running``, ``_stop_agents``, ``_forget_workspace``), never through its fields.
"""

from __future__ import annotations

import asyncio
import contextlib
import difflib
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from nini.config import Settings
from nini.errors import ErrorCode, NiniError
from nini.execution.workspace import Workspace, check_session_id
from nini.history.store import HistoryStore
from nini.limits import Limits, check_text
from nini.owners import Viewer, check_owner, not_found
from nini.rooted import remove_tree
from nini.session import Session

log = logging.getLogger("nini.runtime")  # the book is part of the runtime: its records keep that name
RUNNING = {
    "zh": "会话 {session_id} 正在运行；请先停止它，再删除",
    "en": "session {session_id} is running; stop it first, then delete it",
}


# An unknown session named by the person (``--session``): the ids nearest it they may see, or how to list them.
NO_SESSION = {
    "zh": ("没有会话 {session_id}；最接近的：{closest}", "没有会话 {session_id}；用 nini sessions list 列出所有会话"),
    "en": ("no session {session_id}; closest: {closest}", "no session {session_id}; list them with nini sessions list"),
}


def session_running(session_id: str, language: str = "zh") -> NiniError:
    """CONFLICT (409) for deleting a session while its turn or a step of it runs."""
    words = RUNNING.get(language, RUNNING["zh"])
    return NiniError(
        ErrorCode.CONFLICT, words.format(session_id=session_id), {"session_id": session_id, "reason": "running"}
    )


class CommandSession:
    """The session of one command (``Runtime.command_session``); ``failed`` set by a command whose
    failure is a result, not an exception (a run that did not succeed)."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.failed = False
        self.dropped = False  # the session was empty and is gone (see ``command_session``)


class SessionBook:
    """The sessions of one process: their rows in the store, their owners (read once per process),
    the session one command works in, and what killed processes left behind."""

    # The runtime's, set by its __init__: the book holds no service of its own.
    settings: Settings
    store: HistoryStore

    def __init__(self) -> None:
        self._owners: dict[str, str | None] = {}  # session id -> its owner (see owner_of)
        self._sweep: asyncio.Task[int] | None = None  # what killed processes left, swept at a server's start

    def _bind(self, session_id: str) -> Session:
        """A ``Session`` of ``session_id`` bound to the runtime's services (the runtime's hook)."""
        raise NotImplementedError

    def _turn_running(self, session_id: str) -> bool:
        """Whether an agent turn runs in the session now (the runtime's hook)."""
        raise NotImplementedError

    async def _stop_agents(self, session_id: str) -> None:
        """Shut the session's kernel and R worker down, if any (the runtime's hook)."""
        raise NotImplementedError

    async def _forget_workspace(self, root: Path) -> None:
        """Drop what the runtime keeps of a deleted session's workspace ``root`` (the runtime's hook)."""
        raise NotImplementedError

    def create_session(
        self,
        title: str | None = None,
        session_id: str | None = None,
        *,
        owner: str | None = None,
        viewer: Viewer | None = None,
    ) -> Session:
        """A new session owned by ``owner`` (a Jupyter identity), else by ``settings.session_owner``.

        An id that is taken is CONFLICT for a ``viewer`` who may see its session (None: anyone), and
        NOT_FOUND, word for word as a missing session, for one who may not: no CONFLICT tells them
        another user's session exists.
        """
        if session_id is not None:
            check_session_id(session_id)
        self._check_title(title)
        try:
            row = self.store.create_session(
                session_id=session_id, title=title, owner=owner or self.settings.session_owner
            )
        except NiniError as exc:
            if (
                exc.code is ErrorCode.CONFLICT
                and session_id is not None
                and viewer is not None
                and not viewer.sees(self.owner_of(session_id))
            ):
                raise not_found(session_id) from None
            raise
        self._owners[row["id"]] = row["owner"]
        return self._bind(row["id"])

    def owner_of(self, session_id: str) -> str | None:
        """Whose session ``session_id`` is (NOT_FOUND when there is none): whose preferences and skills
        its turns use. An owner never changes, so it is read once per process."""
        if session_id not in self._owners:
            self._owners[session_id] = self.store.get_session(session_id)["owner"]
        return self._owners[session_id]

    def session(self, session_id: str, viewer: Viewer | None = None) -> Session:
        """The stored session ``session_id``; NOT_FOUND if there is none, or if ``viewer`` (None:
        anyone, as for the CLI) may not see it."""
        check_session_id(session_id)
        row = self.store.get_session(session_id)
        self._owners[session_id] = row["owner"]
        if viewer is not None and not viewer.sees(row["owner"]):
            raise not_found(session_id)
        return self._bind(session_id)

    def existing_session(self, session_id: str, viewer: Viewer | None = None) -> Session:
        """The stored session ``session_id`` a person named (``--session``); NOT_FOUND naming the
        closest ids among those ``viewer`` may see (None: all), else how to list them, when there is
        none. Never creates one: a mistyped id used to start an empty session silently."""
        try:
            return self.session(session_id, viewer)
        except NiniError as exc:
            if exc.code is not ErrorCode.NOT_FOUND:
                raise
        ids = [row["id"] for row in self.list_sessions(limit=10_000, viewer=viewer)]
        closest = difflib.get_close_matches(session_id, ids, n=3, cutoff=0.6)
        found, missing = NO_SESSION.get(self.settings.ui.current_language, NO_SESSION["en"])
        shown = " ".join(session_id.split())[:80]  # one line, whatever was typed
        message = (
            found.format(session_id=shown, closest=", ".join(closest)) if closest else missing.format(session_id=shown)
        )
        raise NiniError(ErrorCode.NOT_FOUND, message, {"session_id": session_id, "closest": closest})

    @contextlib.asynccontextmanager
    async def command_session(
        self, session_id: str | None, *, new: bool = False, title: str | None = None, viewer: Viewer | None = None
    ) -> AsyncIterator[CommandSession]:
        """The session one command works in: ``session_id`` if it exists (NOT_FOUND with the closest
        ids if not, unless ``new``, which creates it), or a new one when None.

        A session this command created is deleted again when the command fails (the block raises,
        or sets ``failed``) and the session still holds no step: no code was recorded in it and no
        tool call succeeded. A failed command leaves no empty session behind; a session that holds what ran
        stays, and so does one the command found.
        """
        created = False
        if session_id is None:
            session, created = self.create_session(title=title, owner=viewer.name if viewer else None), True
        elif not new:
            session = self.existing_session(session_id, viewer)
        else:
            try:
                session = self.session(session_id, viewer)
            except NiniError as exc:
                if exc.code is not ErrorCode.NOT_FOUND:
                    raise
                session, created = self._create_or_get(session_id, title, viewer)
        held = CommandSession(session)
        try:
            yield held
        except Exception:
            if created:
                await self._drop_if_empty(session.id)
            raise
        if created and held.failed:
            held.dropped = await self._drop_if_empty(session.id)

    def _create_or_get(self, session_id: str, title: str | None, viewer: Viewer | None) -> tuple[Session, bool]:
        """Session ``session_id`` made now (True), or the one another process made a moment ago (False)."""
        try:
            return self.create_session(
                title=title, session_id=session_id, owner=viewer.name if viewer else None, viewer=viewer
            ), True
        except NiniError as exc:
            if exc.code is not ErrorCode.CONFLICT:
                raise
            return self.session(session_id, viewer), False

    async def _drop_if_empty(self, session_id: str) -> bool:
        """Delete session ``session_id`` if it holds no step, whether it went: no tool call of it
        succeeded (or is under way) and no code was recorded in it. Code the policy refused stays
        recorded, with its session: a refusal found while the code ran comes after what it did (files
        it wrote), and refused hostile code is worth keeping on the record either way."""
        calls = await self.store.call(self.store.list_tool_calls, session_id)
        runs = await self.store.call(self.store.list_executions, session_id, fields=("id",))
        if runs or any(call["status"] != "failed" for call in calls):
            return False
        try:
            await self.delete_session(session_id)
        except NiniError:  # kept; the failure the person sees is the command's own
            log.warning("could not remove the empty session %s", session_id, exc_info=True)
            return False
        return True

    def session_or_new(self, session_id: str | None, title: str | None = None, viewer: Viewer | None = None) -> Session:
        """Session ``session_id``, created (with ``title``, owned by ``viewer``) if there is none; a
        new one if None. NOT_FOUND for one ``viewer`` may not see, as ``session`` says.

        Get-or-create in one transaction: processes naming the same new session at once all succeed.
        """
        owner = viewer.name if viewer is not None else None
        if session_id is None:
            return self.create_session(title=title, owner=owner)
        check_session_id(session_id)
        self._check_title(title)
        row = self.store.ensure_session(session_id, title=title, owner=owner or self.settings.session_owner)
        self._owners[session_id] = row["owner"]
        if viewer is not None and not viewer.sees(row["owner"]):
            raise not_found(session_id)
        return self._bind(session_id)

    def list_sessions(
        self, limit: int = 100, viewer: Viewer | None = None, text: str | None = None
    ) -> list[dict[str, Any]]:
        """The newest ``limit`` sessions ``viewer`` may see (None: every session); with ``text``,
        those whose title or conversation contains it."""
        if viewer is None or viewer.admin:
            return self.store.list_sessions(limit, text=text)
        if viewer.name is None:
            return self.store.list_sessions(limit, unowned=True, text=text)
        return self.store.list_sessions(limit, owner=viewer.name, text=text)

    def rename_session(self, session_id: str, title: str, viewer: Viewer | None = None) -> dict[str, Any]:
        """Give the session a new title (its owner only: ``owners.check_owner``); its row. Blocking."""
        from nini.history.session_edit import rename_session

        check_session_id(session_id)
        check_owner(viewer, self.owner_of(session_id), session_id, "rename", self.settings.ui.current_language)
        return rename_session(self.store, session_id, title, Limits.of(self.settings))

    def _check_title(self, title: str | None) -> None:
        """A new session's title within ``limits.max_title_chars`` (TOO_LARGE), before any row is written."""
        if isinstance(title, str):
            check_text("title", title, Limits.of(self.settings))

    async def delete_session(self, session_id: str, viewer: Viewer | None = None) -> None:
        """Delete the session for good (its owner only): its kernel and R worker stopped, its rows
        and its workspace folder gone. CONFLICT while a turn or a step of it runs: stop it first."""
        from nini.history.session_edit import delete_session, running_steps

        check_session_id(session_id)
        language = self.settings.ui.current_language
        check_owner(viewer, await self.store.call(self.owner_of, session_id), session_id, "delete", language)
        if self._turn_running(session_id) or await self.store.call(running_steps, self.store, session_id) > 0:
            raise session_running(session_id, language)
        await self._stop_agents(session_id)
        try:
            await self.store.call(delete_session, self.store, session_id)
        except NiniError as exc:
            raise session_running(session_id, language) if exc.code is ErrorCode.CONFLICT else exc from None
        root = Workspace.for_session(self.settings.sessions_dir, session_id).root
        await self._forget_workspace(root)
        self._owners.pop(session_id, None)
        await asyncio.to_thread(remove_tree, root.parent)  # no link agent code planted is followed out

    def sweep_leftovers(self) -> int:
        """Remove what killed nini processes left (``leftovers.sweep_after_start``): runtime folders,
        cgroup trees, workspace leftovers, NINI_HOME's temp files; only a dead owner's. For a server
        starting, in a thread (``start_sweep``); how many entries were removed."""
        from nini.execution import cgroups, sandbox
        from nini.execution.leftovers import sweep_after_start
        from nini.execution.r_workers import R_RUNTIME_BASE
        from nini.history.engine import sqlite_path

        settings, execution = self.settings, self.settings.execution
        database = sqlite_path(self.store.engine.url)

        def recorded(session_id: str) -> tuple[list[str], Any]:
            datasets = [row["path"] for row in self.store.list_datasets(session_id)]
            return datasets, lambda: {row["path"] for row in self.store.list_artifacts(session_id)}

        return sweep_after_start(
            settings.sessions_dir,
            recorded,
            runtime_bases=[sandbox.runtime_base(), R_RUNTIME_BASE],
            temp_folders=[settings.home, settings.experience_team_dir, *([database.parent] if database else [])],
            cgroups=lambda: cgroups.placement(execution.cgroups, tuple(str(f) for f in execution.cgroup_folders)),
        )

    def start_sweep(self) -> asyncio.Task[int]:
        """``sweep_leftovers`` in a thread, in the background: a server's start never waits for it."""

        async def sweep() -> int:
            try:
                removed = await asyncio.to_thread(self.sweep_leftovers)
            except Exception:  # never the server's failure: the next start, or each session's use, sweeps again
                log.exception("sweeping what killed nini processes left failed")
                return 0
            if removed:
                log.info("removed %d leftover(s) of nini processes that are gone", removed)
            return removed

        self._sweep = asyncio.get_running_loop().create_task(sweep(), name="nini-sweep")
        return self._sweep
