"""One kernel nini talks to (``KernelHandle``: its manager, client and all it holds on this machine),
and what the pool does to one: evaluate silently in it, interrupt it, stop it freeing everything.

Kept apart from ``kernels.py`` (the pool: which session has which kernel, starting, borrowing,
culling) so that each stays one thing; the pool is the only user.
"""

from __future__ import annotations

import asyncio
import shutil
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from jupyter_core.utils import ensure_async

from nini.execution import cgroups
from nini.execution.channel_guard import ChannelGuard
from nini.execution.mirror import Mirror
from nini.execution.sandbox import SandboxMode
from nini.execution.workspace import Workspace

__all__ = ["KernelHandle", "evaluate_silently", "interrupt", "new_client", "stop"]


@dataclass
class KernelHandle:
    """A kernel of a session (nini started it: ``sandbox`` set) or of the server (borrowed: None)."""

    manager: Any
    client: Any
    sandbox: SandboxMode | Literal["gateway"] | None  # None: an external kernel
    workspace: Workspace | None = None
    runtime_dir: Path | None = None
    started_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))
    restarts: int = 0
    needs_prelude: bool = True
    mirror: Mirror | None = None  # the kernel's own copy of the workspace, when it does not share this disk
    group: cgroups.AgentGroup | None = None  # its cgroup (memory, processes); None: RLIMITs are all there is
    guard: ChannelGuard | None = None  # watches nini's sockets, which refuse messages over the output cap
    last_used: float = field(default_factory=time.monotonic)  # when a run or evaluation last started or ended


async def evaluate_silently(kernel: KernelHandle, expression: str, timeout_s: float) -> tuple[str, str]:
    """One silent execute_request whose user_expressions hold ``expression``; see ``KernelPool.evaluate_in``."""
    msg_id = kernel.client.execute(
        "",
        silent=True,
        store_history=False,
        user_expressions={"value": expression},
        allow_stdin=False,
        stop_on_error=False,
    )
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while (left := deadline - loop.time()) > 0:
        try:
            msg = await ensure_async(kernel.client.get_shell_msg(timeout=left))
        except Exception:  # queue.Empty: no answer in time
            break
        if msg["parent_header"].get("msg_id") == msg_id:
            value = (msg["content"].get("user_expressions") or {}).get("value") or {}
            if value.get("status") == "ok":
                return "ok", value.get("data", {}).get("text/plain", "")
            return "error", f"{value.get('ename', 'Error')}: {value.get('evalue', '')}"
    return "timeout", ""


def new_client(manager: Any) -> Any:
    """A client of ``manager`` with a session id of its own.

    jupyter_client uses the session id as the zmq identity of the shell socket, and ``km.client()``
    copies the manager's: a second client of the same kernel (another pool, a notebook tool) would
    share the identity, and the kernel's replies would go to only one of them.
    """
    session = manager.session.clone()
    session.session = str(uuid.uuid4())
    return manager.client(session=session)


async def interrupt(kernel: KernelHandle) -> None:
    """Stop the code of a canceled run (its agent turn was canceled): in a notebook's kernel it would
    otherwise go on for as long as it takes, in nini's it would hold the session's next run. The
    kernel and its variables stay; the late reply of the interrupted request is ignored by the next
    run (replies are matched by message id). Shielded, so that a second cancellation cannot stop it."""
    try:
        await asyncio.shield(ensure_async(kernel.manager.interrupt_kernel()))
    except asyncio.CancelledError:
        raise
    except Exception:  # a kernel that is gone has nothing left to stop
        pass


async def stop(kernel: KernelHandle, *, now: bool) -> None:
    """Shut an owned kernel down and remove its runtime folder; never raises."""
    try:
        if kernel.guard is not None:
            kernel.guard.close()
        if kernel.client is not None:
            kernel.client.stop_channels()
        if kernel.manager.has_kernel:
            await kernel.manager.shutdown_kernel(now=now)
    except Exception:  # a kernel that is already gone is what we wanted
        pass
    finally:
        if kernel.runtime_dir is not None:
            shutil.rmtree(kernel.runtime_dir, ignore_errors=True)
        if kernel.group is not None:
            await asyncio.to_thread(kernel.group.release)
