"""What every CLI command shares: loading settings once, and turning NiniError into an exit code."""

import functools
import json
import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from nini.errors import NiniError
from nini.fsutil import no_space, out_of_space

if TYPE_CHECKING:  # settings (pydantic) and the store load inside commands: `nini --help` stays fast
    from nini.config import Settings

F = TypeVar("F", bound=Callable[..., Any])
log = logging.getLogger("nini.cli")


class CliState:
    """Per-invocation state on the typer context: the settings and the project directory."""

    def __init__(self, project_dir: Path) -> None:
        self.project_dir = project_dir
        self._settings: Settings | None = None

    @property
    def settings(self) -> "Settings":
        if self._settings is None:
            from nini.config import load_settings, resolve_home
            from nini.logs import configure_logging

            configure_logging(resolve_home() / "logs")  # first, so settings warnings reach the log file
            self._settings = load_settings()
            configure_logging(self._settings.logs_dir, self._settings.log_level)
            for warning in self._settings.warnings:
                typer.echo(f"warning: {warning}", err=True)
        return self._settings


NEW_SESSION_HELP = "Create the --session if there is none (else an unknown id is NOT_FOUND with the closest ids)."


def warn_unsandboxed(settings: "Settings") -> None:
    """One line on stderr when the code this command runs will run without the sandbox
    (``execution.warn_unsandboxed`` silences it): for run-code, run-r, ask and mcp."""
    from nini.execution.unsandboxed import unsandboxed_warning

    line = unsandboxed_warning(settings.execution, settings.ui.current_language)
    if line is not None:
        typer.echo(line, err=True)


def state(ctx: typer.Context) -> CliState:
    root = ctx.find_root()
    if not isinstance(root.obj, CliState):
        root.obj = CliState(Path.cwd())
    return root.obj


def handles_errors(func: F) -> F:
    """Print a NiniError as one line on stderr and exit 1 (2 for a policy denial); no traceback."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except NiniError as exc:
            typer.echo(f"error [{exc.code}]: {exc.message}", err=True)
            raise typer.Exit(exc.exit_code) from None
        except BrokenPipeError:
            # the reader went away (`nini skills list | head`); left alone, the typer layer exits 1
            silence_stdout()
            raise typer.Exit(0) from None
        except (typer.Exit, typer.Abort, KeyboardInterrupt):
            raise
        except Exception as exc:  # a bug in nini: the user gets one line, the log gets the traceback
            if out_of_space(exc):  # a full disk where no path of nini named the place: NO_SPACE all the same
                full = no_space("a file")
                typer.echo(f"error [{full.code}]: {full.message}", err=True)
                raise typer.Exit(full.exit_code) from None
            _log_traceback(func.__name__)
            typer.echo(f"error [INTERNAL]: {type(exc).__name__}: {exc} (traceback in the nini log)", err=True)
            raise typer.Exit(1) from None

    return wrapper  # type: ignore[return-value]


def _log_traceback(command: str) -> None:
    """Log the exception being handled to the JSON-lines file, never to the terminal.

    Commands that need no settings (``skills validate``) never set the log file up, and a record
    with no handler anywhere goes to the stdlib's last-resort handler: the traceback on stderr.
    """
    from nini.config import load_settings
    from nini.logs import configure_logging

    settings = load_settings()
    configure_logging(settings.logs_dir, settings.log_level)
    if log.hasHandlers():
        log.exception("unhandled error in %s", command)


def silence_stdout() -> None:
    """Point stdout at /dev/null once its reader is gone, so the flush at exit cannot fail again."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def print_json(value: Any) -> None:
    json.dump(value, sys.stdout, ensure_ascii=False, indent=2)
    sys.stdout.write("\n")


def print_data(value: Any, as_json: bool, lines: Callable[[Any], list[str]]) -> None:
    """What a show command prints: ``value`` as JSON with ``--json``, else its ``lines`` for a person."""
    if as_json:
        print_json(value)
        return
    for line in lines(value):
        typer.echo(line)


# How --data files are read, next to --data in every command that has it (None: detected, the first sheet)
EncodingOption = Annotated[
    str | None,
    typer.Option("--encoding", help="The --data files' text encoding (e.g. gbk, latin-1); default: detected."),
]
SepOption = Annotated[
    str | None, typer.Option("--sep", help="The --data files' separator (e.g. ';', '|', tab); default: detected.")
]
SheetOption = Annotated[
    str | None,
    typer.Option("--sheet", help="The sheet of an Excel --data file, by name or 0-based index; default: the first."),
]


async def load_data_files(
    session: Any, paths: list[Path], *, announce: bool = True, read: dict[str, Any] | None = None
) -> list[str]:
    """``--data FILE``: copy each file into the session and load it as a dataset (recorded through
    load_dataset, with ``read``: ``--encoding``, ``--sep``, ``--sheet``); a file that cannot be loaded
    stops the command with its error. The datasets' names."""
    from nini.skills.builtin.datasets import loaded_line
    from nini.skills.invoke import invoke

    given = {key: value for key, value in (read or {}).items() if value is not None}
    names = []
    for path in paths:
        loaded = await invoke(session, "load_dataset", {"path": session.upload(path), **given})
        if not loaded.success:
            assert loaded.error is not None  # a failed result carries its error
            raise NiniError(loaded.error["code"], loaded.error["message"])
        names.append(loaded.result["name"])
        if announce:  # dataset sales: 120 rows, 5 columns (encoding gbk, detected; separator ';', detected)
            typer.echo(loaded_line(loaded.result, session.settings.ui.current_language, labelled=True), err=True)
    return names
