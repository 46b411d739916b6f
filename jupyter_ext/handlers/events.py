"""WebSocket handler streaming a session's events (``tool_call``, ``code_execution``, ...) live.

Authentication and authorization happen in ``get`` before the upgrade, so an unauthenticated client
gets a plain 403 and never a socket (jupyter_server's ``ws_authenticated``, as its kernel and event
sockets do). Each message is one event of DESIGN.md section 4, in ``seq`` order. A client that saw
up to ``seq = n`` reconnects with ``?since=n`` and first gets the stored events it missed; without
``since`` it gets the events from now on. Any number of clients may watch one session.

With ``?batch=1`` a message may instead be a JSON array of consecutive events: what is already
there (a replay, a burst of a busy run) goes in one message of up to ``BATCH_EVENTS`` events. A
browser pays per message (a task and an IPC hop each), so the sidebar asks for it; other clients
keep one event per message.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from jupyter_core.utils import ensure_async
from jupyter_server.auth.decorator import ws_authenticated
from jupyter_server.base.handlers import JupyterHandler
from jupyter_server.base.websocket import WebSocketMixin
from tornado import web
from tornado.websocket import WebSocketClosedError, WebSocketHandler

from jupyter_ext.handlers.base import AUTH_RESOURCE, dumps, log_exception, runtime_of, write_envelope_error
from jupyter_ext.handlers.bodies import check_id, whole_number
from jupyter_ext.identity import request_viewer
from nini.errors import ErrorCode, NiniError

if TYPE_CHECKING:
    from nini.history.events import Subscription
    from nini.runtime import Runtime

BATCH_EVENTS = 200  # events in one message at most, with ?batch=1 (about 70 KB of code steps)
SOCKETS_SETTING = "nini_event_sockets"  # the open sockets, closed by the extension on shutdown


class SessionEventsHandler(WebSocketMixin, WebSocketHandler, JupyterHandler):
    auth_resource = AUTH_RESOURCE
    _subscription: Subscription | None = None
    _pump: asyncio.Future[None] | None = None

    @property
    def runtime(self) -> Runtime:
        return runtime_of(self.settings)

    def set_default_headers(self) -> None:
        """JupyterHandler's page headers (CSP, ...) mean nothing for a socket."""

    @ws_authenticated
    async def get(self, session_id: str) -> None:
        """Authorize, check ``since`` and the session, then upgrade (403/400/404 before it)."""
        allowed = await ensure_async(self.authorizer.is_authorized(self, self.current_user, "read", AUTH_RESOURCE))
        if not allowed:
            raise web.HTTPError(403, f"User is not authorized to read on resource: {AUTH_RESOURCE}.")
        self._since = parse_since(self.get_query_argument("since", None))
        self._batch = parse_flag("batch", self.get_query_argument("batch", None))
        runtime = self.runtime
        check_id("session id", session_id)
        await runtime.store.call(runtime.session, session_id, request_viewer(self, runtime.settings))  # another's: 404
        await super().get(session_id)

    def open(self, session_id: str) -> None:
        super().open()  # WebSocketMixin: keep-alive pings
        # Subscribed before this returns, i.e. before the client can send anything or a run it
        # starts next can publish: such a client misses no event even without ``since``.
        self._subscription = self.runtime.events.subscribe(session_id, since=self._since)
        self._pump = asyncio.ensure_future(self._forward(self._subscription))
        self.settings[SOCKETS_SETTING].add(self)

    async def _forward(self, subscription: Subscription) -> None:
        try:
            async for event in subscription:
                if self._batch and subscription.ready:
                    batch = [event]
                    while len(batch) < BATCH_EVENTS and (more := subscription.next_ready()) is not None:
                        batch.append(more)
                    sent = self.write_message(dumps(batch))
                else:
                    sent = self.write_message(dumps(event))
                if subscription.ready:  # a burst (a replay, a busy run): flush once, after its last event
                    sent.add_done_callback(_retrieved)
                else:
                    await sent
        except WebSocketClosedError:
            pass
        finally:
            subscription.close()

    def on_message(self, message: str | bytes) -> None:
        """Viewers only listen; what they send is ignored."""

    def on_close(self) -> None:
        if self.ping_callback is not None:
            self.ping_callback.stop()
        self.settings[SOCKETS_SETTING].discard(self)
        if self._subscription is not None:
            self._subscription.close()

    async def shutdown(self) -> None:
        """End the stream and close the socket (server shutdown)."""
        self.on_close()
        self.close(1001, "server shutting down")
        if self._pump is not None:
            await asyncio.wait([self._pump], timeout=5)

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        write_envelope_error(self, status_code, **kwargs)

    def log_exception(self, typ, value, tb) -> None:  # noqa: ANN001 - tornado's signature
        log_exception(self, typ, value, tb)


def _retrieved(sent: asyncio.Future[None]) -> None:
    """Take a write's outcome: a socket closed mid-burst fails the burst's last write, awaited."""
    if not sent.cancelled():
        sent.exception()


def parse_flag(name: str, raw: str | None) -> bool:
    if raw in (None, "0", "false"):
        return False
    if raw in ("1", "true"):
        return True
    raise NiniError(ErrorCode.INVALID_ARGUMENT, f"{name} must be 1 or 0, not {raw[:40]!r}")


def parse_since(raw: str | None) -> int | None:
    """``?since=``: a seq, a whole number within 64 bits (``bodies.whole_number``)."""
    return None if raw is None else whole_number("since", raw)


handlers = [(r"/nini/api/sessions/([^/]+)/events", SessionEventsHandler)]
