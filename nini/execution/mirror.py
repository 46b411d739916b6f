"""The session workspace of a kernel that does not share the server's disk (a gateway's kernel).

Such a kernel works in a folder of its own (``_mirror_side.make_root``). Before each run nini
sends it, over the kernel protocol, what the run may read: the dataset index, every dataset file
the record names and the user's ``uploads/``, each once per kernel (and again when it changed).
After the run it brings back what nini records: the charts ``collect`` saved and the dataset
version ``save_as`` wrote. Other files the code writes stay on the kernel's side; they are lost
with the kernel. Files travel base64-encoded in chunks of ``CHUNK_BYTES``.
"""

from __future__ import annotations

import base64
import json
import time
from dataclasses import dataclass, field
from typing import Any

from nini.errors import ErrorCode, NiniError
from nini.execution.outcome import CodeOutcome, CodeRequest
from nini.execution.python_runner import (
    INTERRUPT_GRACE_S,
    RunReport,
    elapsed_ms,
    execute,
    kernel_call,
    place_artifact,
    stopped,
)
from nini.execution.workspace import DATASET_INDEX, Workspace

__all__ = ["Mirror"]

CHUNK_BYTES = 4 * 1024 * 1024
# extra seconds a transfer may take on top of the run's own timeout: a large dataset is not the code's fault
TRANSFER_GRACE_S = 60.0
_SIDE = "nini.execution._mirror_side"
_ARTIFACT = "artifacts/"


@dataclass
class Mirror:
    """What one gateway kernel holds of the workspace: its folder there and the files sent to it."""

    kernel_spec: str = "the gateway's default kernel"
    own: bool = True  # nini's own kernel, not a notebook's: the folder becomes its working directory
    root: str = ""
    sent: dict[str, tuple[int, int]] = field(default_factory=dict)  # relative -> (size, mtime_ns) when sent
    names: set[str] = field(default_factory=set)  # chart names the kernel knows to be taken
    index: bytes = b""  # the dataset index last sent: a warm run that changes nothing sends nothing

    async def push(
        self, client: Any, manager: Any, workspace: Workspace, request: CodeRequest, started: float, restartable: bool
    ) -> RunReport | None:
        """Send what the run may read; a RunReport when the kernel cannot take it (then the run does not happen)."""
        deadline = time.monotonic() + request.timeout_s + TRANSFER_GRACE_S
        if not self.root:
            made = await execute(
                client,
                manager,
                "",
                deadline,
                silent=True,
                user_expressions={"root": kernel_call("make_root", self.own, module=_SIDE)},
            )
            value = ((made.reply or {}).get("user_expressions") or {}).get("root") or {}
            if made.state != "ok" or value.get("status") != "ok":
                return self._refusal(made, value, request, started, restartable)
            self.root = json.loads(value["data"]["text/plain"])
        index = workspace.fs.read_bytes(DATASET_INDEX) if workspace.fs.is_file(DATASET_INDEX) else b""
        calls = (
            [kernel_call("write", self.root, DATASET_INDEX, _b64(index), False, module=_SIDE)]
            if index != self.index
            else []
        )
        taken = [name for name in _listing(workspace, "artifacts") if name not in self.names]
        if taken:
            calls.append(kernel_call("touch", self.root, [_ARTIFACT + name for name in taken], module=_SIDE))
        files = self._changed_files(workspace, request)
        for code in _batches(calls, [chunks for _, _, chunks in files]):
            sent = await execute(client, manager, code, deadline, silent=True)
            if sent.state != "ok" or (sent.reply or {}).get("status") != "ok":
                reply = sent.reply or {}
                return self._refusal(
                    sent, {"ename": reply.get("ename"), "evalue": reply.get("evalue")}, request, started, restartable
                )
        self.names.update(taken)
        self.index = index
        self.sent.update({relative: version for relative, version, _ in files})
        return None

    async def pull(
        self, client: Any, manager: Any, workspace: Workspace, request: CodeRequest, collected: dict[str, Any]
    ) -> None:
        """Bring back the charts and the saved dataset ``collected`` names; what cannot come back is
        left out of ``collected`` with a warning (charts) or a save error (the dataset)."""
        warnings = collected.setdefault("warnings", [])
        kept = []
        for artifact in collected.get("artifacts") or []:
            path = artifact.get("path") if isinstance(artifact, dict) else None
            if not isinstance(path, str) or not path.startswith(_ARTIFACT):
                continue
            name = path[len(_ARTIFACT) :]
            if not name or "/" in name or name.startswith("."):
                continue
            try:
                place_artifact(workspace, request, path, await self._read(client, manager, path))
            except NiniError as exc:
                warnings.append(f"chart {name} could not be brought back from the gateway: {exc.message}")
                continue
            self.names.add(name)
            kept.append(artifact)
        if "artifacts" in collected:
            collected["artifacts"] = kept
        if collected.get("datasets_saved") and request.save_file:
            try:
                workspace.fs.write_bytes(request.save_file, await self._read(client, manager, request.save_file))
            except NiniError as exc:
                collected["datasets_saved"] = []
                collected["save_error"] = f"output_df could not be brought back from the gateway: {exc.message}"
                return
            self._mark_sent(workspace, request.save_file)

    def _changed_files(
        self, workspace: Workspace, request: CodeRequest
    ) -> list[tuple[str, tuple[int, int], list[str]]]:
        """Each file the kernel lacks or has an older copy of: (path, its version, its write calls
        chunk by chunk). A file the workspace refuses to read (a link) is not sent."""
        wanted = list((request.datasets or {}).values()) + [f"uploads/{n}" for n in _listing(workspace, "uploads")]
        files = []
        for relative in dict.fromkeys(wanted):
            try:
                stat = workspace.fs.lstat(relative)
                if stat is None or (stat.st_size, stat.st_mtime_ns) == self.sent.get(relative):
                    continue
                data = workspace.fs.read_bytes(relative)
            except NiniError:
                continue
            calls = [
                kernel_call("write", self.root, relative, _b64(data[at : at + CHUNK_BYTES]), at > 0, module=_SIDE)
                for at in range(0, max(len(data), 1), CHUNK_BYTES)
            ]
            files.append((relative, (stat.st_size, stat.st_mtime_ns), calls))
        return files

    def _mark_sent(self, workspace: Workspace, relative: str) -> None:
        stat = workspace.fs.lstat(relative)
        if stat is not None:
            self.sent[relative] = (stat.st_size, stat.st_mtime_ns)

    async def _read(self, client: Any, manager: Any, relative: str) -> bytes:
        """The bytes of ``relative`` in the kernel's folder, chunk by chunk; NiniError when it cannot be read."""
        data, offset, size = b"", 0, None
        while size is None or offset < size:
            got = await execute(
                client,
                manager,
                "",
                time.monotonic() + TRANSFER_GRACE_S + INTERRUPT_GRACE_S,
                silent=True,
                user_expressions={"chunk": kernel_call("read", self.root, relative, offset, CHUNK_BYTES, module=_SIDE)},
            )
            value = ((got.reply or {}).get("user_expressions") or {}).get("chunk") or {}
            if got.state != "ok" or value.get("status") != "ok":
                raise NiniError(
                    ErrorCode.INTERNAL,
                    f"{value.get('ename', 'the kernel did not answer')}: {value.get('evalue', got.state)}",
                )
            chunk = json.loads(value["data"]["text/plain"])
            size, piece = int(chunk["size"]), base64.b64decode(chunk["data"])
            if not piece and offset < size:
                raise NiniError(ErrorCode.INTERNAL, "the file shrank while it was read")
            data, offset = data + piece, offset + len(piece)
        return data

    def _refusal(
        self, exchange: Any, value: dict[str, Any], request: CodeRequest, started: float, restartable: bool
    ) -> RunReport:
        """Why the kernel could not take the workspace: it died or hung, or it has no nini to unpack it."""
        if exchange.state != "ok":
            return RunReport(stopped(exchange, request, started, restartable), exchange.state, False)
        ename, evalue = value.get("ename") or "Error", value.get("evalue") or ""
        if ename in ("ModuleNotFoundError", "ImportError"):
            message = (
                f"the gateway's kernel ({self.kernel_spec}) cannot import nini ({evalue}): nini's agent kernels "
                "need nini installed in the kernel's environment on the gateway (pip install nini in its image)"
            )
        else:
            message = f"the session's files could not be sent to the gateway's kernel: {ename}: {evalue}"
        return RunReport(CodeOutcome.failure(ErrorCode.INTERNAL, message, duration_ms=elapsed_ms(started)), "ok", False)


def _listing(workspace: Workspace, folder: str) -> list[str]:
    """The regular files directly in ``folder`` of the workspace (none when it is missing or refused)."""
    try:
        return [name for name in workspace.fs.listdir(folder) if workspace.fs.is_file(f"{folder}/{name}")]
    except NiniError:
        return []


def _batches(small: list[str], files: list[list[str]]) -> list[str]:
    """The calls as few execute_requests of about ``CHUNK_BYTES`` each, in order."""
    batches: list[list[str]] = [[]]
    size = 0
    for call in small + [call for chunks in files for call in chunks]:
        if batches[-1] and size + len(call) > CHUNK_BYTES * 4 // 3:
            batches.append([])
            size = 0
        batches[-1].append(call)
        size += len(call)
    return ["\n".join(batch) for batch in batches if batch]


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")
