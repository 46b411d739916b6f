"""A session: one conversation's history, workspace, event stream and kernel, bound to its host.

Session sits below memory, skills, the agent and the runtime (docs/development.md, "Architecture:
layers"): it knows the process's services only through ``SessionHost``, the few things it hands on
(the store, events, settings, kernels, ...). What a skill or the agent needs from higher up (the
model router, memory, the agent runner) reaches it another way, never through a session.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from nini.errors import ErrorCode, NiniError
from nini.execution.leftovers import sweep_workspace
from nini.execution.workspace import Workspace

if TYPE_CHECKING:
    from nini.config import Settings
    from nini.execution.approvals import Approvals, Asker
    from nini.execution.disk_watch import DiskWatch
    from nini.execution.isolation import Sandboxing
    from nini.execution.kernels import KernelPool
    from nini.execution.parsing import DataReaders
    from nini.execution.variables import NotebookVariables
    from nini.history.events import EventBus
    from nini.history.store import HistoryStore
    from nini.notebook import NotebookContext
    from r_sandbox.client import RWorkerPool


_SWEPT: set[Path] = set()  # workspaces this process has swept (Session.dataset_files)


class SessionHost(Protocol):
    """What a session needs of its process (``nini.runtime.Runtime`` is one): the shared services
    its skills use, and the per-session things only the process knows (workspace, owner, skills)."""

    @property
    def settings(self) -> Settings: ...

    @property
    def store(self) -> HistoryStore: ...

    @property
    def events(self) -> EventBus: ...

    @property
    def approvals(self) -> Approvals: ...

    @property
    def kernels(self) -> KernelPool: ...

    @property
    def r_workers(self) -> RWorkerPool: ...

    @property
    def readers(self) -> DataReaders: ...

    @property
    def sandboxing(self) -> Sandboxing: ...

    def workspace(self, session_id: str) -> Workspace: ...

    def disk_watch(self, session: Session) -> DiskWatch: ...

    def owner_of(self, session_id: str) -> str | None: ...

    # a nini.skills.registry.SkillRegistry: skills sit above sessions, so it is not named here
    def registry_for(self, owner: str | None) -> Any: ...


class Session:
    """What a skill gets as its ``session`` parameter. Cheap to create; all state is in the store."""

    def __init__(
        self,
        session_id: str,
        host: SessionHost,
        *,
        kernel_id: str | None = None,
        variables: NotebookVariables | None = None,
        python_executor: Any = None,
        approver: Asker | None = None,
        notebook: NotebookContext | None = None,
        stage: str | None = None,
    ) -> None:
        self.id = session_id
        self._host = host
        # an existing kernel of the Jupyter server (a notebook's) that run_code uses instead of
        # the session's own sandboxed kernel; only the user's client sets it, never the model
        self.kernel_id = kernel_id
        # a notebook's kernel on the server whose variables run_code copies into the session's
        # sandboxed kernel (its ``variables``): sandbox first, with the user's data; the client sets it
        self.variables = variables
        # what run_code runs Python with instead of the runtime's KernelPool: anything with its
        # ``run`` signature, e.g. %%nini's InProcessExecutor (the notebook's own shell)
        self.python_executor = python_executor
        # how a step in the user's kernel gets the user's OK (execution.approve_in_user_kernel):
        # ``await approver(code, language)`` -> "once" | "session" | "reject", asked where the
        # user is (%%nini's cell); unset, the question is an event the sidebar (or REST) answers
        self.approver = approver
        # the user's notebook as its client saw it when asking (cells, variables); the client sets
        # it for one turn, never the model; None outside a notebook
        self.notebook = notebook
        # the project stage the client says this turn belongs to (init, analysis, report, review);
        # None lets the experience memory infer it from the run
        self.stage = stage
        self.workspace: Workspace = host.workspace(session_id).ensure()

    @property
    def isolation(self) -> str:
        """Where this session's Python runs: "user_kernel" (the user's own kernel, not sandboxed),
        "gateway" (a kernel on the server's Kernel/Enterprise Gateway, in the gateway's sandbox),
        "sandbox" (bubblewrap) or "unsandboxed" (execution.sandbox "none" or no bubblewrap)."""
        if self.kernel_id is not None or self.python_executor is not None:
            return "user_kernel"
        return self._host.kernels.isolation()

    def code_isolation(self, skill: str) -> str | None:
        """Where the code of skill ``skill`` runs, known before it runs (its step shows it from the
        start): run_code's is ``isolation``, run_r_code's the R worker's ("sandbox" or "unsandboxed");
        None for a skill that runs no code of the agent."""
        if skill == "run_code":
            return self.isolation
        if skill == "run_r_code":
            return self._host.sandboxing.isolation
        return None

    @property
    def owner(self) -> str | None:
        """Whose session this is: its turns use that user's preferences, skills and pending experience."""
        return self._host.owner_of(self.id)

    @property
    def registry(self) -> Any:
        """The skills this session's turns use: its owner's (``Runtime.registry_for``), a
        ``nini.skills.registry.SkillRegistry``; the model router and memory its built-in skills
        use come with it (``nini.skills.services``)."""
        return self._host.registry_for(self.owner)

    @property
    def store(self) -> HistoryStore:
        return self._host.store

    @property
    def events(self) -> EventBus:
        return self._host.events

    @property
    def settings(self) -> Settings:
        return self._host.settings

    @property
    def kernels(self) -> KernelPool:
        """The process's Python kernels (sandboxed, or on a gateway); one per session, by its id."""
        return self._host.kernels

    @property
    def r_workers(self) -> RWorkerPool:
        """The process's R workers (``nini.execution.r_workers``), one per session, by its id."""
        return self._host.r_workers

    @property
    def readers(self) -> DataReaders:
        """The process's data file readers (parsing runs in a sandboxed helper where it can)."""
        return self._host.readers

    @property
    def approvals(self) -> Approvals:
        """The process's pending questions for steps in a user's kernel and the sessions allowed to skip them."""
        return self._host.approvals

    @property
    def disk_watch(self) -> DiskWatch:
        """The disk budget watch of this session's workspace (kept by the process across runs)."""
        return self._host.disk_watch(self)

    def info(self) -> dict[str, Any]:
        return self.store.get_session(self.id)

    def dataset_files(self) -> dict[str, str]:
        """Each dataset the record names, name -> its file (workspace-relative): the version readers
        open. On this workspace's first use in this process, the leftovers of killed writes are
        swept first (``leftovers.sweep_workspace``): no file the record names is touched."""
        files = {row["name"]: row["path"] for row in self.store.list_datasets(self.id)}
        if self.workspace.root not in _SWEPT:
            _SWEPT.add(self.workspace.root)
            sweep_workspace(
                self.workspace, files.values(), lambda: {row["path"] for row in self.store.list_artifacts(self.id)}
            )
        return files

    def dataset_file(self, name: str) -> str:
        """The file of dataset ``name`` as the record names it; NOT_FOUND, listing the session's
        datasets, when the record has no such dataset or its file is gone."""
        return self.workspace.recorded_dataset(self.dataset_files(), name)

    def upload(self, source: Path) -> str:
        """Copy a user's file into ``uploads/`` of the workspace; the workspace-relative path.

        Skills only read inside the workspace, so files from outside come in through here.
        """
        source = Path(source).expanduser()
        if not source.is_file():
            raise NiniError(ErrorCode.NOT_FOUND, f"no such file: {source.name}")
        target = f"uploads/{source.name}"
        try:
            with source.open("rb") as handle:  # the user's own file: opened as the user names it
                self.workspace.fs.copy_in(handle, target)  # a copy cut short never stands under the name
        except OSError as exc:
            raise NiniError(ErrorCode.INTERNAL, f"cannot read {source.name}: {exc.strerror or exc}") from None
        return target

    def __repr__(self) -> str:
        return f"Session({self.id!r})"
