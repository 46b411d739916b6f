"""nini's end of a sandboxed kernel's sockets: no message larger than the output cap is read.

Agent code owns the kernel, so it can write anything to the kernel's sockets, bypassing the
kernel-side output caps (``_output_side``). libzmq is told, for every socket of the client and of
the manager, to refuse a frame larger than ``OutputLimits.frame_bytes`` (``ZMQ_MAXMSGSIZE``) and to
queue only a few messages (``ZMQ_RCVHWM``): it checks a frame's announced size before it
allocates the frame, and on a larger one closes the connection instead of reading it. So a 120 MB
message never enters nini's memory. ``ChannelGuard`` watches the shell and iopub connections for
that close, so the run ends at once with a clear error (``python_runner.execute``, state "cut")
instead of waiting for output that will never come.

What this does not bound: one message of very many frames each under the cap (libzmq keeps the
frames of an unfinished message without counting them against the high-water mark).
"""

from __future__ import annotations

from typing import Any

import zmq

QUEUED_MESSAGES = 16  # per socket; what arrives while nini is busy waits in the kernel's own queue


def limit_context(context: zmq.Context[Any], frame_bytes: int) -> None:
    """Every socket made from ``context`` from now on refuses frames over ``frame_bytes``."""
    context.setsockopt(zmq.MAXMSGSIZE, frame_bytes)
    context.setsockopt(zmq.RCVHWM, QUEUED_MESSAGES)


class ChannelGuard:
    """Tells whether the connection of a client's shell or iopub channel was closed under it."""

    def __init__(self, client: Any) -> None:
        sockets = [client.shell_channel.socket, client.iopub_channel.socket]
        self._monitors = [socket.get_monitor_socket(zmq.EVENT_DISCONNECTED) for socket in sockets]

    def cut(self) -> bool:
        """Whether a watched connection was closed (a frame over the cap, or the kernel went away)."""
        return any(monitor.getsockopt(zmq.EVENTS) & zmq.POLLIN for monitor in self._monitors)

    def close(self) -> None:
        for monitor in self._monitors:
            monitor.close(linger=0)
        self._monitors = []
