"""Run one CodeRequest in a kernel through its jupyter_client client, and turn what came back into a CodeOutcome.

One run is: an optional silent prelude (``datasets``, ``df``), one ``execute_request`` whose
``user_expressions`` collect ``result``/``output_df``/figures in the kernel, and, when the code
failed or was interrupted, a silent second request that saves the figures made before the error
and clears the two names (ipykernel only evaluates user_expressions after a successful run).
While waiting, the kernel process is checked for life whenever it has been silent for a while,
and the deadline is enforced with an interrupt. What to do with a kernel that is stuck or dead is
the caller's decision (``KernelPool``): this module only reports it. ``inprocess.py`` runs code in
the notebook's own shell instead; it fills the same ``Exchange`` and turns it into an outcome with
the same functions (``build_outcome``, ``stopped``, ``prelude_failure``).
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import json
import queue
import re
import time
from dataclasses import dataclass, field
from typing import Any, Literal

from jupyter_core.utils import ensure_async

from nini.errors import ErrorCode, NiniError, error_dict
from nini.execution._kernel_side import StemAllocator, too_many_figures
from nini.execution.outcome import CodeOutcome, CodeRequest, Fate, RunStop
from nini.execution.output_caps import OutputLimits, RunOutputs
from nini.execution.workspace import Workspace

# "cut": nini's sockets refused a message over the frame cap and closed (``channel_guard``)
KernelState = Literal["ok", "interrupted", "stuck", "dead", "cut"]

CODE_ERROR = ErrorCode.CODE_ERROR  # the submitted program raised: a failure of the code, not of nini
POLL_S = 0.5  # a kernel silent this long is checked for being alive
STOP_POLL_S = 0.05  # how soon a silent run notices its RunStop
INTERRUPT_GRACE_S = 3.0  # after an interrupt, how long the kernel has to answer before it counts as stuck
CUT_GRACE_S = 1.0  # after a connection was cut, how long a dying kernel has to be seen gone
_SYNTAX_ERRORS = ("SyntaxError", "IndentationError", "TabError")
_KERNEL_SIDE = "nini.execution._kernel_side"
_OUTPUT_SIDE = "nini.execution._output_side"
_LOST = "was restarted: variables and imports were lost, datasets and artifacts saved in the workspace are kept"
_NOT_OURS = "nini does not restart a kernel it does not own"
_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")
_DEFAULT_REPR = re.compile(r"<[\w.]+ object(?: at 0x[0-9a-fA-F]+)?>")
# mime type -> (file extension, artifact kind, base64-encoded in the message)
_RICH = {
    "image/png": ("png", "chart", True),
    "image/svg+xml": ("svg", "chart", False),
    "application/pdf": ("pdf", "file", True),
    "text/html": ("html", "file", False),
}


@dataclass
class Exchange:
    """Everything one execute_request produced, in arrival order."""

    reply: dict[str, Any] | None = None
    state: KernelState = "ok"
    stdout: list[str] = field(default_factory=list)
    stderr: list[str] = field(default_factory=list)
    outputs: list[dict[str, Any]] = field(default_factory=list)  # nbformat v4
    rich: list[dict[str, Any]] = field(default_factory=list)  # bundles that become artifact files
    budget: RunOutputs = field(default_factory=RunOutputs)  # what the outputs may still keep (``output_caps``)


@dataclass
class RunReport:
    outcome: CodeOutcome
    state: KernelState  # "stuck", "dead" or "cut": the caller must restart (or give up on) the kernel
    prelude_ran: bool


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text)


async def run_request(
    client: Any,
    manager: Any,
    workspace: Workspace,
    request: CodeRequest,
    *,
    prelude: bool,
    restartable: bool,
    mirror: Any = None,
    stop: RunStop | None = None,
    guard: Any = None,
) -> RunReport:
    """Run ``request`` in the kernel of ``client``/``manager``; never raises for anything the code does.

    ``guard`` (a ``channel_guard.ChannelGuard``) says when nini's sockets refused a message over
    the frame cap: the run then ends TOO_LARGE (state "cut").

    ``mirror`` (a ``mirror.Mirror``) is the workspace of a kernel that does not share this disk (on
    a gateway): the files the run reads are sent to it first, the charts and dataset it wrote are
    brought back before the outcome is built. ``stop`` (the workspace's budget watch) ends the code
    early, as its deadline would, and the run with the stop's error.
    """
    started = time.monotonic()
    deadline = started + request.timeout_s
    missing = missing_dataset(workspace, request)
    if missing is not None:
        return RunReport(missing, "ok", False)
    if mirror is not None:
        refused: RunReport | None = await mirror.push(client, manager, workspace, request, started, restartable)
        if refused is not None:
            return refused
    root = str(workspace.root) if mirror is None else mirror.root
    ran_prelude = False
    limits = request.output_limits
    if prelude or request.dataset_name is not None:
        setup = (
            kernel_call("prelude", root, request.dataset_name)
            + "\n"
            + kernel_call("install", *limits.args(), module=_OUTPUT_SIDE)
        )
        pre = await execute(client, manager, setup, deadline, silent=True, limits=limits, guard=guard)
        if pre.state != "ok" or _status(pre) != "ok":
            return RunReport(prelude_failure(pre, request, started, restartable), pre.state, False)
        ran_prelude = True
    collect = kernel_call(
        "collect",
        root,
        request.label,
        request.save_as,
        True,
        request.max_figures,
        request.save_file,
        request.pending_file,
        limits.max_bytes,
    )
    main = await execute(
        client,
        manager,
        request.code,
        deadline,
        user_expressions={"nini": collect},
        stop=stop,
        limits=limits,
        guard=guard,
    )
    if main.state in ("stuck", "dead", "cut"):
        return RunReport(_ended_by(stop, main, stopped(main, request, started, restartable)), main.state, ran_prelude)
    collected: dict[str, Any] = {}
    if _status(main) == "ok" and main.state == "ok":
        collected = _parse_collected(main)
    else:  # failed or interrupted: keep the figures made so far and clear result/output_df
        cleanup = await execute(
            client,
            manager,
            "",
            time.monotonic() + INTERRUPT_GRACE_S,
            silent=True,
            user_expressions={
                "nini": kernel_call(
                    "collect",
                    root,
                    request.label,
                    None,
                    False,
                    request.max_figures,
                    None,
                    request.pending_file,
                    limits.max_bytes,
                )
            },
            limits=limits,
            guard=guard,
        )
        if cleanup.state in ("stuck", "dead", "cut"):  # answered the interrupt, then hung: a restart is due after all
            main.state = cleanup.state
            return RunReport(
                _ended_by(stop, main, stopped(main, request, started, restartable)), main.state, ran_prelude
            )
        collected = _parse_collected(cleanup) if cleanup.state == "ok" else {}
    if mirror is not None:
        await mirror.pull(client, manager, workspace, request, collected)
    outcome = build_outcome(main, collected, workspace, request, started, restartable)
    return RunReport(_ended_by(stop, main, outcome), main.state, ran_prelude)


def _ended_by(stop: RunStop | None, main: Exchange, outcome: CodeOutcome) -> CodeOutcome:
    """``outcome`` with the error of ``stop`` when it is what ended the run (a run that finished
    before its stop was noticed keeps its own outcome: the next run's check refuses instead)."""
    if stop is None or not stop.is_set() or main.state == "ok":
        return outcome
    fate: Fate = "kernel_interrupted" if main.state == "interrupted" else "kernel_restarted"
    return dataclasses.replace(outcome, success=False, result=None, error=stop.error(fate))


async def execute(
    client: Any,
    manager: Any,
    code: str,
    deadline: float,
    *,
    silent: bool = False,
    user_expressions: dict[str, str] | None = None,
    stop: RunStop | None = None,
    limits: OutputLimits | None = None,
    guard: Any = None,
) -> Exchange:
    """Send one execute_request and gather its iopub messages and its reply.

    At ``deadline``, or once ``stop`` is set while the code runs, the kernel is interrupted (state
    "interrupted"); if it has not answered ``INTERRUPT_GRACE_S`` later the state is "stuck". A dead
    kernel process ends the wait ("dead"), and so does a connection ``guard`` cut ("cut"). Outputs
    are kept within ``limits`` as they arrive (``output_caps``).
    """
    msg_id = client.execute(
        code,
        silent=silent,
        store_history=not silent,
        user_expressions=user_expressions or {},
        allow_stdin=False,
        stop_on_error=False,  # never abort requests queued by others (shared kernels)
    )
    exchange = Exchange(budget=RunOutputs((limits or OutputLimits()).for_host()))
    idle = False
    interrupted_at: float | None = None
    wake = POLL_S if stop is None else STOP_POLL_S
    while exchange.reply is None:
        now = time.monotonic()
        # once idle the code is done: an interrupt then would hit the kernel between requests
        if interrupted_at is None and (now >= deadline or (stop is not None and not idle and stop.is_set())):
            await ensure_async(manager.interrupt_kernel())
            interrupted_at, exchange.state = now, "interrupted"
        limit = (deadline if interrupted_at is None else interrupted_at + INTERRUPT_GRACE_S) - now
        if interrupted_at is not None and limit <= 0:
            exchange.state = "stuck"
            return exchange
        try:
            if not idle:
                msg = await client.get_iopub_msg(timeout=min(wake, max(limit, 0)))
            else:  # the reply is sent before "idle", so it is (nearly always) already waiting
                msg = await client.get_shell_msg(timeout=min(wake, max(limit, 0)))
        except queue.Empty:
            if not await ensure_async(manager.is_alive()):
                exchange.state = "dead"
                return exchange
            if guard is not None and guard.cut():  # nothing more will arrive on the cut connection
                exchange.state = "dead" if await _dies_soon(manager) else "cut"
                return exchange
            continue
        if msg["parent_header"].get("msg_id") != msg_id:
            continue  # another client's output on a shared kernel, or a late reply of an earlier request
        if idle:
            exchange.reply = msg["content"]
        elif msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            idle = True
        else:
            absorb(exchange, msg)
    return exchange


async def _dies_soon(manager: Any) -> bool:
    """Whether the kernel process ends within ``CUT_GRACE_S``: a dying kernel (killed by its memory
    cgroup, crashed) closes its connections before its process is seen gone, and its death must
    not be reported as a message over the cap."""
    until = time.monotonic() + CUT_GRACE_S
    while time.monotonic() < until:
        if not await ensure_async(manager.is_alive()):
            return True
        await asyncio.sleep(STOP_POLL_S)
    return not await ensure_async(manager.is_alive())


def absorb(exchange: Exchange, msg: dict[str, Any]) -> None:
    """Add one iopub message (stream, display_data, execute_result, error) to ``exchange``, within
    its output budget: what is over it is cut or left out with a marker (``output_caps``)."""
    kind, content, budget = msg["msg_type"], msg["content"], exchange.budget
    if kind == "stream":
        name = "stderr" if content.get("name") == "stderr" else "stdout"
        last = exchange.outputs[-1] if exchange.outputs else None
        merged = bool(last and last["output_type"] == "stream" and last["name"] == name)
        text = budget.stream(name, strip_ansi(str(content.get("text", ""))), new_output=not merged)
        _add_stream(exchange, name, text)
    elif kind in ("display_data", "execute_result"):
        kept = budget.bundle(dict(content.get("data") or {}), content.get("metadata"))
        if kept is not None:
            data, metadata = kept
            if isinstance(data.get("text/plain"), str):
                data["text/plain"] = strip_ansi(data["text/plain"])
            output = {"output_type": kind, "data": data, "metadata": metadata}
            if kind == "execute_result":
                output["execution_count"] = content.get("execution_count")
            exchange.outputs.append(output)
            if _rich_types(data):
                exchange.rich.append(data)
            elif "text/plain" in data:  # what a notebook shows for a value: the model should see it too
                exchange.stdout.append(str(data["text/plain"]) + "\n")
    elif kind == "error" and (error := budget.error(content)) is not None:
        exchange.outputs.append(
            {
                "output_type": "error",
                "ename": str(error.get("ename", "Error")),
                "evalue": str(error.get("evalue", "")),
                "traceback": [strip_ansi(str(line)) for line in error.get("traceback") or []],
            }
        )
    _add_stream(exchange, "stderr", budget.pop_notice() or "")


def _add_stream(exchange: Exchange, name: str, text: str) -> None:
    if not text:
        return
    (exchange.stdout if name == "stdout" else exchange.stderr).append(text)
    last = exchange.outputs[-1] if exchange.outputs else None
    if last and last["output_type"] == "stream" and last["name"] == name:
        last["text"] += text
    else:
        exchange.outputs.append({"output_type": "stream", "name": name, "text": text})


def _rich_types(data: dict[str, Any]) -> list[str]:
    """Mime types of a bundle stored as files. HTML only when it is the whole content: a DataFrame's
    HTML table has a readable text/plain twin (which goes to stdout), ``HTML(...)`` has none."""
    types: list[str] = [m for m in ("image/png", "image/svg+xml", "application/pdf") if m in data]
    plain = data.get("text/plain", "").strip()
    if "text/html" in data and (not plain or _DEFAULT_REPR.fullmatch(plain)):
        types.append("text/html")
    return types


def _status(exchange: Exchange) -> str | None:
    return exchange.reply.get("status") if exchange.reply else None


def kernel_call(function: str, *args: Any, module: str = _KERNEL_SIDE) -> str:
    """Python source calling ``<module>.<function>(*args)`` in the kernel (``_kernel_side`` unless
    told); args are literals (str, None, bool, numbers, lists of them)."""
    return f"__import__({module!r}, fromlist=[{function!r}]).{function}({', '.join(map(repr, args))})"


def _parse_collected(exchange: Exchange) -> dict[str, Any]:
    value = (exchange.reply or {}).get("user_expressions", {}).get("nini", {})
    if value.get("status") != "ok":
        return collect_failure(value.get("ename", "Error"), value.get("evalue", "no result"))
    collected: dict[str, Any] = json.loads(value["data"]["text/plain"])
    return collected


def collect_failure(ename: str, evalue: str) -> dict[str, Any]:
    """What ``_kernel_side.collect`` stands for when it raised: an INTERNAL error of the run."""
    return {"collect_error": f"nini could not collect this run's results ({ename}: {evalue})"}


def missing_dataset(workspace: Workspace, request: CodeRequest) -> CodeOutcome | None:
    """NOT_FOUND when the request names a dataset the session does not have, else None; the
    kernel is told which file holds each dataset (``Workspace.write_dataset_index``) first."""
    try:
        if request.datasets is not None:
            workspace.write_dataset_index(request.datasets)
            if request.dataset_name is not None:
                workspace.recorded_dataset(request.datasets, request.dataset_name)
        elif request.dataset_name is not None:
            workspace.existing_dataset(request.dataset_name)
    except NiniError as exc:
        return CodeOutcome.failure(exc.code, exc.message)
    return None


def build_outcome(
    main: Exchange,
    collected: dict[str, Any],
    workspace: Workspace,
    request: CodeRequest,
    started: float,
    restartable: bool,
) -> CodeOutcome:
    """The outcome of a finished run: ``main`` is the code's exchange, ``collected`` what
    ``_kernel_side.collect`` reported (or ``collect_failure``)."""
    artifacts = checked_artifacts(workspace, collected.get("artifacts", []))
    figure_outputs = [
        out for a in artifacts if a.get("format") == "png" and (out := _figure_output(workspace, a, main.budget))
    ]
    notes = list(collected.get("warnings", [])) + main.budget.notes()
    charts_left = max(0, request.max_figures - len({a["name"].split(".", 1)[0] for a in artifacts}))
    if len(main.rich) > charts_left:
        notes.append(too_many_figures(len(main.rich), charts_left))
    artifacts += _write_rich(workspace, main.rich[:charts_left], request, notes)
    warnings = [f"nini: {w}\n" for w in notes]
    error: dict[str, Any] | None = None
    reply = main.reply or {}
    if main.state == "interrupted":
        error = stop_error("interrupted", request.timeout_s, restartable)
    elif reply.get("status") == "error":
        error = code_error(
            reply.get("ename", "Error"),
            reply.get("evalue", ""),
            reply.get("traceback", []),
            reply.get("execution_count"),
        )
    elif reply.get("status") != "ok":
        error = error_dict(CODE_ERROR, f"the kernel did not run the code (status {reply.get('status')!r})")
    elif "collect_error" in collected:
        error = error_dict(ErrorCode.INTERNAL, collected["collect_error"])
    elif "save_error" in collected:
        error = error_dict(CODE_ERROR, collected["save_error"])
    traceback_text = "".join(line + "\n" for line in (error or {}).get("traceback", []))
    return CodeOutcome(
        success=error is None,
        stdout="".join(main.stdout),
        stderr="".join(main.stderr) + traceback_text + "".join(warnings),
        result=collected.get("result") if error is None else None,
        has_dataframe=bool(collected.get("has_dataframe")),
        dataframe_preview=collected.get("dataframe_preview"),
        artifacts=artifacts,
        datasets_saved=list(collected.get("datasets_saved", [])),
        error=error,
        duration_ms=elapsed_ms(started),
        outputs=main.outputs + figure_outputs,
    )


def code_error(ename: str, evalue: str, traceback: list[str], execution_count: int | None) -> dict[str, Any]:
    """The error of a run whose code raised: ``{code, message, line, ename, evalue, traceback}``."""
    lines = strip_ansi("\n".join(traceback)).splitlines()
    # a SyntaxError's value names IPython's temporary cell file ("... (3528.py, line 2)"): the line is reported apart
    shown = re.sub(r" \([^()]*\.py, line \d+\)$", "", evalue) if ename in _SYNTAX_ERRORS else evalue
    line = user_line(lines, execution_count)
    located = {"line": line} if line is not None else {}
    message = f"{ename}: {shown}" if shown else ename
    return error_dict(CODE_ERROR, message, **located, ename=ename, evalue=evalue, traceback=lines)


def user_line(traceback_lines: list[str], execution_count: int | None) -> int | None:
    """The line of the user's cell where the error surfaced: the last frame of this cell.

    IPython 8/9 names a cell ``Cell In[N], line L`` (also for a SyntaxError); older ones
    ``<ipython-input-N-hash>``. Frames of earlier cells (a function defined before) are skipped.
    """
    count = r"\d+" if execution_count is None else str(execution_count)
    frame = re.compile(rf"Cell In\[{count}\], line (\d+)|<ipython-input-{count}-[0-9a-f]+>\"?, line (\d+)")
    found = [m for text in traceback_lines for m in frame.finditer(text)]
    return int(found[-1].group(1) or found[-1].group(2)) if found else None


def stop_error(state: KernelState, timeout_s: float, restartable: bool) -> dict[str, Any]:
    """TIMEOUT or KERNEL_DIED, saying what became of the kernel's state (the caller acts accordingly)."""
    lost, not_ours = _LOST, _NOT_OURS
    if state == "dead":
        tail = f"it {lost}" if restartable else not_ours
        return error_dict(
            ErrorCode.KERNEL_DIED,
            f"the kernel died while running this code (a crash, os._exit or no memory left); {tail}",
        )
    head = f"the code was stopped after {timeout_s:g} s (timeout); the kernel"
    if state == "interrupted":
        return error_dict(ErrorCode.TIMEOUT, f"{head} was interrupted and keeps its variables")
    tail = lost if restartable else f"may still be busy ({not_ours})"
    return error_dict(ErrorCode.TIMEOUT, f"{head} did not respond to the interrupt and {tail}")


def stopped(exchange: Exchange, request: CodeRequest, started: float, restartable: bool) -> CodeOutcome:
    """The outcome of a run that never finished (stuck, dead or cut): what it printed, and why it stopped."""
    if exchange.state == "cut":  # the kernel is restarted (or, not ours, forgotten) like a stuck one
        fate = f"the kernel {_LOST}" if restartable else _NOT_OURS
        error = error_dict(ErrorCode.TOO_LARGE, request.output_limits.words("refused", fate=fate))
    else:
        error = stop_error(exchange.state, request.timeout_s, restartable)
    return CodeOutcome(
        success=False,
        stdout="".join(exchange.stdout),
        error=error,
        duration_ms=elapsed_ms(started),
        stderr="".join(exchange.stderr) + "".join(f"nini: {n}\n" for n in exchange.budget.notes()),
        outputs=exchange.outputs,
    )


def prelude_failure(pre: Exchange, request: CodeRequest, started: float, restartable: bool) -> CodeOutcome:
    if pre.state != "ok":
        return stopped(pre, request, started, restartable)
    reply = pre.reply or {}
    ename, evalue = reply.get("ename", "Error"), reply.get("evalue", "")
    if ename == "DatasetUnreadable":  # the dataset's file is damaged: the same code as R's worker gives
        return CodeOutcome.failure(ErrorCode.INVALID_ARGUMENT, evalue, duration_ms=elapsed_ms(started))
    if ename == "DatasetTooLarge":  # more memory than the kernel's limit: the message names it
        return CodeOutcome.failure(ErrorCode.TOO_LARGE, evalue, duration_ms=elapsed_ms(started))
    # KeyError: the dataset vanished since the check; ImportError: a server kernel without nini installed
    known = ename in ("KeyError", "ModuleNotFoundError", "ImportError")
    code = ErrorCode.INVALID_ARGUMENT if known else ErrorCode.INTERNAL
    return CodeOutcome.failure(code, f"preparing the kernel failed: {ename}: {evalue}", duration_ms=elapsed_ms(started))


def _write_rich(
    workspace: Workspace, bundles: list[dict[str, Any]], request: CodeRequest, warnings: list[str]
) -> list[dict[str, Any]]:
    """Rich outputs (images, HTML, PDF) as artifact files; one stem per bundle, one file per type.

    Written through the workspace file system: ``artifacts`` replaced by a link (agent code can do
    that) is refused, and the run keeps its other results with a warning. Each file is listed in
    the run's pending file first, like the kernel's figures (``_kernel_side.announce``).
    """
    if not bundles:
        return []
    fs = workspace.fs
    artifacts = []
    try:
        fs.makedirs("artifacts")
        names = StemAllocator(fs.listdir("artifacts"))
        for data in bundles:
            types = _rich_types(data)
            stem = names.next(request.label, "figure" if types[0].startswith("image/") else "output")
            for mime in types:
                ext, kind, encoded = _RICH[mime]
                body = data[mime]
                content = (
                    base64.b64decode(body) if encoded else ("".join(body) if isinstance(body, list) else body).encode()
                )
                relative = f"artifacts/{stem}.{ext}"
                place_artifact(workspace, request, relative, content)
                artifacts.append({"name": f"{stem}.{ext}", "path": relative, "format": ext, "kind": kind})
    except NiniError as exc:
        warnings.append(f"rich output not saved: {exc.message}")
    return artifacts


def place_artifact(workspace: Workspace, request: CodeRequest, relative: str, content: bytes) -> None:
    """Write a chart file the run made, listed in the run's pending file first (as the kernel does,
    ``_kernel_side.announce``): if the run is never recorded, the sweep removes it."""
    fs = workspace.fs
    if request.pending_file:
        listed = fs.read_bytes(request.pending_file) if fs.is_file(request.pending_file) else b""
        fs.write_bytes(request.pending_file, listed + f"{relative.rsplit('/', 1)[-1]}\n".encode())
    fs.write_bytes(relative, content)


def _figure_output(workspace: Workspace, artifact: dict[str, Any], budget: RunOutputs) -> dict[str, Any] | None:
    """A saved figure as a display_data output, so an exported notebook shows the chart; within the
    run's output budget like any display. One over the cap is not read: it stays an artifact file
    (the export shows such files too)."""
    try:
        if 4 * -(-(workspace.fs.file_size(artifact["path"]) or 0) // 3) > budget.limits.max_bytes:
            return None
        png = workspace.fs.read_bytes(artifact["path"], limit=budget.limits.max_bytes)
    except NiniError:
        return None
    kept = budget.bundle({"image/png": base64.b64encode(png).decode(), "text/plain": f"<Figure {artifact['name']}>"})
    if kept is None:
        return None
    return {"output_type": "display_data", "data": kept[0], "metadata": {"nini": {"artifact": artifact["path"]}}}


def checked_artifacts(workspace: Workspace, reported: Any) -> list[dict[str, Any]]:
    """The artifacts a kernel or R worker reported that really are regular files beneath the
    workspace, reached without a link (agent code could forge the report); paths normalised."""
    kept = []
    for artifact in reported if isinstance(reported, list) else []:
        path = artifact.get("path") if isinstance(artifact, dict) else None
        try:
            relative = workspace.relative(path) if isinstance(path, str) else None
        except NiniError:
            continue
        if relative is not None and workspace.fs.is_file(relative):
            kept.append({**artifact, "path": relative, "name": relative.rsplit("/", 1)[-1]})
    return kept


def elapsed_ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)
