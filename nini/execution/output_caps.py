"""How big one output of a run may be, and how much output one run keeps (``execution.output_max_mb``,
``execution.run_outputs_max_mb``, ``execution.run_outputs_max_count``).

Both ends of a kernel's wire apply these rules as outputs arrive, one at a time: the kernel,
cooperatively, before a message leaves it (``_output_side``: a 120 MB display becomes a preview
and its size before it is sent), and nini's process again as each message comes in
(``python_runner.absorb``), because agent code can bypass anything in the kernel. Beneath both,
nini's sockets refuse any message larger than ``OutputLimits.frame_bytes`` before it is allocated
(``channel_guard``). So no output enters nini's memory or the store whole.

An output over the cap is kept as its size plus a preview: a stream's text up to the cap, a
display's ``text/plain`` head, for images and HTML only a note naming the size and mime type,
with a marker the user and the model both see. Past the run's budget (bytes or outputs) the
rest is counted, not kept, and the run says how much it left out.

Standard library only: this module is imported inside the kernel.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any

MIB = 1024 * 1024
PREVIEW_CHARS = 2000  # of a display's text/plain kept when the display is over the cap
ERROR_CHARS = 64 * 1024  # an error (value and traceback) larger than this is cut
_ERROR_LINES = 100  # of a cut traceback: the first and last this many lines
FRAME_SLACK = MIB  # what a message carries besides its content (header, parent, metadata), generously
# nini's process accepts a little more than the kernel sends: the kernel's own markers must fit
_HOST_SLACK_BYTES = 64 * 1024
_HOST_SLACK_COUNT = 16

_WORDS = {
    "en": {
        "stream": "\n[nini: this output passed {cap} (execution.output_max_mb): the rest of it is not kept]\n",
        "bundle": "[nini: a {mime} output of {size} is not kept: it is larger than {cap} (execution.output_max_mb)]",
        "budget": "\n[nini: this run's outputs reached {budget} or {count} outputs (execution.run_outputs_max_mb, "
        "execution.run_outputs_max_count): later outputs are not kept]\n",
        "dropped": "{size} of this run's output was not kept ({count} output(s) cut or left out; "
        "execution.output_max_mb = {cap} per output, execution.run_outputs_max_mb = {budget} and "
        "execution.run_outputs_max_count = {max_count} per run)",
        "cut": "[nini: {size} more not kept]",
        "refused": "the kernel sent a message larger than {frame} (execution.output_max_mb = {cap} per output): nini "
        "refused it before reading it and closed its connection to the kernel, so the run ended; {fate}",
    },
    "zh": {
        "stream": "\n[nini：此输出超过 {cap}（execution.output_max_mb），其余部分未保留]\n",
        "bundle": "[nini：一个 {size} 的 {mime} 输出未保留：超过 {cap}（execution.output_max_mb）]",
        "budget": "\n[nini：本次运行的输出已达 {budget} 或 {count} 个（execution.run_outputs_max_mb、"
        "execution.run_outputs_max_count），之后的输出未保留]\n",
        "dropped": "本次运行有 {size} 的输出未保留（{count} 个输出被截断或略去；每个输出上限 "
        "execution.output_max_mb = {cap}，"
        "每次运行上限 execution.run_outputs_max_mb = {budget}、execution.run_outputs_max_count = {max_count}）",
        "cut": "[nini：另有 {size} 未保留]",
        "refused": "内核发送了超过 {frame} 的消息（每个输出上限 execution.output_max_mb = {cap}）：nini 未读取即拒收，"
        "并断开了与该内核的连接，本次运行结束；{fate}",
    },
}


@dataclass(frozen=True)
class OutputLimits:
    """The caps of one run's outputs; ``language`` picks the markers' words (``ui.language``)."""

    max_bytes: int = 4 * MIB
    run_bytes: int = 16 * MIB
    run_count: int = 1000
    language: str = "zh"

    @property
    def frame_bytes(self) -> int:
        """The largest message frame nini's process accepts from a kernel (``ZMQ_MAXMSGSIZE``)."""
        return self.max_bytes + FRAME_SLACK

    def args(self) -> tuple[int, int, int, str]:
        """As the literal arguments of ``_output_side.install`` (``python_runner.kernel_call``)."""
        return self.max_bytes, self.run_bytes, self.run_count, self.language

    def for_host(self) -> OutputLimits:
        """What nini's process enforces again: the same caps, with room for the kernel's markers."""
        return replace(
            self,
            max_bytes=self.max_bytes + _HOST_SLACK_BYTES,
            run_bytes=self.run_bytes + _HOST_SLACK_BYTES,
            run_count=self.run_count + _HOST_SLACK_COUNT,
        )

    def words(self, key: str, **values: Any) -> str:
        return _WORDS["en" if self.language == "en" else "zh"][key].format(
            cap=human_size(self.max_bytes),
            budget=human_size(self.run_bytes),
            max_count=self.run_count,
            frame=human_size(self.frame_bytes),
            **values,
        )


def human_size(size: int) -> str:
    if size >= MIB:
        return f"{size / MIB:.1f} MiB"
    return f"{size / 1024:.1f} KiB" if size >= 1024 else f"{size} B"


def text_size(text: str) -> int:
    """Bytes of ``text`` in UTF-8 (as it travels), without copying it when it is ASCII."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def value_size(value: Any) -> int:
    """About the bytes ``value`` takes in a message: text exactly, anything else as JSON."""
    if isinstance(value, str):
        return text_size(value)
    if isinstance(value, (bytes, bytearray, memoryview)):  # an image before it is encoded (4/3 of it)
        return 4 * -(-len(value) // 3)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return sum(map(text_size, value))
    try:
        return text_size(json.dumps(value, ensure_ascii=False, default=str))
    except (TypeError, ValueError, RecursionError):
        return 0


def head(text: str, size: int) -> str:
    """The longest start of ``text`` that takes at most ``size`` bytes in UTF-8."""
    if size <= 0:
        return ""
    if text.isascii():
        return text[:size]
    return text[:size].encode("utf-8", "surrogatepass")[:size].decode("utf-8", "ignore")


@dataclass
class RunOutputs:
    """What one run may still keep, output by output as they arrive; counts what it dropped.

    Each method returns what to keep of one output (None: nothing); ``pop_notice`` then gives the
    budget marker once, for the caller to show as stderr where the budget ran out.
    """

    limits: OutputLimits = field(default_factory=OutputLimits)
    kept_bytes: int = 0
    kept_count: int = 0
    dropped_bytes: int = 0
    dropped_count: int = 0
    _streams: dict[str, int] = field(default_factory=dict)  # bytes kept per stream name
    _notice: str | None = None
    _over_budget: bool = False

    def stream(self, name: str, text: str, *, new_output: bool) -> str:
        """The part of ``text`` to keep ("" for none): a stream keeps up to the cap, then a marker."""
        size = text_size(text)
        used = self._streams.get(name, 0)
        if used > self.limits.max_bytes or self._full(new_output, 0):  # already cut, or the run is over budget
            self._drop(size, count=False)
            return ""
        room = min(self.limits.max_bytes - used, self.limits.run_bytes - self.kept_bytes)
        if size <= room:
            self._keep(name, size, new_output)
            return text
        kept = head(text, room)
        self._drop(size - text_size(kept), count=False)
        if self.limits.max_bytes - used <= room:  # the stream's own cap: mark it inline, once
            self._streams[name] = self.limits.max_bytes + 1
            kept += self.limits.words("stream")
            self.dropped_count += 1
        else:
            self._budget_reached()
        self._keep(name, text_size(kept), new_output)
        return kept

    def bundle(
        self, data: dict[str, Any], metadata: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]] | None:
        """A display's mime bundle and metadata to keep: whole, as a preview when over the cap, or None."""
        size = sum(value_size(v) for v in data.values())
        metadata = metadata or {}
        if size > self.limits.max_bytes:
            metadata = {"nini": {"not_kept": {"bytes": size, "mime_types": sorted(data)}}}
            data = preview_bundle(data, size, self.limits)
            self._drop(size, count=True)
            size = sum(value_size(v) for v in data.values())
        if self._full(True, size):
            self._drop(size, count=True)
            return None
        self._keep(None, size, True)
        return data, metadata

    def error(self, content: dict[str, Any]) -> dict[str, Any] | None:
        """An error output (``ename``, ``evalue``, ``traceback``) to keep, cut when it is huge, or None."""
        content = cap_error(content, self.limits)
        size = value_size(content.get("evalue", "")) + value_size(content.get("traceback", []))
        if self._full(True, size):
            self._drop(size, count=True)
            return None
        self._keep(None, size, True)
        return content

    @property
    def exhausted(self) -> bool:
        """Whether the run's budget is spent: every later output is left out."""
        return self._over_budget

    def pop_notice(self) -> str | None:
        """The budget marker, once, right after the output that met the budget."""
        notice, self._notice = self._notice, None
        return notice

    def notes(self) -> list[str]:
        """What the run left out, for its stderr (nothing when it kept everything)."""
        if not (self.dropped_bytes or self.dropped_count):
            return []
        return [self.limits.words("dropped", size=human_size(self.dropped_bytes), count=self.dropped_count)]

    def _full(self, new_output: bool, size: int) -> bool:
        full = (
            self._over_budget
            or self.kept_bytes + size > self.limits.run_bytes
            or (new_output and self.kept_count >= self.limits.run_count)
        )
        if full:
            self._budget_reached()
        return full

    def _budget_reached(self) -> None:
        if not self._over_budget:
            self._over_budget = True
            self._notice = self.limits.words("budget", count=self.limits.run_count)

    def _keep(self, name: str | None, size: int, new_output: bool) -> None:
        self.kept_bytes += size
        self.kept_count += int(new_output)
        if name is not None:
            self._streams[name] = self._streams.get(name, 0) + size

    def _drop(self, size: int, *, count: bool) -> None:
        self.dropped_bytes += size
        self.dropped_count += int(count)


def preview_bundle(data: dict[str, Any], size: int, limits: OutputLimits) -> dict[str, str]:
    """What stands for a display over the cap: the head of its text/plain, its size and mime types."""
    plain = data.get("text/plain")
    shown = plain if isinstance(plain, str) else "".join(plain) if isinstance(plain, list) else ""
    note = limits.words("bundle", mime=", ".join(sorted(data)), size=human_size(size))
    start = head(shown, PREVIEW_CHARS)
    return {"text/plain": f"{start}…\n{note}" if start else note}


def cap_error(content: dict[str, Any], limits: OutputLimits) -> dict[str, Any]:
    """An error's content with its value and traceback cut when together they pass ``ERROR_CHARS``."""
    evalue, traceback = content.get("evalue", ""), content.get("traceback", [])
    if not isinstance(evalue, str) or not isinstance(traceback, list):
        return {**content, "evalue": str(evalue)[:PREVIEW_CHARS], "traceback": []}
    if value_size(evalue) + value_size(traceback) <= ERROR_CHARS:
        return content
    lines = [cut_text(str(line), PREVIEW_CHARS, limits) for line in traceback]
    if len(lines) > 2 * _ERROR_LINES:
        left_out = limits.words("cut", size=f"{len(lines) - 2 * _ERROR_LINES} lines")
        lines = [*lines[:_ERROR_LINES], left_out, *lines[-_ERROR_LINES:]]
    return {**content, "evalue": cut_text(evalue, PREVIEW_CHARS, limits), "traceback": lines}


def cut_text(text: str, size: int, limits: OutputLimits) -> str:
    """``text`` if it takes at most ``size`` bytes, else its head and a marker of what was left out."""
    total = text_size(text)
    if total <= size:
        return text
    kept = head(text, size)
    return kept + " " + limits.words("cut", size=human_size(total - text_size(kept)))
