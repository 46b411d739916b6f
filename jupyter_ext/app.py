"""The ``nini`` server extension: one Runtime per Jupyter server, its routes, its shutdown."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jupyter_server.extension.application import ExtensionApp
from traitlets import Bool, Enum, Float, Unicode

from jupyter_ext.handlers import routes
from jupyter_ext.handlers.base import RUNTIME_SETTING, UNAVAILABLE_SETTING
from jupyter_ext.handlers.events import SOCKETS_SETTING
from jupyter_ext.handlers.mcp import MCP_SETTING
from nini.errors import NiniError

if TYPE_CHECKING:
    from jupyter_server.serverapp import ServerApp

    from nini.config import Settings
    from nini.runtime import Runtime


class NiniExtensionApp(ExtensionApp):
    """nini inside a Jupyter server: REST and WebSocket under ``/nini/api/``.

    The traits are what a server admin sets (``c.NiniExtensionApp.sandbox = "bwrap"`` in
    jupyter_server_config.py, or ``--NiniExtensionApp.sandbox=bwrap``); one left unset falls back
    to NINI_HOME/settings.json and the NINI_* environment, as for the CLI.
    """

    name = "nini"
    _warm_up: asyncio.Task[Any] | None = None  # jupyter_ext.warmup, started once the server runs
    _nini_settings: Settings
    description = "nini, a data-analysis agent: skills, sessions, run code, events"
    load_other_extensions = True

    nini_home = Unicode(
        None,
        allow_none=True,
        config=True,
        help="NINI_HOME of this server: settings.json, the history database, user skills and session "
        "workspaces. Unset: the NINI_HOME environment variable, else ~/.nini.",
    )
    sandbox = Enum(
        ["auto", "bwrap", "none"],
        default_value=None,
        allow_none=True,
        config=True,
        help="How agent kernels and R workers are sandboxed. auto: bubblewrap where it works, else "
        "unsandboxed; bwrap: refuse to run code without it (use this on shared servers); none: never "
        "(trusted single-user setups only). Unset: execution.sandbox from settings (default auto).",
    )
    kernels = Enum(
        ["auto", "local", "gateway"],
        default_value=None,
        allow_none=True,
        config=True,
        help="Where nini's agent kernels run. local: on this machine in nini's sandbox; gateway: on the "
        "Kernel/Enterprise Gateway this server was started with (--gateway-url), in the gateway's sandbox; "
        "auto: the gateway when there is one. R workers always run on this server. Unset: execution.kernels "
        "from settings (default auto).",
    )
    r_enabled = Bool(
        None,
        allow_none=True,
        config=True,
        help="Offer R (run_r_code) when R and rpy2 are usable; False turns R off for this server. "
        "Unset: r_enabled from settings (default true).",
    )

    reopen_interval = Float(
        5.0,
        config=True,
        help="Seconds between attempts to open nini's history database while it cannot be opened "
        "(damaged, unreadable, its server down); a request to a nini route starts the next attempt. Meanwhile "
        "every nini route answers 503 DB_ERROR with the reason; once it opens (a backup put back, the server up "
        "again), nini serves without a restart.",
    )

    def initialize_settings(self) -> None:
        """Open nini's Runtime. A database that cannot be opened does not keep nini out of the
        server (its routes would be Jupyter's 404 pages): the routes answer its DB_ERROR, and
        ``RuntimeReopener`` tries again."""
        from nini.config import load_settings
        from nini.logs import configure_logging

        settings = load_settings(home=self.nini_home or None, **self.setting_overrides())
        configure_logging(settings.logs_dir, settings.log_level)
        self._nini_settings = settings
        self.settings[SOCKETS_SETTING] = set()
        self.log.info("nini: NINI_HOME %s, sandbox setting %s", settings.home, settings.execution.sandbox)
        try:
            runtime = self._open_runtime()
        except NiniError as exc:
            self.settings[UNAVAILABLE_SETTING] = RuntimeReopener(self, exc)
            self.log.error(
                "nini: %s; nini's routes answer %s until it opens (tried every %g s)",
                exc.message,
                exc.code.value,
                self.reopen_interval,
            )
            return
        self.settings[RUNTIME_SETTING] = runtime
        if runtime.kernels.gateway_host is not None:
            self.log.info(
                "nini: agent kernels run on the gateway at %s; the sandbox there is the gateway's",
                runtime.kernels.gateway_host,
            )

    @property
    def _server(self) -> ServerApp:
        """The server this extension was loaded into: set before any of these hooks run."""
        assert self.serverapp is not None
        return self.serverapp

    def _open_runtime(self) -> Runtime:
        from nini.runtime import Runtime

        return Runtime(
            self._nini_settings,
            project_dir=Path(self._server.root_dir),
            multi_kernel_manager=self._server.kernel_manager,
        )

    def _opened(self, runtime: Runtime) -> None:
        """A Runtime opened after the server started (``RuntimeReopener``): nini's routes serve it."""
        self.settings[RUNTIME_SETTING] = self._server.web_app.settings[RUNTIME_SETTING] = runtime
        self.log.info("nini: the history database opened; nini's routes serve")
        self._start_background(runtime)

    def setting_overrides(self) -> dict[str, Any]:
        overrides: dict[str, Any] = {}
        if self.sandbox is not None:
            overrides["execution"] = {"sandbox": self.sandbox}
        if self.kernels is not None:
            overrides.setdefault("execution", {})["kernels"] = self.kernels
        if self.r_enabled is not None:
            overrides["r_enabled"] = self.r_enabled
        return overrides

    def initialize_handlers(self) -> None:
        self.handlers.extend(routes())

    async def _start_jupyter_server_extension(self, serverapp: Any) -> None:
        """Once the server's loop runs: warm what a first turn would wait for (``jupyter_ext.warmup``),
        in the background, so neither the server's start nor its first requests wait for it."""
        runtime = self.settings.get(RUNTIME_SETTING)
        if runtime is not None:
            self._start_background(runtime)

    def _start_background(self, runtime: Runtime) -> None:
        from jupyter_ext.warmup import describe, warm_up

        runtime.start_sweep()  # what a killed server left (leftovers.sweep_after_start), in the background
        self._warm_up = asyncio.get_running_loop().create_task(warm_up(runtime), name="nini-warm-up")
        self._warm_up.add_done_callback(
            lambda task: task.cancelled() or task.exception() or self.log.info(describe(task.result()))
        )

    async def stop_extension(self) -> None:
        """Close event sockets and MCP sessions, then shut down nini's kernels and R workers and close
        the store.

        Runs before the server shuts its own kernels down; notebook kernels nini only borrowed are
        left to the server.
        """
        reopener = self.settings.get(UNAVAILABLE_SETTING)
        if reopener is not None:
            await reopener.wait()  # an attempt under way: its Runtime, if it opens, is closed below
        if self._warm_up is not None and not self._warm_up.done():
            self._warm_up.cancel()  # before anything closes; a step already in a thread ends on its own
            await asyncio.gather(self._warm_up, return_exceptions=True)
        sockets = list(self.settings.get(SOCKETS_SETTING, ()))
        await asyncio.gather(*(socket.shutdown() for socket in sockets), return_exceptions=True)
        mcp_endpoint = self._server.web_app.settings.get(MCP_SETTING)  # made by the first MCP request
        if mcp_endpoint is not None:
            await mcp_endpoint.aclose()
        runtime = self._server.web_app.settings.get(RUNTIME_SETTING)  # opened at the start or later
        if runtime is not None:
            await runtime.aclose()  # safe to call twice


class RuntimeReopener:
    """While nini's Runtime cannot be opened: the error nini's routes answer (``runtime_of``), and
    the attempts to open it again. A request starts one when ``reopen_interval`` has passed since
    the last, in a thread (opening waits on files or a database server); the request itself is
    answered with the error at once, and the ones after the attempt succeeded are served."""

    def __init__(self, app: NiniExtensionApp, error: NiniError) -> None:
        self.app = app
        self.error = error
        self._due = time.monotonic() + app.reopen_interval
        self._attempt: asyncio.Task[None] | None = None

    def error_now(self) -> NiniError:
        """The error to answer with; starts an attempt to open the Runtime when one is due."""
        if self._attempt is None and time.monotonic() >= self._due:
            self._attempt = asyncio.get_running_loop().create_task(self._reopen(), name="nini-reopen")
        return self.error

    async def wait(self) -> None:
        if self._attempt is not None:
            await asyncio.gather(self._attempt, return_exceptions=True)

    async def _reopen(self) -> None:
        try:
            runtime = await asyncio.to_thread(self.app._open_runtime)
        except NiniError as exc:
            self.error = exc  # the reason now (the file moved aside: another)
        except Exception:  # a bug: logged; the next attempt may do better
            self.app.log.exception("nini: opening the history database failed")
        else:
            self.app._opened(runtime)
        finally:
            self._due, self._attempt = time.monotonic() + self.app.reopen_interval, None
