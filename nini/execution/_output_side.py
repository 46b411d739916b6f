"""Runs inside the kernel: the outputs of nini's requests capped before they leave the kernel.

``install`` (sent by the host with the first run's prelude) wraps the kernel's ``session.send``,
the one call every stream, display, result, error and reply goes through, so that a 120 MB display
becomes a preview and its size *before* it is serialised and sent (``output_caps``); and the
display publisher, so that displays past the run's budget cost nothing. Only messages answering
nini's own client session are touched: in a user's notebook kernel, the notebook's own outputs
are left alone.

This is cooperation, not a boundary: agent code can unwrap it or write to the sockets directly.
nini's process applies the same caps again as messages arrive, and its sockets refuse a message
larger than ``OutputLimits.frame_bytes`` before allocating it (``channel_guard``).
"""

from __future__ import annotations

import json
import sys
import threading
from typing import Any

from nini.execution.output_caps import OutputLimits, RunOutputs, cap_error, cut_text, head, preview_bundle

_BUNDLES = ("display_data", "execute_result", "update_display_data")
_CAPPED = frozenset(("stream", "error", "execute_reply", "execute_input", *_BUNDLES))
_ROUGH_JSON_FACTOR = 6  # a character takes at most this many bytes in JSON ("\u0001")


class _OutputCap:
    """The state of the wrapped ``send``: the limits, nini's client sessions, the current run."""

    def __init__(self, original: Any, limits: OutputLimits) -> None:
        self.original = original
        self.limits = limits
        self.owners: set[str] = set()
        self.lock = threading.Lock()  # stream flushes come from ipykernel's IO thread
        self.run_id: str | None = None
        self.run = RunOutputs(limits)

    def send(
        self, stream: Any, msg_or_type: Any, content: Any = None, parent: Any = None, *args: Any, **kwargs: Any
    ) -> Any:
        message = msg_or_type if isinstance(msg_or_type, dict) else None
        kind = message["header"]["msg_type"] if message else msg_or_type
        body = message["content"] if message else content
        if kind not in _CAPPED or not isinstance(body, dict):  # status, replies that carry no output
            return self.original(stream, msg_or_type, content, parent, *args, **kwargs)
        parent_header = _header(message["parent_header"] if message else parent)
        if parent_header.get("session") not in self.owners:
            return self.original(stream, msg_or_type, content, parent, *args, **kwargs)
        with self.lock:
            capped, notice = self._capped(kind, body, parent_header.get("msg_id"))
        if capped is None:
            sent = message
        elif message is not None:
            sent = self.original(stream, {**message, "content": capped}, content, parent, *args, **kwargs)
        else:
            sent = self.original(stream, msg_or_type, capped, parent, *args, **kwargs)
        if notice is not None:
            self.original(stream, "stream", {"name": "stderr", "text": notice}, parent_header, ident=b"stream.stderr")
        return sent

    def publishing(self, publish: Any, publisher: Any) -> Any:
        """``publish`` of the display publisher, which does nothing once the run is over its budget:
        ipykernel flushes stdout and stderr before each display, and a flood of displays past the
        budget would spend the run's time there for messages that are dropped anyway."""

        def publish_within_budget(data: Any, *args: Any, **kwargs: Any) -> Any:
            header = _header(publisher.parent_header)
            with self.lock:
                spent = header.get("msg_id") == self.run_id and self.run.exhausted
                if spent and header.get("session") in self.owners and isinstance(data, dict):
                    self.run.bundle(data)  # counted as left out
                    return None
            return publish(data, *args, **kwargs)

        return publish_within_budget

    def _capped(self, kind: str, body: dict[str, Any], run_id: str | None) -> tuple[dict[str, Any] | None, str | None]:
        """The content to send instead of ``body`` (None: send nothing), and a budget marker."""
        if kind in ("stream", "error", *_BUNDLES) and run_id != self.run_id:
            self.run_id, self.run = run_id, RunOutputs(self.limits)  # the first output of a new request
        if kind == "stream":
            text = self.run.stream(str(body.get("name")), str(body.get("text", "")), new_output=False)
            capped = {**body, "text": text} if text else None
        elif kind in _BUNDLES:
            kept = self.run.bundle(body.get("data") or {}, body.get("metadata"))
            capped = None if kept is None else {**body, "data": kept[0], "metadata": kept[1]}
        elif kind == "error":
            capped = self.run.error(body)
        elif kind == "execute_reply":
            capped = cap_error(body, self.limits) if body.get("status") == "error" else body
        else:  # execute_input: the code, echoed
            capped = {**body, "code": cut_text(str(body.get("code", "")), self.limits.max_bytes, self.limits)}
        return (capped if capped is None else self._fitted(kind, capped)), self.run.pop_notice()

    def _fitted(self, kind: str, body: dict[str, Any]) -> dict[str, Any]:
        """``body``, or a stand-in when its JSON would still pass the frame nini accepts (text full
        of characters JSON escapes: a character of the cap can take six bytes on the wire)."""
        rough = sum(len(v) for v in _strings(body))
        limit = self.limits.frame_bytes - 64 * 1024
        if rough * _ROUGH_JSON_FACTOR <= limit or _json_size(body) <= limit:
            return body
        if kind == "stream":
            text = head(str(body.get("text", "")), limit // _ROUGH_JSON_FACTOR)
            return {**body, "text": text + self.limits.words("stream")}
        if kind in _BUNDLES:
            return {**body, "data": preview_bundle(body.get("data") or {}, rough, self.limits), "metadata": {}}
        return {k: v for k, v in body.items() if not isinstance(v, (str, list, dict)) or k in ("status", "ename")}


def install(max_bytes: int, run_bytes: int, run_count: int, language: str) -> None:
    """Cap the outputs of the client session that sent this request (idempotent: a second call
    updates the limits and adds its session)."""
    from IPython import get_ipython

    kernel = getattr(get_ipython(), "kernel", None)
    if kernel is None:  # not an ipykernel (a plain IPython shell): nothing is sent anywhere
        return
    session, publisher = kernel.session, get_ipython().display_pub
    limits = OutputLimits(max_bytes, run_bytes, run_count, language)
    cap = getattr(session, "_nini_output_cap", None)
    if cap is None:
        cap = _OutputCap(session.send, limits)
        session._nini_output_cap = cap
        session.send = cap.send
        publisher.publish = cap.publishing(publisher.publish, publisher)
    cap.limits = limits
    owner = _header(kernel.get_parent("shell")).get("session")
    if owner:
        cap.owners.add(owner)


def dropped_notes() -> list[str]:
    """What the kernel left out of nini's latest run (``output_caps.RunOutputs.notes``), once:
    ``collect`` adds it to the run's warnings."""
    from IPython import get_ipython

    kernel = getattr(get_ipython(), "kernel", None)
    cap = getattr(getattr(kernel, "session", None), "_nini_output_cap", None)
    if cap is None:
        return []
    sys.stdout.flush()  # the run's last prints are still buffered: they count too
    sys.stderr.flush()
    notes: list[str]
    with cap.lock:
        notes, cap.run = cap.run.notes(), RunOutputs(cap.limits)
    return notes


def _header(parent: Any) -> dict[str, Any]:
    if not isinstance(parent, dict):
        return {}
    header = parent.get("header", parent)
    return header if isinstance(header, dict) else {}


def _json_size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, default=str).encode("utf-8", "surrogatepass"))


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []
