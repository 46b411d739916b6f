"""One R session inside the worker: the user's environment, and what a run does from request to result.

A run: check the request and the code (``r_sandbox.policy``, nothing runs on a refusal), hand the
current datasets (and ``df``) to R, evaluate the code expression by expression (worker_r.R), render
the recorded plot pages, then read ``result`` and ``output_df``. The result dict has exactly the keys
of Python's run_code (``protocol.CONTRACT_KEYS``). Importing this module imports ``rpy2.robjects``:
the console callbacks must be installed first (``r_sandbox.console``).
"""

from __future__ import annotations

import errno
import json
import re
import time
from pathlib import Path
from typing import Any

import rpy2.rinterface as ri
import rpy2.robjects as ro

from r_sandbox import frames, internals, messages, plots, rules
from r_sandbox.console import Console
from r_sandbox.protocol import ErrorCode, error_dict, failure

CODE_ERROR = ErrorCode.CODE_ERROR  # the code failed (R error, syntax, bad output_df): not a failure of nini
R_SOURCES = [Path(__file__).with_name("guard.R"), Path(__file__).with_name("worker_r.R")]
_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")
_PARSE_LOCATION = re.compile(r"^<text>:(\d+):\d+: ?")
# worker_r.R's functions a run calls, taken once as rinterface closures (see RSession._calls)
PER_RUN = ("prepare_run", "make_datasets", "run_code", "finish_plots", "take", "result_json", "plain_frame")


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text)


def guard_message(name: str, language: str = "zh") -> str:
    """What a masked function says when code reaches it at run time (the static check's wording;
    the line is added where the run stopped)."""
    return messages.message("function", name, language=language)


class RSession:
    """The R state of one nini session: a user environment behind the guard, in this process's R."""

    def __init__(self, workspace: Path, allowed_packages: list[str], console: Console, language: str = "zh") -> None:
        self.workspace = workspace
        self.allowed_packages = allowed_packages
        self.console = console
        self.language = messages.language_of(language)
        # the run-time guard's words are set once, in the language the worker started with
        self.start_language = self.language
        self.api = ro.r["new.env"](parent=ro.baseenv)
        for source in R_SOURCES:
            ro.r["sys.source"](str(source), envir=self.api, **{"keep.source": False})
        self._harden()
        denied = sorted(rules.DENIED_FUNCTIONS)
        messages_of_denied = [guard_message(n, self.language) for n in denied]
        self.env = self.api["setup"](ro.StrVector(denied), ro.StrVector(messages_of_denied))
        # robjects looks a function up and wraps it at each api[name] (reading its formals: ~0.15 ms)
        # and converts every argument and value; a run calls R ~7 times: the closures are taken
        # once, now, and called with rinterface objects
        self._calls = {name: ri.SexpEnvironment.__getitem__(self.api, name) for name in PER_RUN}
        self._names = {name: ri.StrSexpVector([name]) for name in ("result", "output_df")}
        self._reader = ri.rternalize(self._read_dataset)
        # the datasets of the current run, name -> workspace-relative file, as nini's record names
        # them; None: every datasets/NAME.parquet (a caller that keeps no record)
        self._files: dict[str, str] | None = None

    def _harden(self) -> None:
        """Take out of R what agent code must never do, whoever calls (guard.R, r_sandbox.internals)."""
        replaced = sorted(rules.REPLACED)
        words = {name: guard_message(name, self.language) for name in rules.CHECKED}
        words["pipe"] = messages.message("program-argument", "", language=self.language)
        words["restore"] = messages.message("deserialize", "", language=self.language)
        words["code-text"] = messages.message("code-text", 'formula("{…}")', language=self.language)
        self._helpers = internals.helpers(self.workspace)  # referenced here: R holds them for the session
        self.api["harden"](
            ro.StrVector(replaced),
            ro.StrVector([guard_message(n, self.language) for n in replaced]),
            ro.ListVector(words),
            ro.ListVector(self._helpers),
        )
        internals.remove_internals(rules.REMOVED_INTERNALS)
        removed = rules.REMOVED_INTERNALS
        self.api["record_removed"](
            ro.StrVector(list(removed)), ro.StrVector([guard_message(n, self.language) for n in removed.values()])
        )

    def run(self, request: dict[str, Any], *, skip_policy: bool = False) -> dict[str, Any]:
        """Run one request; the contract dict. Never raises for what the code does."""
        started = time.monotonic()
        notes: list[str] = []
        # each run's refusals and notes in the language its caller asks for (the client of this run)
        self.language = self.console.language = messages.language_of(request.get("language") or self.start_language)
        files = request.get("datasets")
        self._files = {str(k): str(v) for k, v in files.items()} if isinstance(files, dict) else None
        refused = self._refusal(request, skip_policy)
        if refused is not None:
            return _finished(refused, "", "", notes, started)
        self.console.start()
        try:
            outcome = self._execute(request, notes)
        except MemoryError:  # in Python (pandas, pyarrow); R's own failures are R errors
            outcome = failure(CODE_ERROR, "out of memory: the run needed more than the R worker's memory limit")
        except Exception as exc:  # a bug in r_sandbox: the worker goes on, the caller sees what happened
            outcome = failure(ErrorCode.INTERNAL, f"the R worker failed: {type(exc).__name__}: {exc}")
        finally:
            stdout, stderr = self.console.stop()
        return _finished(outcome, stdout, stderr, notes, started)

    def _refusal(self, request: dict[str, Any], skip_policy: bool) -> dict[str, Any] | None:
        """The reply for a request that must not run at all, else None."""
        code = request.get("code")
        if not isinstance(code, str):
            return failure(ErrorCode.INVALID_ARGUMENT, "code must be a string of R source")
        for key in ("dataset_name", "save_as"):
            name = request.get(key)
            if name is not None and (problem := frames.check_dataset_name(name)) is not None:
                return failure(ErrorCode.INVALID_ARGUMENT, f"{key}: {problem}")
        name = request.get("dataset_name")
        if name is not None and not self._dataset_path(name).is_file():
            available = ", ".join(self._dataset_names()) or "none"
            return failure(ErrorCode.INVALID_ARGUMENT, f"no dataset {name!r} in this session; available: {available}")
        if skip_policy:
            return None
        from r_sandbox.policy import check_r_code, violations_message

        report = check_r_code(code, self.allowed_packages, self.language)
        if report.syntax_error is not None:
            return _syntax_failure(report.syntax_error.message, report.syntax_error.line)
        if report.violations:
            first = report.violations[0]
            outcome = failure(
                ErrorCode.POLICY_VIOLATION, violations_message(report, self.language) or "", line=first.line
            )
            outcome["error"]["violations"] = [v.to_dict() for v in report.violations]
            return outcome
        return None

    def _execute(self, request: dict[str, Any], notes: list[str]) -> dict[str, Any]:
        df = ro.NULL
        if request.get("dataset_name") is not None:
            try:
                df = self._load(request["dataset_name"])
            except Exception as exc:  # damaged, truncated, not Parquet: INVALID_ARGUMENT, as from Python
                if _out_of_memory(exc):  # a small file can decode to gigabytes: TOO_LARGE, as from Python
                    return failure(ErrorCode.TOO_LARGE, _too_large(request["dataset_name"]))
                return failure(ErrorCode.INVALID_ARGUMENT, self._unreadable(request["dataset_name"], exc))
        self._calls["prepare_run"](self.env, self._datasets(), df)
        status, message, line = "error", "", None
        try:
            ran = self._calls["run_code"](ri.StrSexpVector([request["code"]]), self.env)
            status, message, line = (v[0] for v in ran)
        finally:  # close the devices even if R left run_code in a way it should not
            pages = int(self._calls["finish_plots"](self.env, ri.BoolSexpVector([status == "ok"]))[0])
        artifacts, problems = plots.save_pages(
            self.api,
            pages,
            self.workspace,
            request.get("label"),
            int(request.get("max_figures") or 200),
            request.get("pending_file"),
        )
        notes.extend(problems)
        if status != "ok":
            self._take("result")
            self._take("output_df")
            outcome = _run_failure(status, message, _line(line), self.language)
            outcome["artifacts"] = artifacts
            return outcome
        result = self._result(notes)
        shown = self._frame(request.get("save_as"), request.get("save_file"), notes)
        error = None
        if "save_error" in shown:
            error = error_dict(CODE_ERROR, shown["save_error"])
        return {
            "success": error is None,
            "stdout": "",
            "stderr": "",
            "result": result if error is None else None,
            "has_dataframe": "dataframe_preview" in shown,
            "dataframe_preview": shown.get("dataframe_preview"),
            "artifacts": artifacts,
            "datasets_saved": shown.get("datasets_saved", []),
            "error": error,
            "duration_ms": 0,
        }

    def _take(self, name: str) -> tuple[bool, Any]:
        """``name`` removed from the user env: (was it there, its value)."""
        taken = self._calls["take"](self.env, self._names[name])
        return (bool(taken[0][0]), taken[1] if len(taken) > 1 else None)

    def _result(self, notes: list[str]) -> Any:
        present, value = self._take("result")
        if not present:
            return None
        shown = self._calls["result_json"](value)
        if str(shown[0][0]) == "json":
            return json.loads(str(shown[1][0]))
        notes.append(f"result is not JSON-serialisable ({strip_ansi(str(shown[2][0]))}); returned as its str() text")
        return strip_ansi(str(shown[1][0]))

    def _frame(self, save_as: str | None, save_file: str | None, notes: list[str]) -> dict[str, Any]:
        present, value = self._take("output_df")
        plain = self._calls["plain_frame"](value) if present else None
        if plain is None or plain[0] is ri.NULL:
            if plain is not None:
                notes.append(f"output_df is a {plain[1][0]}, not a data.frame; ignored")
            return {"save_error": f"save_as={save_as!r} needs output_df to be a data.frame"} if save_as else {}
        try:
            frame = frames.to_pandas(plain[0], bool(plain[1][0]))
        except Exception as exc:  # a column type neither rpy2 nor the fixes know
            notes.append(f"output_df could not be converted to pandas ({type(exc).__name__}: {exc}); ignored")
            return {"save_error": f"output_df could not be saved as {save_as!r}"} if save_as else {}
        shown: dict[str, Any] = {"dataframe_preview": frames.preview(frame)}
        if save_as:
            try:
                target = self._inside(save_file) if save_file else self._dataset_path(save_as)
                frames.save_parquet(frame, target)
                shown["datasets_saved"] = [save_as]
            except Exception as exc:  # pyarrow refusing a column type, a full disk
                shown["save_error"] = f"output_df could not be saved as {save_as!r}: {type(exc).__name__}: {exc}"
        return shown

    # --- datasets ---------------------------------------------------------------------------------
    def _dataset_path(self, name: str) -> Path:
        """The file of dataset ``name`` (which may not exist)."""
        if self._files is None:
            return self.workspace / "datasets" / f"{name}.parquet"
        relative = self._files.get(name)
        return self._inside(relative) if relative else self.workspace / "datasets" / f".{name}.unrecorded"

    def _inside(self, relative: str) -> Path:
        """``relative`` beneath the workspace's datasets folder (nini names it; checked all the same)."""
        path = self.workspace / relative
        if not relative.startswith("datasets/") or ".." in Path(relative).parts:
            raise ValueError(f"dataset file {relative!r} is not in the workspace's datasets folder")
        return path

    def _dataset_names(self) -> list[str]:
        if self._files is not None:
            return sorted(self._files)
        folder = self.workspace / "datasets"
        if not folder.is_dir():
            return []
        return sorted(p.stem for p in folder.glob("*.parquet") if frames.check_dataset_name(p.stem) is None)

    def _datasets(self) -> Any:
        """A fresh ``datasets`` environment: the files as they are now, each read on first use."""
        return self._calls["make_datasets"](ri.StrSexpVector(self._dataset_names()), self._reader)

    def _read_dataset(self, name: Any) -> Any:
        """Called from R (through rternalize) with the dataset name: the data.frame, or why not.

        rternalize turns a Python exception into NULL, silently; R needs an error it can show.
        """
        try:
            return self._load(str(name[0]))
        except Exception as exc:  # not Parquet, removed meanwhile, a type pandas cannot read
            return ro.StrVector(
                [_too_large(str(name[0])) if _out_of_memory(exc) else self._unreadable(str(name[0]), exc)]
            )

    def _unreadable(self, name: str, exc: BaseException) -> str:
        """The wording of nini.execution._kernel_side.unreadable_dataset (r_sandbox imports no nini),
        with the file's host path replaced by the dataset's name."""
        path = self._dataset_path(name)
        detail = str(exc).replace(str(path), name).replace(path.relative_to(self.workspace).as_posix(), name)
        return (
            f"dataset {name!r} cannot be read: its file is damaged or not Parquet ({type(exc).__name__}: "
            f"{detail[:300]}); save it again from its source"
        )

    def _load(self, name: str) -> Any:
        import pandas as pd

        frame = pd.read_parquet(self._dataset_path(name))
        converted, automatic, utc = frames.to_r(frame)
        return self.api["from_pandas"](converted, automatic, ro.StrVector(utc))


def _out_of_memory(exc: BaseException) -> bool:
    """nini.execution.workspace.out_of_memory (r_sandbox imports no nini): whether a reader's error
    is memory running out (MemoryError, ENOMEM, Arrow's "malloc of size" or "Failed to launch
    worker thread" when no thread stack fits in the address space left)."""
    if isinstance(exc, MemoryError) or (isinstance(exc, OSError) and exc.errno == errno.ENOMEM):
        return True
    text = str(exc).lower()
    return any(
        words in text
        for words in ("out of memory", "cannot allocate memory", "malloc of size", "failed to launch worker thread")
    )


def _too_large(name: str) -> str:
    """The wording of nini.execution.workspace.dataset_too_large (r_sandbox imports no nini) for the
    worker's own limit."""
    import resource

    limit = resource.getrlimit(resource.RLIMIT_AS)[0]
    if limit == resource.RLIM_INFINITY:
        return f"dataset {name!r} cannot be read: it needs more memory than this worker has"
    return (
        f"dataset {name!r} cannot be read: it needs more memory than the limit of {limit // 2**20:,} MiB "
        "(r.memory_limit_mb); work on a part of it, or raise the limit"
    )


def _finished(outcome: dict[str, Any], stdout: str, stderr: str, notes: list[str], started: float) -> dict[str, Any]:
    """The contract dict: captured output (ANSI-free), then the error as R prints it, then nini's notes."""
    outcome["stdout"] = strip_ansi(stdout)
    outcome["stderr"] = strip_ansi(stderr) + outcome.pop("traceback", "") + "".join(f"nini: {n}\n" for n in notes)
    outcome["duration_ms"] = int((time.monotonic() - started) * 1000)
    return outcome


def _line(value: Any) -> int | None:
    return None if value is ri.NA_Integer or value is None else int(value)


def _run_failure(status: str, message: str, line: int | None, language: str = "zh") -> dict[str, Any]:
    """A run stopped by R: an error, the guard, a package that is not installed, or (unchecked code
    only) R's parser."""
    if status == "syntax":
        return _syntax_failure(message, line)
    if status == "policy":
        outcome = failure(ErrorCode.POLICY_VIOLATION, messages.at_line(message, line, language), line=line)
    elif status == "missing-package":
        text = messages.message("not-installed", message, None, language, debian=rules.debian_package(message))
        outcome = failure(CODE_ERROR, messages.at_line(text, line, language), line=line)
    else:
        outcome = failure(CODE_ERROR, strip_ansi(message), line=line)
    outcome["traceback"] = outcome["error"]["message"] + "\n"  # stderr shows it, as R's console does
    return outcome


def _syntax_failure(message: str, line: int | None) -> dict[str, Any]:
    """CODE_ERROR "R syntax error: ..." with its line; R's full text (with the caret) goes to stderr."""
    located = _PARSE_LOCATION.match(message)
    if located:
        line, message = int(located.group(1)), message[located.end() :]
    outcome = failure(CODE_ERROR, f"R syntax error: {message.splitlines()[0]}", line=line)
    outcome["traceback"] = message + "\n"
    return outcome
