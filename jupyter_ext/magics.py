"""IPython magics of nini (``%load_ext nini``): the notebook's own nini session, on the same core.

    %nini session                       the id of this notebook's nini session
    %nini skills [--type function|markdown]
    %nini export [--format ipynb|md|json] [--out PATH]
    %%nini_r [--df NAME] [--save-as NAME]   policy-checked R (run_r_code); DataFrames in and out

One session per kernel process, created on first use and titled after the notebook when the
kernel knows it. Calls go through ``nini.skills.invoke``, so they are recorded like an agent's.
The kernel's own event loop is busy running the cell, so the Runtime's coroutines run on a private
loop in a background thread that these magics own; the cell waits for them.
"""

from __future__ import annotations

import argparse
import asyncio
import atexit
import shlex
import sys
import threading
from collections.abc import Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring

if TYPE_CHECKING:
    from nini.runtime import Runtime
    from nini.session import Session
    from nini.skills.output import ToolResult

T = TypeVar("T")
EXPORT_FORMATS = ("ipynb", "md", "json")


class _LoopThread:
    """A private asyncio loop running in a daemon thread; ``run`` blocks the caller until done."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="nini-magics", daemon=True)
        self._thread.start()

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        future = asyncio.run_coroutine_threadsafe(coroutine, self.loop)
        try:
            return future.result()
        except KeyboardInterrupt:  # the user interrupted the cell: cancel the call (recorded CANCELED)
            future.cancel()
            raise

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)
        if not self._thread.is_alive():
            self.loop.close()


class _Parser(argparse.ArgumentParser):
    """argparse that reports a usage error to IPython instead of exiting the kernel."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{self.prog}: {message}")


def _line_parser() -> _Parser:
    parser = _Parser(prog="%nini", add_help=False)
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    commands.add_parser("session", help="the id of this notebook's nini session")
    skills = commands.add_parser("skills", help="the skills nini has")
    skills.add_argument("--type", choices=("function", "markdown"))
    export = commands.add_parser("export", help="write this session as a notebook (or md, json)")
    export.add_argument("--format", choices=EXPORT_FORMATS, default="ipynb")
    export.add_argument("--out", help="file to write; default nini-session-<id>.<format> in the cwd")
    return parser


@magics_class
class NiniMagics(Magics):
    def __init__(self, shell: Any) -> None:
        super().__init__(shell)
        self._loop: _LoopThread | None = None
        self._runtime: Runtime | None = None
        self._session: Session | None = None
        self._parser = _line_parser()

    @line_magic
    def nini(self, line: str) -> None:
        """``%nini session|skills [--type T]|export [--format F] [--out PATH]``"""
        try:
            words = shlex.split(line, comments=True)  # "%nini session  # a note" is fine
        except ValueError as exc:
            raise UsageError(f"%nini: {exc}") from None
        args = self._parser.parse_args(words)
        if args.command == "session":
            print(self.session.id)
        elif args.command == "skills":
            for record in self.runtime.registry.list(args.type):
                state = "on" if record["enabled"] else "off"
                print(f"{record['name']:<28} {record['type']:<9} {state:<4} {record['description'][:80]}")
        else:
            print(self._export(args.format, args.out))

    @magic_arguments()
    @argument("--df", metavar="NAME", help="hand the notebook's DataFrame NAME to R as `df`")
    @argument("--save-as", metavar="NAME", help="store R's `output_df` as dataset NAME and as DataFrame NAME here")
    @cell_magic
    def nini_r(self, line: str, cell: str) -> None:
        """Run the cell as R through run_r_code: policy-checked, sandboxed, recorded."""
        args = parse_argstring(self.nini_r, line)
        if not any(r["name"] == "run_r_code" for r in self.runtime.registry.list("function")):
            from nini.skills.builtin.run_r import r_status

            print(f"nini: R cannot be used here: {r_status(self.runtime.settings)[1]}", file=sys.stderr)
            return
        if args.df and not self._hand_over(args.df):
            return
        result = self._invoke("run_r_code", {"code": cell, "dataset_name": args.df, "save_as": args.save_as})
        self._show(result)
        if result.success and args.save_as:
            import pandas as pd

            self.shell.user_ns[args.save_as] = pd.read_parquet(self.session.workspace.dataset_path(args.save_as))

    # -- the runtime and the notebook's session ----------------------------------------------------

    @property
    def runtime(self) -> Runtime:
        if self._runtime is None:
            from nini.config import load_settings
            from nini.logs import configure_logging
            from nini.runtime import Runtime

            settings = load_settings()
            configure_logging(settings.logs_dir, settings.log_level)  # nini's log, not the cell's output
            self._runtime = Runtime(settings, project_dir=Path.cwd())
            atexit.register(self.close)
        return self._runtime

    @property
    def session(self) -> Session:
        if self._session is None:
            self._session = self.runtime.create_session(title=self._notebook_title())
        return self._session

    def _notebook_title(self) -> str:
        # ipykernel puts the notebook's path here when a Jupyter server started the kernel
        path = self.shell.user_ns.get("__session__") or self.shell.user_ns.get("__vsc_ipynb_file__")
        return Path(path).name if path else "IPython kernel"

    def _invoke(self, skill: str, arguments: dict[str, Any]) -> ToolResult:
        from nini.skills.invoke import invoke

        if self._loop is None:
            self._loop = _LoopThread()
        return self._loop.run(invoke(self.session, skill, arguments))

    def close(self) -> None:
        """Shut the session's R worker and kernels down and close the store (at kernel exit)."""
        runtime, self._runtime, self._session = self._runtime, None, None
        if runtime is None:
            return
        if self._loop is not None:
            self._loop.run(runtime.aclose())
            self._loop.stop()
            self._loop = None
        else:
            runtime.store.close()
        atexit.unregister(self.close)

    # -- pieces of the magics ------------------------------------------------------------------------

    def _hand_over(self, name: str) -> bool:
        """The notebook's DataFrame ``name`` becomes session dataset ``name`` (via load_dataset)."""
        import pandas as pd

        frame = self.shell.user_ns.get(name)
        if not isinstance(frame, pd.DataFrame):
            raise UsageError(f"--df {name}: no pandas DataFrame named {name!r} in the notebook")
        upload = self.session.workspace.root / "uploads" / f"{name}.parquet"
        upload.parent.mkdir(parents=True, exist_ok=True)
        partial = upload.with_name(f".{upload.name}.partial")
        frame.to_parquet(partial, index=False)
        partial.replace(upload)
        loaded = self._invoke("load_dataset", {"path": f"uploads/{name}.parquet", "name": name})
        if not loaded.success:
            self._show(loaded)
        return loaded.success

    def _show(self, result: ToolResult) -> None:
        from IPython.display import Image, display

        value = result.result if isinstance(result.result, dict) else {}
        if value.get("stdout"):
            print(value["stdout"], end="" if value["stdout"].endswith("\n") else "\n")
        if value.get("stderr"):
            print(value["stderr"], end="", file=sys.stderr)
        if value.get("result") is not None:
            display(value["result"])
        for artifact in value.get("artifacts") or []:
            if artifact.get("format") == "png":
                display(Image(filename=str(self.session.workspace.root / artifact["path"])))
        if result.error:
            line = f" (line {result.error['line']})" if result.error.get("line") else ""
            print(f"nini: {result.error['code']}{line}: {result.error['message']}", file=sys.stderr)

    def _export(self, fmt: str, out: str | None) -> Path:
        from nini.fsutil import atomic_write_text
        from nini.history.export import export_session

        session = self.session
        text = export_session(session.store, session.id, session.workspace.root, fmt)
        path = Path(out) if out else Path.cwd() / f"nini-session-{session.id}.{fmt}"
        atomic_write_text(path, text)
        return path.resolve()


def load_ipython_extension(ipython: Any) -> None:
    ipython.register_magics(NiniMagics(ipython))
