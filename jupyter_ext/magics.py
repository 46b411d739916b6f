"""IPython magics of nini (``%load_ext nini``): the notebook's own nini session, on the same core.

    %nini session [--new [--title T]]  the id of this notebook's nini session (--new: a fresh one)
    %nini load FILE [--name NAME] [--encoding E] [--sep S] [--sheet S]
                                        a data file as the session's dataset NAME (load_dataset)
    %nini skills [--type function|markdown]
    %nini approvals [--reset]           whether the agent's steps here ask first; --reset: ask again
    %nini export [--format ipynb|md|json] [--out PATH] [--sandboxed]
    %%nini_r [--df NAME] [--save-as NAME]   policy-checked R (run_r_code); DataFrames in and out
    %%nini [--session ID]                   ask the agent (the cell is the question); its code
                                            runs here, with the notebook's variables
    %%nini_run [--r] [--dataset NAME] ...   the cell runs in the session's sandbox, not here
                                            (run_magic.py; what a sandboxed export is made of)

One session per kernel process, created on first use and titled after the notebook when the
kernel knows it. Calls go through ``nini.skills.invoke``, so they are recorded like an agent's.
The kernel's own event loop is busy running the cell, so the Runtime's coroutines run on a private
loop in a background thread that these magics own; the cell waits for them. During ``%%nini`` the
cell's thread does more than wait: it runs the agent's code (``InProcessExecutor``) and shows the
run's progress, both handed over by the loop thread.
"""

from __future__ import annotations

import argparse
import asyncio
import atexit
import concurrent.futures
import functools
import shlex
import sys
import threading
from collections.abc import Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring

from jupyter_ext.ask_view import AskView
from jupyter_ext.notebook_state import bindings, changes_line, notebook_context, restore
from nini.execution.approvals import QUESTION, Decision, decision_of
from nini.execution.isolation import USER_KERNEL_NOTICE

if TYPE_CHECKING:
    from nini.agent.runner import RunResult
    from nini.execution.inprocess import InProcessExecutor
    from nini.rooted import RootedDir
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

    def submit(self, coroutine: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop)

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        future = self.submit(coroutine)
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


def _ask_stdin(prompt: str) -> str:
    """input() through the kernel; a frontend without stdin (nbclient) ends the dialogue like EOF."""
    try:
        return input(prompt)
    except Exception as exc:  # StdinNotImplementedError
        raise EOFError from exc


class _Parser(argparse.ArgumentParser):
    """argparse that reports a usage error to IPython instead of exiting the kernel."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{self.prog}: {message}")


def _line_parser() -> _Parser:
    parser = _Parser(prog="%nini", add_help=False)
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    session = commands.add_parser("session", help="the id of this notebook's nini session")
    session.add_argument("--new", action="store_true", help="start a fresh session for this notebook first")
    session.add_argument("--title", help="the fresh session's title (default: the notebook's name)")
    load = commands.add_parser("load", help="load a data file as a dataset of this notebook's session")
    load.add_argument("file")
    load.add_argument("--name", help="the dataset's name (default: the file's name without extension)")
    load.add_argument("--encoding", help="a text file's encoding, e.g. gbk or latin-1 (default: detected)")
    load.add_argument("--sep", help="a text file's separator, e.g. ';' or tab (default: detected)")
    load.add_argument("--sheet", help="an Excel file's sheet, by name or 0-based index (default: the first)")
    skills = commands.add_parser("skills", help="the skills nini has")
    skills.add_argument("--type", choices=("function", "markdown"))
    export = commands.add_parser("export", help="write this session as a notebook (or md, json)")
    export.add_argument("--format", choices=EXPORT_FORMATS, default="ipynb")
    export.add_argument("--out", help="file to write; default nini-session-<id>.<format> in the cwd")
    export.add_argument("--sandboxed", action="store_true", help="a notebook whose steps re-run in nini's sandbox")
    approvals = commands.add_parser("approvals", help="whether this session's steps in this kernel ask first")
    approvals.add_argument("--reset", action="store_true", help="withdraw 'allow for this session': ask again")
    remember = commands.add_parser("remember", help="choose pending experience to keep, or state one")
    remember.add_argument("text", nargs="?", help='an experience to keep as a candidate, e.g. "use the median, ..."')
    remember.add_argument("--level", choices=("team", "project"))
    remember.add_argument("--type", choices=("standard", "knowledge"))
    remember.add_argument("--trigger")
    feedback = commands.add_parser("feedback", help="judge the last answer (or --run ID): accept, reject or partial")
    feedback.add_argument("action", choices=("accept", "reject", "partial"))
    feedback.add_argument(
        "--run", help="a turn id, report:<artifact id> or a proposal id; default: this session's last answer"
    )
    feedback.add_argument(
        "--signal", action="append", default=[], help="a preference it speaks for, e.g. no_exclamation"
    )
    feedback.add_argument("--comment")
    return parser


@magics_class
class NiniMagics(Magics):
    def __init__(self, shell: Any) -> None:
        super().__init__(shell)
        self._loop: _LoopThread | None = None
        self._runtime: Runtime | None = None
        self._session: Session | None = None
        self._parser = _line_parser()

    @property
    def _ns(self) -> dict[str, Any]:
        """The kernel's namespace (a loaded extension's magics always have their shell)."""
        assert self.shell is not None
        return self.shell.user_ns

    @line_magic
    def nini(self, line: str) -> None:
        """``%nini session|skills [--type T]|export [--format F] [--out PATH]|remember ["TEXT"]``"""
        try:
            words = shlex.split(line, comments=True)  # "%nini session  # a note" is fine
        except ValueError as exc:
            raise UsageError(f"%nini: {exc}") from None
        args = self._parser.parse_args(words)
        if args.command == "session":
            if args.new:
                self._session = self.runtime.create_session(title=args.title or self._notebook_title())
            print(self.session.id)
        elif args.command == "load":
            self._load(args.file, args.name, {"encoding": args.encoding, "sep": args.sep, "sheet": args.sheet})
        elif args.command == "skills":
            for record in self.runtime.registry.list(args.type):
                state = "on" if record["enabled"] else "off"
                print(f"{record['name']:<28} {record['type']:<9} {state:<4} {record['description'][:80]}")
        elif args.command == "approvals":
            self._approvals(args.reset)
        elif args.command == "remember":
            self._remember(args.text, level=args.level, type_=args.type, trigger=args.trigger)
        elif args.command == "feedback":
            self._feedback(args.action, args.run, args.signal, args.comment)
        else:
            print(self._export(args.format, args.out, args.sandboxed))

    def _approvals(self, reset: bool) -> None:
        """Say whether the agent's steps here ask first; ``reset`` makes them ask again."""
        runtime, session = self.runtime, self.session
        words = QUESTION.get(runtime.settings.ui.current_language, QUESTION["zh"])
        if reset and self._loop_thread().run(runtime.approvals.revoke(session.id)):
            print(words["reset"])
        if not runtime.settings.execution.approve_in_user_kernel:
            print(words["off"])
        elif runtime.approvals.allowed_for_session(session.id):
            print(words["allowed"])
        else:
            print(words["asks"])

    def _feedback(self, action: str, run_id: str | None, signals: list[str], comment: str | None) -> None:
        """The user's judgement of an answer, learned from (``nini feedback``); prints what changed."""
        from nini.errors import NiniError

        runtime = self.runtime
        if run_id is None:
            asked = runtime.store.last_messages(self.session.id, "user", 1)  # the last question, not the whole history
            turns = [m["turn_id"] for m in asked if m["turn_id"]]
            if not turns:
                print("nini: no answer to judge yet in this session; give --run ID", file=sys.stderr)
                return
            run_id = turns[-1]

        async def judge() -> Any:
            from nini.agent.preferences import comment_reader

            llm = comment_reader(runtime.router) if comment else None
            return await runtime.preferences.feedback(run_id, action, signals=signals, comment=comment, llm=llm)

        try:
            learned = self._loop_thread().run(judge())
        except NiniError as exc:
            print(f"nini: {exc.code}: {exc.message}", file=sys.stderr)
            return
        print(f"nini: feedback {learned.feedback_id} recorded ({action} on {run_id})")
        for change in learned.changes:
            print(f"  {change['key']}: {change['before']:.2f} -> {change['after']:.2f} ({change['why']})")

    def _remember(self, text: str | None, **options: Any) -> None:
        """A statement becomes a pending candidate; without one, the ``nini remember`` dialogue
        through the notebook's stdin (nothing is written without the user's yes)."""
        from nini.errors import NiniError
        from nini.memory.experience.menu import remember_dialogue

        memory = self.runtime.experience
        try:
            if text is None:
                remember_dialogue(memory, _ask_stdin, print)
                return
            datasets = [row["name"] for row in self.runtime.store.list_datasets(self.session.id)]
            result = memory.capture_statement(text, session_id=self.session.id, datasets=datasets, **options)
        except NiniError as exc:
            print(f"nini: {exc.code}: {exc.message}", file=sys.stderr)
            return
        for item in result.dropped:
            print(f"nini: not kept: {item['reason']}: {item['why']}", file=sys.stderr)
        print(result.line(memory.language) or "nini: it is already pending")

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

            with self.session.workspace.fs.reader(self.session.dataset_file(args.save_as)) as handle:
                self._ns[args.save_as] = pd.read_parquet(handle)

    @magic_arguments("nini")
    @argument("--session", metavar="ID", help="ask in session ID (created if new); default: this notebook's session")
    @argument(
        "--stage",
        choices=("init", "analysis", "report", "review"),
        help="the project stage of this question, for experience matching and capture",
    )
    @argument(
        "--isolated",
        action="store_true",
        help="keep the notebook's variables as they are; only the datasets the run saves come back, by name",
    )
    # IPython types the factory's result as "decorator or function", a union it cannot call
    @cell_magic("nini")  # type: ignore[arg-type]
    def nini_ask(self, line: str, cell: str) -> None:
        """Ask nini about your data; the cell is the question. Its code runs in this kernel.

        Each step shows as it happens (its code, output and charts), the answer as Markdown, then
        how the run ended and which of your variables it created or rebound. The agent sees your
        variables (described in its prompt) and the cells run so far. With ``--isolated`` every
        name the run created or rebound is put back as it was afterwards, except the datasets it
        saved (``save_as``), which come back as DataFrames of those names; an object the agent
        changed in place stays changed. Interrupting the cell cancels the run.
        """
        from nini.errors import NiniError
        from nini.execution.inprocess import InProcessExecutor
        from nini.session import Session

        args = parse_argstring(self.nini_ask, line)
        question = cell.strip()
        if not question:
            raise UsageError("%%nini: write your question in the cell, below the %%nini line")
        try:
            self.runtime.router.chain("chat")  # no model: say so before recording a turn
            session = self.runtime.session_or_new(args.session) if args.session else self.session
        except NiniError as exc:
            print(f"nini: {exc.code.value}: {exc.message}", file=sys.stderr)
            return
        executor = InProcessExecutor(self.shell)
        language = self.runtime.settings.ui.current_language

        async def approver(code: str, _language: str) -> Decision:
            return await executor.ask(functools.partial(_confirm_step, code, language), refused="reject")

        notebook = notebook_context(self.shell, self.runtime.settings.agent.notebook_context_tokens)
        asking = Session(
            session.id, self.runtime, python_executor=executor, approver=approver, notebook=notebook, stage=args.stage
        )
        print(
            f"nini: the agent's code {USER_KERNEL_NOTICE}"
            + (
                ""
                if self.runtime.settings.execution.approve_in_user_kernel
                else " and runs without asking (execution.approve_in_user_kernel is off)"
            )
        )
        if self.runtime.approvals.allowed_for_session(session.id):
            print(QUESTION[language]["allowed"])
        view = AskView(session.workspace.fs, live=hasattr(self.shell, "kernel"))  # a kernel updates displays in place
        before = bindings(self._ns)
        try:
            run = self._loop_thread().submit(self._ask(asking, question, executor, view))
            result = self._serve_run(executor, run, session.id, view)
        except NiniError as exc:
            print(f"nini: {exc.code.value}: {exc.message}", file=sys.stderr)
            return
        finally:
            if args.isolated:
                restore(self._ns, before, keep=view.saved)
                self._bring_back(session, view.saved)
        view.finish(result, changes_line(before, self._ns))

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
        path = self._ns.get("__session__") or self._ns.get("__vsc_ipynb_file__")
        return Path(path).name[:80] if path else "IPython kernel"  # a title nini makes fits limits.max_title_chars

    def _loop_thread(self) -> _LoopThread:
        if self._loop is None:
            self._loop = _LoopThread()
        return self._loop

    def _invoke(self, skill: str, arguments: dict[str, Any]) -> ToolResult:
        from nini.skills.invoke import invoke

        return self._loop_thread().run(invoke(self.session, skill, arguments))

    async def _ask(self, session: Session, question: str, executor: InProcessExecutor, view: AskView) -> RunResult:
        """On the loop thread: run one turn, handing its events to the cell's thread to show."""
        subscription = session.events.subscribe(session.id)
        try:
            _turn_id, task = self.runtime.agent.start(session, question)
            async for event in subscription:
                executor.call_soon(functools.partial(view.show, event))
                if event["type"] == "done":
                    break
            return await task
        finally:
            subscription.close()

    def _serve_run(
        self, executor: InProcessExecutor, run: concurrent.futures.Future[RunResult], session_id: str, view: AskView
    ) -> RunResult:
        """On the cell's thread: run the agent's code and show progress until the run ends.

        The user interrupting the cell cancels the run, which still ends (recorded as canceled);
        a second interrupt stops waiting for that.
        """
        try:
            try:
                executor.serve(until=run, on_idle=view.tick)
            except KeyboardInterrupt:
                print("nini: cancelling the run…", file=sys.stderr)
                self._loop_thread().loop.call_soon_threadsafe(self.runtime.agent.cancel, session_id)
                executor.serve(until=run, on_idle=view.tick)
        finally:
            executor.close()
        return run.result()

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

    def _bring_back(self, session: Session, names: list[str]) -> None:
        """The datasets ``names`` of the session as DataFrames of those names in the notebook."""
        import pandas as pd

        from nini.errors import NiniError

        for name in names:
            try:
                with session.workspace.fs.reader(session.dataset_file(name)) as handle:
                    self._ns[name] = pd.read_parquet(handle)
            except (NiniError, OSError, ValueError) as exc:
                print(f"nini: dataset {name} could not be brought back: {exc}", file=sys.stderr)

    def _hand_over(self, name: str) -> bool:
        """The notebook's DataFrame ``name`` becomes session dataset ``name`` (via load_dataset)."""
        import pandas as pd

        frame = self._ns.get(name)
        if not isinstance(frame, pd.DataFrame):
            raise UsageError(f"--df {name}: no pandas DataFrame named {name!r} in the notebook")
        self.session.workspace.fs.write_with(f"uploads/{name}.parquet", lambda out: frame.to_parquet(out, index=False))
        loaded = self._invoke("load_dataset", {"path": f"uploads/{name}.parquet", "name": name})
        if not loaded.success:
            self._show(loaded)
        return loaded.success

    def _show(self, result: ToolResult) -> None:
        from IPython.display import display

        value = result.result if isinstance(result.result, dict) else {}
        if value.get("stdout"):
            print(value["stdout"], end="" if value["stdout"].endswith("\n") else "\n")
        if value.get("stderr"):
            print(value["stderr"], end="", file=sys.stderr)
        if value.get("result") is not None:
            display(value["result"])
        for artifact in value.get("artifacts") or []:
            if artifact.get("format") == "png":
                _display_png(self.session.workspace.fs, artifact["path"])
        if result.error:
            line = f" (line {result.error['line']})" if result.error.get("line") else ""
            print(f"nini: {result.error['code']}{line}: {result.error['message']}", file=sys.stderr)

    def _export(self, fmt: str, out: str | None, sandboxed: bool) -> Path:
        from nini.execution.policy import find_violations
        from nini.history.export import write_session_export

        session = self.session
        path = Path(out) if out else Path.cwd() / f"nini-session-{session.id}.{fmt}"
        write_session_export(
            session.store,
            session.id,
            session.workspace.root,
            fmt,
            path,  # + <stem>_files/
            check=find_violations,
            sandboxed=sandboxed,
            language=self.runtime.settings.ui.current_language,
        )
        return path.resolve()

    def _load(self, file: str, name: str | None, read: dict[str, str | None]) -> None:
        """The user's data file copied into the session and loaded as a dataset (recorded), read as
        ``read`` says (``--encoding``, ``--sep``, ``--sheet``; detected where not given)."""
        from nini.errors import NiniError
        from nini.skills.builtin.datasets import loaded_line

        given = {key: value for key, value in read.items() if value is not None}
        try:
            loaded = self._invoke("load_dataset", {"path": self.session.upload(Path(file)), "name": name, **given})
        except NiniError as exc:
            print(f"nini: {exc.code.value}: {exc.message}", file=sys.stderr)
            return
        if loaded.success:
            print(f"nini: {loaded_line(loaded.result, self.runtime.settings.ui.current_language, labelled=True)}")
        self._show(loaded)


def _confirm_step(code: str, language: str) -> Decision:
    """Show a step's whole code, highlighted, and ask whether it may run here: once, for the rest of
    the session, or not (on the cell's thread: ``input`` reaches the notebook's frontend)."""
    from IPython.display import Code, display

    words = QUESTION.get(language, QUESTION["zh"])
    print(words["intro"])
    display(Code(code.rstrip(), language="python"))  # pygments' HTML: the code's text escaped
    try:
        decision = decision_of(input(words["ask"]))
    except Exception as exc:  # StdinNotImplementedError: a frontend that cannot answer
        print(f"nini: cannot ask here ({type(exc).__name__}); the step is not run")
        return "reject"
    if decision == "session":
        print(words["session"])
    return decision


def _display_png(files: RootedDir, path: str) -> None:
    """Show a chart of the workspace, read without following links; a refused one is skipped."""
    from IPython.display import Image, display

    from nini.errors import NiniError

    try:
        display(Image(data=files.read_bytes(path), format="png"))
    except NiniError:
        pass


def load_ipython_extension(ipython: Any) -> None:
    from jupyter_ext.run_magic import NiniRunMagics

    magics = NiniMagics(ipython)
    ipython.register_magics(magics)
    ipython.register_magics(NiniRunMagics(ipython, magics))
