"""The shared services of one process: settings, skills, the history store, events and kernels.

A Jupyter server extension creates one ``Runtime`` in ``initialize_settings`` and closes it in
``stop_extension``; the CLI creates one per command. Nothing here lives in module globals
(DESIGN.md section 8), so several runtimes can coexist, e.g. one per test.
"""

from __future__ import annotations

import asyncio
import contextlib
import difflib
import logging
import threading
from collections.abc import AsyncIterator, Awaitable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from nini.config import Settings
from nini.errors import ErrorCode, NiniError
from nini.execution.approvals import Approvals
from nini.execution.disk_watch import DiskWatch
from nini.execution.isolation import Sandboxing
from nini.execution.sandbox import ROOT_UID_BASE, ROOT_UID_SPAN, SandboxMode, runs_as_session_uid
from nini.execution.workspace import Workspace, check_session_id
from nini.history.events import EventBus
from nini.history.store import HistoryStore
from nini.limits import Limits, check_text
from nini.owners import Viewer, check_owner, is_server_user, not_found, owner_dir
from nini.rooted import remove_tree
from nini.session import Session
from nini.skills.registry import SkillRegistry

if TYPE_CHECKING:
    from nini.agent.llm import ModelRouter
    from nini.agent.prompts import PromptContributor
    from nini.agent.runner import AgentRunner, StopHook
    from nini.execution.kernels import KernelPool
    from nini.execution.parsing import DataReaders
    from nini.memory.experience import ExperienceMemory
    from nini.memory.preferences import PreferenceMemory
    from r_sandbox.client import RWorkerPool

T = TypeVar("T")
log = logging.getLogger("nini.runtime")
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


class Runtime:
    """Owns the services; hands out ``Session`` objects bound to them."""

    def __init__(
        self,
        settings: Settings,
        *,
        project_dir: Path | None = None,
        registry: SkillRegistry | None = None,
        multi_kernel_manager: Any = None,
    ) -> None:
        self.settings = settings
        self.project_dir = (project_dir or Path.cwd()).resolve()
        if registry is None:  # the built-ins and the agent's task:* skills (skills sit below the agent)
            from nini.agent.tasks import skill_registry

            registry = skill_registry(settings, self.project_dir)
        self.registry = registry
        self.registry.services = self  # the router and memories its skills use (nini.skills.services)
        self.store = HistoryStore.from_settings(settings)
        self.events = EventBus(self.store)
        self._multi_kernel_manager = multi_kernel_manager
        self._kernels: KernelPool | None = None
        self._r_workers: RWorkerPool | None = None
        self._readers: DataReaders | None = None
        self._router: ModelRouter | None = None
        self._retired_routers: set[asyncio.Task[None]] = set()  # closing once their calls end
        self._client_calls: set[asyncio.Task[Any]] = set()  # see client_call
        self._agent: AgentRunner | None = None
        self._experience: ExperienceMemory | None = None
        self._preferences: PreferenceMemory | None = None
        self._mcp: Any = None  # nini.mcp.client.MCPConnections, once an agent run needs them
        # execution.sandbox decided once, for the kernels, the R workers, the data readers and sessions
        self.sandboxing = Sandboxing(settings.execution)
        self.approvals = Approvals(settings, self._publish)
        self._disk_watches: dict[Path, DiskWatch] = {}  # workspace root -> its budget's last count
        self._owners: dict[str, str | None] = {}  # session id -> its owner (see owner_of)
        self._sandbox_uids: dict[Path, int] = {}  # workspace root -> its session's sandbox uid (see workspace)
        self._user_registries: dict[str, SkillRegistry] = {}  # named user -> their skills (see registry_for)
        self._user_registries_lock = threading.Lock()
        self._sweep: asyncio.Task[int] | None = None  # what killed processes left, swept at a server's start

    @property
    def sandbox_mode(self) -> SandboxMode:
        """How agent code is sandboxed here (``execution.sandbox``, "auto" resolved by a probe): ``sandboxing``'s."""
        return self.sandboxing.mode

    async def _publish(self, session_id: str, type_: str, data: dict[str, Any]) -> None:
        """Record and publish an event of session ``session_id`` (what ``Approvals`` tells clients)."""
        await self.store.call(self.events.publish, session_id, type_, data)

    @property
    def kernels(self) -> KernelPool:
        """Created on first use: importing and probing the kernel machinery costs time the CLI's
        skill commands should not pay."""
        if self._kernels is None:
            from nini.execution.kernels import KernelPool

            self._kernels = KernelPool(
                self.settings.execution,
                multi_kernel_manager=self._multi_kernel_manager,
                language=self.settings.ui.language,
                sandboxing=self.sandboxing,
            )
            self._kernels.on_start = self._announce_kernel_start
        return self._kernels

    async def _announce_kernel_start(self, session_id: str, data: dict[str, Any]) -> None:
        """A ``kernel_start`` event of the session (``KernelStartListener``) while an agent turn runs
        in it: its kernel starting, then ready or failed, so the sidebar's status line says why the
        turn waits. Other runs (REST or CLI run-code) have no one waiting on such a line."""
        if self._agent is not None and self._agent.is_running(session_id):
            await self.store.call(self.events.publish, session_id, "kernel_start", data)

    @property
    def readers(self) -> DataReaders:
        """The limited child processes that read data files (``nini.execution.parsing``), created on first use."""
        if self._readers is None:
            from nini.execution.parsing import DataReaders

            self._readers = DataReaders(self.settings, self.sandbox_mode)
        return self._readers

    @property
    def r_workers(self) -> RWorkerPool:
        """The sessions' R workers (``nini.execution.r_workers``), created on first use."""
        if self._r_workers is None:
            from nini.execution.r_workers import new_worker_pool

            self._r_workers = new_worker_pool(self.settings, self._sandbox_uids.get, self.sandboxing)
        return self._r_workers

    @property
    def router(self) -> ModelRouter:
        """The models of ``settings.llm``, by purpose (created on first use)."""
        if self._router is None:
            from nini.agent.llm import ModelRouter

            self._router = ModelRouter.from_settings(self.settings)
        return self._router

    async def reload_models(self) -> ModelRouter:
        """Re-read ``llm`` from settings.json and the environment, and route every later model call
        through a new router: a provider saved or removed over REST works without a restart.

        The old router is closed once the calls it is serving have ended, so no call breaks; a
        running agent turn makes its next model call through the new router.
        """
        from nini.config import load_settings

        fresh = await asyncio.to_thread(load_settings, home=self.settings.home)
        self.settings.llm = fresh.llm
        old, self._router = self._router, None
        if old is not None:
            task = asyncio.get_running_loop().create_task(old.aclose_when_idle(), name="nini-retire-router")
            self._retired_routers.add(task)
            task.add_done_callback(self._retired_routers.discard)
        return self.router

    @property
    def experience(self) -> ExperienceMemory:
        """The team's and the project's experience libraries and pending candidates (created on first use)."""
        if self._experience is None:
            from nini.agent.experience import model_judge
            from nini.memory.experience import ExperienceMemory

            self._experience = ExperienceMemory(self.settings, self.project_dir, judge=model_judge(self.settings))
        return self._experience

    @property
    def preferences(self) -> PreferenceMemory:
        """The user's preferences (explicit and learned) and their feedback (created on first use)."""
        if self._preferences is None:
            from nini.memory.preferences import PreferenceMemory

            self._preferences = PreferenceMemory(self.settings, self.store, self.project_dir)
        return self._preferences

    async def mcp_tools(self) -> None:
        """Connect the configured MCP servers and register their tools (once; a server that fails is left out)."""
        if not self.settings.mcp.servers:
            return
        if self._mcp is None:
            from nini.mcp.client import MCPConnections

            self._mcp = MCPConnections(self.settings)
        await self._mcp.start(self.registry)

    @property
    def agent(self) -> AgentRunner:
        """The agent runner of this runtime's sessions (created on first use)."""
        if self._agent is None:
            self._agent = self.new_agent()
        return self._agent

    def new_agent(self, *, stop_hooks: list[StopHook] | None = None) -> AgentRunner:
        """An agent runner wired to this runtime: the router (asked per call: ``reload_models``
        replaces it), the configured MCP servers' tools joining the skills as each turn starts, the
        prompt sections (the notebook a turn was asked from, the experiences that match, the user's
        preferences) and the stop hooks (skill enhancement, experience capture), or ``stop_hooks``."""
        from nini.agent.enhance import EnhanceHook
        from nini.agent.experience import ExperienceCaptureHook, ExperienceSection
        from nini.agent.notebook_prompt import notebook_section
        from nini.agent.preferences import PreferenceSection
        from nini.agent.runner import AgentRunner

        def router() -> ModelRouter:
            return self.router

        def experience() -> ExperienceMemory:
            return self.experience

        def preferences() -> PreferenceMemory:
            return self.preferences

        if stop_hooks is None:
            stop_hooks = [EnhanceHook(router), ExperienceCaptureHook(experience, router)]
        sections: list[PromptContributor] = [
            notebook_section,
            ExperienceSection(experience),
            PreferenceSection(preferences),
        ]
        return AgentRunner(router, stop_hooks=stop_hooks, prompt_contributors=sections, before_turn=self.mcp_tools)

    def workspace(self, session_id: str) -> Workspace:
        """Session ``session_id``'s workspace; under a root nini's sandbox the files nini makes
        there belong to the session's sandbox user, who writes beside them."""
        root = Workspace.for_session(self.settings.sessions_dir, session_id).root
        try:
            mode = self.sandbox_mode
        except NiniError:  # execution.sandbox "bwrap" without a working bwrap: said when code runs
            mode = "none"
        if not runs_as_session_uid(mode):
            return Workspace(root)
        uid = self._sandbox_uids.get(root)
        if uid is None:  # allocated once by the store, the same after a restart
            from nini.history.uids import session_uid

            uid = self._sandbox_uids[root] = session_uid(
                self.store, session_id, ROOT_UID_BASE, ROOT_UID_BASE + ROOT_UID_SPAN
            )
        return Workspace(root, (uid, uid))

    def disk_watch(self, session: Session) -> DiskWatch:
        """The budget watch of ``session``'s workspace (bytes and files, before, during and between
        runs), kept for the life of this runtime: its last count spares the next check a walk of the
        workspace; between runs it may stop the session's kernel and R worker."""
        root, session_id = session.workspace.root, session.id
        watch = self._disk_watches.get(root)
        if watch is None:

            def alive() -> bool:
                workers = self._r_workers
                return (self._kernels is not None and self._kernels.kernel_info(session_id) is not None) or (
                    workers is not None and workers.worker_info(session_id) is not None
                )

            async def stop() -> None:
                if self._kernels is not None:
                    await self._kernels.shutdown_session(session_id, now=True)
                if self._r_workers is not None:
                    await self._r_workers.shutdown_session(session_id)

            watch = self._disk_watches[root] = DiskWatch(root, agents_alive=alive, stop_agents=stop)
        return watch

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
        return Session(row["id"], self)

    def owner_of(self, session_id: str) -> str | None:
        """Whose session ``session_id`` is (NOT_FOUND when there is none): whose preferences and skills
        its turns use. An owner never changes, so it is read once per process."""
        if session_id not in self._owners:
            self._owners[session_id] = self.store.get_session(session_id)["owner"]
        return self._owners[session_id]

    def registry_for(self, owner: str | None) -> SkillRegistry:
        """The skills ``owner`` works with: ``registry`` for the server's own user (``session_owner``,
        or None), else the same skills with the user's own folder, NINI_HOME/users/<key>/skills, as
        their user skills: what a user writes there shadows nothing for anyone else."""
        if is_server_user(owner, self.settings.session_owner):
            return self.registry
        assert owner is not None
        with self._user_registries_lock:  # threads (REST handlers' to_thread) may ask at once: one view per user
            if owner not in self._user_registries:
                folder = owner_dir(self.settings.home, owner)
                self._user_registries[owner] = self.registry.view(folder / "skills", folder / "SKILLS_SNAPSHOT.md")
            return self._user_registries[owner]

    def refresh_skills(self) -> None:
        """Re-read the skill roots for every user's registry: after a change that holds for all of
        them (which skills are enabled), not only for the one it was made through. Blocking."""
        with self._user_registries_lock:
            registries = [self.registry, *self._user_registries.values()]
        for registry in registries:
            registry.refresh()

    def session(self, session_id: str, viewer: Viewer | None = None) -> Session:
        """The stored session ``session_id``; NOT_FOUND if there is none, or if ``viewer`` (None:
        anyone, as for the CLI) may not see it."""
        check_session_id(session_id)
        row = self.store.get_session(session_id)
        self._owners[session_id] = row["owner"]
        if viewer is not None and not viewer.sees(row["owner"]):
            raise not_found(session_id)
        return Session(session_id, self)

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
        return Session(session_id, self)

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
        busy = self._agent is not None and self._agent.is_running(session_id)
        if busy or await self.store.call(running_steps, self.store, session_id) > 0:
            raise session_running(session_id, language)
        if self._kernels is not None:
            await self._kernels.shutdown_session(session_id, now=True)
        if self._r_workers is not None:
            await self._r_workers.shutdown_session(session_id)
        try:
            await self.store.call(delete_session, self.store, session_id)
        except NiniError as exc:
            raise session_running(session_id, language) if exc.code is ErrorCode.CONFLICT else exc from None
        root = Workspace.for_session(self.settings.sessions_dir, session_id).root
        watch = self._disk_watches.pop(root, None)
        if watch is not None:
            await watch.aclose()
        self._sandbox_uids.pop(root, None)
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

    async def client_call(self, call: Awaitable[T]) -> T:
        """Await a call a client made (a REST run-code): the runtime closing cancels it first, so it
        ends recorded CANCELED and its client is told so, not cut off by its kernel going away."""
        task = asyncio.ensure_future(call)
        self._client_calls.add(task)
        task.add_done_callback(self._client_calls.discard)
        return await task

    async def aclose(self) -> None:
        """Cancel client calls and agent runs, shut agent-owned kernels and R workers down, then
        close the store; safe to call twice."""
        for task in list(self._client_calls):
            task.cancel()
        await asyncio.gather(*self._client_calls, return_exceptions=True)
        if self._sweep is not None:  # its thread uses the store: it ends before the store closes
            await asyncio.gather(self._sweep, return_exceptions=True)
        await asyncio.gather(*(watch.aclose() for watch in self._disk_watches.values()), return_exceptions=True)
        if self._mcp is not None:
            await self._mcp.aclose()
        try:
            if self._agent is not None:
                await self._agent.aclose()
            if self._router is not None:
                await self._router.aclose()
            if self._retired_routers:  # their calls ended with the agent runs just cancelled
                await asyncio.gather(*self._retired_routers, return_exceptions=True)
        except Exception:  # closing must go on to the kernels and the store
            log.exception("closing the agent failed")
        try:
            if self._kernels is not None:
                await self._kernels.aclose()
        finally:
            try:
                if self._r_workers is not None:
                    await self._r_workers.aclose()
            finally:
                if self._readers is not None:
                    self._readers.close()
                self.events.close()  # its watcher reads the store
                self.store.close()

    async def __aenter__(self) -> Runtime:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
