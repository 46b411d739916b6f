"""The shared services of one process: settings, skills, the history store, events and kernels.

A Jupyter server extension creates one ``Runtime`` in ``initialize_settings`` and closes it in
``stop_extension``; the CLI creates one per command. Nothing here lives in module globals
(DESIGN.md section 8), so several runtimes can coexist, e.g. one per test. The composition root:
this module wires the services; the sessions' book-keeping the runtime inherits is
``nini.runtime_sessions``.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import threading
from collections.abc import Awaitable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from nini.config import Settings
from nini.errors import NiniError
from nini.execution.approvals import Approvals
from nini.execution.disk_watch import DiskWatch
from nini.execution.isolation import Sandboxing
from nini.execution.sandbox import ROOT_UID_BASE, ROOT_UID_SPAN, SandboxMode, runs_as_session_uid
from nini.execution.workspace import Workspace
from nini.history.events import EventBus
from nini.history.store import HistoryStore
from nini.owners import is_server_user, owner_dir
from nini.runtime_sessions import SessionBook
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


class Runtime(SessionBook):
    """Owns the services; hands out ``Session`` objects bound to them (``SessionBook``'s methods)."""

    def __init__(
        self,
        settings: Settings,
        *,
        project_dir: Path | None = None,
        registry: SkillRegistry | None = None,
        multi_kernel_manager: Any = None,
    ) -> None:
        super().__init__()
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
        self._sandbox_uids: dict[Path, int] = {}  # workspace root -> its session's sandbox uid (see workspace)
        self._user_registries: dict[str, SkillRegistry] = {}  # named user -> their skills (see registry_for)
        self._user_registries_lock = threading.Lock()

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
        if self._turn_running(session_id):
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

            stop = functools.partial(self._stop_agents, session_id)
            watch = self._disk_watches[root] = DiskWatch(root, agents_alive=alive, stop_agents=stop)
        return watch

    # SessionBook's hooks: what of the services its book-keeping needs

    def _bind(self, session_id: str) -> Session:
        return Session(session_id, self)

    def _turn_running(self, session_id: str) -> bool:
        return self._agent is not None and self._agent.is_running(session_id)

    async def _stop_agents(self, session_id: str) -> None:
        if self._kernels is not None:
            await self._kernels.shutdown_session(session_id, now=True)
        if self._r_workers is not None:
            await self._r_workers.shutdown_session(session_id)

    async def _forget_workspace(self, root: Path) -> None:
        watch = self._disk_watches.pop(root, None)
        if watch is not None:
            await watch.aclose()
        self._sandbox_uids.pop(root, None)

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
