"""What every nini handler shares: the runtime, JSON bodies, and errors as envelopes.

Every reply of ``/nini/api/`` is ``{"ok": true, "data": ...}`` or ``{"ok": false, "error": {code,
message, details?}}`` (DESIGN.md section 4). ``write_error`` is the only place where an exception
becomes a reply: a ``NiniError`` keeps its code and its status from ``nini.errors.HTTP_STATUS``,
tornado's own ``HTTPError`` (403 from authentication, 405 for a verb no handler has) gets the
closest stable code, and anything else is a plain INTERNAL whose traceback goes to the log only.
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any, overload

from jupyter_server.base.handlers import APIHandler
from tornado import httputil, web

from jupyter_ext.handlers.bodies import INT64, B, check_id, load_body, validate, whole_number
from jupyter_ext.identity import request_viewer
from nini.errors import ErrorCode, NiniError, error_envelope, ok_envelope
from nini.fsutil import no_space, out_of_space
from nini.language import set_client_language
from nini.limits import Limits
from nini.redact import redact_paths

if TYPE_CHECKING:
    from nini.owners import Viewer
    from nini.runtime import Runtime
    from nini.session import Session
    from nini.skills.registry import SkillRegistry

AUTH_RESOURCE = "nini"
RUNTIME_SETTING = "nini_runtime"
UNAVAILABLE_SETTING = "nini_unavailable"  # while the Runtime cannot be opened: jupyter_ext.app.RuntimeReopener
# How a client says its language (the sidebar: on every request, and on its download links), which
# nini's words follow where ui.language is auto: zh or en (zh-CN, en-US... count as those).
LANGUAGE_HEADER = "X-Nini-Language"
LANGUAGE_QUERY = "nini_language"
log = logging.getLogger("nini.jupyter")

# tornado answers some requests itself (authentication, XSRF, unknown verbs) by status; these are
# the stable codes those statuses stand for.
CODE_OF_STATUS = {
    400: ErrorCode.INVALID_ARGUMENT,
    401: ErrorCode.POLICY_VIOLATION,
    403: ErrorCode.POLICY_VIOLATION,
    404: ErrorCode.NOT_FOUND,
    405: ErrorCode.INVALID_ARGUMENT,
    409: ErrorCode.CONFLICT,
}


def as_error(exc: BaseException | None, status: int) -> tuple[int, NiniError]:
    """The status and NiniError a failed request is answered with."""
    if isinstance(exc, NiniError):
        return exc.http_status, exc
    if isinstance(exc, web.HTTPError):
        status, message = exc.status_code, exc.reason
        if exc.log_message:
            try:
                message = exc.log_message % exc.args if exc.args else exc.log_message
            except (TypeError, ValueError):
                message = exc.log_message
    elif exc is None and status < 500:
        message = None
    elif exc is not None and out_of_space(exc):  # a full disk no path of nini named: NO_SPACE all the same
        full = no_space("a file on the server")
        return full.http_status, full
    else:  # a bug: the log has the traceback (tornado logs it), the client one plain line
        return 500, NiniError(ErrorCode.INTERNAL, "unhandled error; the server log has the details")
    code = CODE_OF_STATUS.get(status, ErrorCode.INVALID_ARGUMENT if status < 500 else ErrorCode.INTERNAL)
    return status, NiniError(code, message or httputil.responses.get(status, "error"))


def client_error(handler: web.RequestHandler, status_code: int, **kwargs: Any) -> tuple[int, NiniError]:
    """What ``write_error(status_code, **kwargs)`` tells the client: the status and the error, its
    message naming no host path (``nini.redact``)."""
    exc_info = kwargs.get("exc_info")
    status, error = as_error(exc_info[1] if exc_info else None, status_code)
    runtime = handler.settings.get(RUNTIME_SETTING)
    return status, NiniError(
        error.code, redact_paths(error.message, nini_home=runtime.settings.home if runtime else None), error.details
    )


def write_envelope_error(handler: web.RequestHandler, status_code: int, **kwargs: Any) -> None:
    """``write_error`` of every nini handler (REST and the WebSocket before its upgrade)."""
    status, error = client_error(handler, status_code, **kwargs)
    handler.set_status(status)
    handler.set_header("Content-Type", "application/json; charset=utf-8")
    handler.finish(dumps(error_envelope(error)))


def log_exception(handler: web.RequestHandler, typ, value, tb) -> None:  # noqa: ANN001
    """A NiniError is an answer, not a crash: one line, no traceback; the rest as tornado logs it."""
    if isinstance(value, NiniError):
        log.info("%s %s: %s", handler.request.method, handler.request.path, value)
        return
    web.RequestHandler.log_exception(handler, typ, value, tb)


def runtime_of(settings: dict[str, Any]) -> Runtime:
    """The server's Runtime; while the history database cannot be opened, the error it failed with
    (DB_ERROR: 503), so that every nini route says so rather than Jupyter's 404 page."""
    runtime = settings.get(RUNTIME_SETTING)
    if runtime is None:
        reopener = settings.get(UNAVAILABLE_SETTING)  # jupyter_ext.app.RuntimeReopener
        raise (
            reopener.error_now()
            if reopener
            else NiniError(ErrorCode.INTERNAL, "nini did not start; see the server log")
        )
    return runtime


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


@web.stream_request_body
class NiniHandler(APIHandler):
    """Base of the REST handlers: parse the request, call the core, write the envelope.

    The body is streamed in, so that one over ``server.max_body_bytes`` is refused (413
    TOO_LARGE) before it is read whole, let alone recorded: by its Content-Length when it has
    one, else once the bytes received pass the limit.
    """

    auth_resource = AUTH_RESOURCE
    _body: bytearray
    _too_large = False
    _parsed: dict[str, Any] | None = None

    async def prepare(self) -> None:  # type: ignore[override]
        await super().prepare()
        # the client's language, for what this request and all it starts word (``nini.language``)
        set_client_language(self.request.headers.get(LANGUAGE_HEADER) or self.get_query_argument(LANGUAGE_QUERY, None))
        self._body = bytearray()
        declared = self.request.headers.get("Content-Length")
        if declared and declared.isdigit() and int(declared) > self.max_body_bytes:
            raise self._body_error()

    def data_received(self, chunk: bytes) -> None:
        if self._too_large:
            return
        if len(self._body) + len(chunk) > self.max_body_bytes:
            self._too_large, self._body = True, bytearray()  # the rest is dropped as it arrives
            return
        self._body += chunk

    @property
    def max_body_bytes(self) -> int:
        return self.runtime.settings.server.max_body_bytes

    def _body_error(self) -> NiniError:
        limit = self.max_body_bytes
        return NiniError(
            ErrorCode.TOO_LARGE,
            f"the request body is larger than {limit:,} bytes (server.max_body_bytes)",
            {"max_body_bytes": limit},
        )

    @property
    def runtime(self) -> Runtime:
        return runtime_of(self.settings)

    def reply(self, data: Any, status: int = 200) -> None:
        self.set_status(status)
        self.finish(dumps(ok_envelope(data)), set_content_type="application/json; charset=utf-8")

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        write_envelope_error(self, status_code, **kwargs)

    def log_exception(self, typ, value, tb) -> None:  # noqa: ANN001 - tornado's signature
        log_exception(self, typ, value, tb)

    def body_bytes(self) -> bytes:
        """The raw body (a file's bytes); TOO_LARGE when it passed the limit."""
        if self._too_large:
            raise self._body_error()
        return bytes(getattr(self, "_body", b""))

    def parse(self, model: type[B]) -> B:
        """The JSON body as ``model`` (``jupyter_ext.handlers.bodies``): read once, bounded (nesting,
        integers, surrogates), unknown fields refused; INVALID_ARGUMENT naming the field, TOO_LARGE
        over ``server.max_body_bytes`` or a ``limits.*`` cap. An empty body is ``{}``."""
        if self._too_large:
            raise self._body_error()
        if self._parsed is None:
            self._parsed = load_body(bytes(getattr(self, "_body", b"")))
        return validate(model, self._parsed, Limits.of(self.runtime.settings))

    @overload
    def choice(self, name: str, allowed: tuple[str, ...], default: str) -> str: ...
    @overload
    def choice(self, name: str, allowed: tuple[str, ...], default: None = None) -> str | None: ...

    def choice(self, name: str, allowed: tuple[str, ...], default: str | None = None) -> str | None:
        """Query argument ``name``, which must be one of ``allowed`` when given."""
        value = self.get_query_argument(name, default)
        if value is not None and value not in allowed:
            shown = value if len(value) <= 40 else value[:40] + "..."
            raise NiniError(ErrorCode.INVALID_ARGUMENT, f"{name} must be one of {', '.join(allowed)}, not {shown!r}")
        return value

    def whole_number(self, name: str, default: int, low: int = 0, high: int = INT64[1]) -> int:
        """Query argument ``name``, a whole number from ``low`` to ``high`` (``bodies.whole_number``)."""
        raw = self.get_query_argument(name, None)
        return default if raw is None else whole_number(name, raw, low, high)

    async def read(self, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        """``fn(*args)`` of the store (or using it) off the event loop, on the store's thread."""
        return await self.runtime.store.call(fn, *args, **kwargs)

    def server_kernel(self, kernel_id: str | None) -> str | None:
        """A request's ``kernel_id`` (its shape checked by the body's model): None, or a kernel of this
        Jupyter server (a notebook's) that the turn or the code is to run in; else NOT_FOUND."""
        if kernel_id is None:
            return None
        if kernel_id not in self.kernel_manager.list_kernel_ids():
            raise NiniError(
                ErrorCode.NOT_FOUND, f"no kernel {kernel_id!r} on this Jupyter server", {"kernel_id": kernel_id}
            )
        return kernel_id

    @property
    def viewer(self) -> Viewer:
        """The caller, as whose sessions they may see and make (``jupyter_ext.identity``)."""
        return request_viewer(self, self.runtime.settings)

    @property
    def registry(self) -> SkillRegistry:
        """The caller's skills: on a server that names its users, theirs (``Runtime.registry_for``)."""
        return self.runtime.registry_for(self.viewer.name)

    async def session(self, session_id: str) -> Session:
        """The stored session ``session_id`` if the caller may see it: INVALID_ARGUMENT for a
        malformed id, else NOT_FOUND (also for another user's session: nothing says it exists)."""
        return await self.read(self.runtime.session, check_id("session id", session_id), self.viewer)
