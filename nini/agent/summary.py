"""The one-sentence summary a task:* sub-agent's result becomes before it reaches the parent.

Every task:* return, success or failure, goes through ``summarize_task_result``; only its sentence
enters the parent's history. The sentence comes from the first step of this chain that gives one:

1. the model for purpose ``summarize`` (temperature 0, a short answer, told whether the task
   succeeded), shown a bounded head and tail of the result, never all of it;
2. the first sentence of the result itself (``first_sentence``);
3. the fixed text ``[Task摘要失败] 原因: <reason>``.

Whatever is returned is at most ``max_tokens`` (4096) cl100k_base tokens: a longer sentence is cut
to the longest token prefix that fits with ``…`` appended. Each summary writes one JSON log line
(logger ``nini.agent.summary``) with counts, the sha256 of the raw result and, unless
``agent.summary_log_preview`` is off, a preview of at most 120 characters; never more of the raw text.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import re
import time
import uuid
from dataclasses import dataclass
from typing import Any, Literal

from nini import tokens
from nini.config import AgentSettings
from nini.errors import ErrorCode, NiniError
from nini.skills.toolset import is_task

__all__ = [
    "FALLBACK_PREFIX",
    "TaskSummary",
    "bound_tokens",
    "first_sentence",
    "should_summarize",
    "summarize_task_result",
]

log = logging.getLogger("nini.agent.summary")

FALLBACK_PREFIX = "[Task摘要失败] 原因: "
ELLIPSIS = "…"
REASON_EMPTY = "任务结果为空"
REASON_NO_SENTENCE = "结果中没有可提取的句子"
REASON_TOKENIZER = "无法计算 token 数"

MODEL_MAX_TOKENS = 200  # one sentence; a longer answer is cut to its first sentence anyway
PROMPT_HEAD_TOKENS = 3000  # the model sees this much of the start of the result ...
PROMPT_TAIL_TOKENS = 1000  # ... and of its end (where errors and final numbers tend to be)
PREVIEW_CHARS = 120
# Local extraction reads at most this many characters per allowed token: enough for any sentence
# that could fit the bound (cl100k averages ~4 characters a token), and a 1M-token result costs
# no more than a 4k-token one.
CHARS_PER_TOKEN_READ = 12
# Above this size the one full count of the raw result runs in a worker thread (tiktoken releases
# the GIL), so a huge result does not stall the event loop for the other sessions.
THREAD_COUNT_CHARS = 1_000_000

FallbackUsed = Literal["none", "local", "final"]


@dataclass(frozen=True)
class TaskSummary:
    """A task's result as one sentence.

    ``raw_tokens`` / ``summary_tokens`` are cl100k_base counts (-1 when the tokenizer failed);
    ``truncated`` says the sentence was cut and ends with ``…``; ``fallback_used`` is ``none`` (the
    model's sentence), ``local`` (the result's first sentence) or ``final`` (the fixed failure text).
    """

    text: str
    raw_tokens: int
    summary_tokens: int
    truncated: bool
    fallback_used: FallbackUsed


def should_summarize(command_name: str) -> bool:
    """True exactly for task:* commands; every other tool's output reaches the parent unchanged."""
    return is_task(command_name)


async def summarize_task_result(
    command: str,
    raw_result: str,
    *,
    is_error: bool,
    llm: Any = None,
    max_tokens: int = 4096,
    settings: AgentSettings | None = None,
    timeout_s: float | None = None,
) -> TaskSummary:
    """Summarize a task's raw result in one sentence of at most ``max_tokens`` tokens.

    ``llm`` is a ``ModelRouter`` (anything with its ``complete``); None skips the model. The model
    gets ``timeout_s`` (default ``settings.summary_timeout_s``) in all; its errors, a timeout or an
    empty answer fall through to local extraction. Cancelling the caller is not a failure: the
    ``CancelledError`` (or a ``NiniError(CANCELED)`` from the model) propagates and nothing is logged.
    """
    if max_tokens < 1:
        raise NiniError(ErrorCode.INVALID_ARGUMENT, f"max_tokens must be at least 1, got {max_tokens}")
    settings = settings or AgentSettings()
    timeout = settings.summary_timeout_s if timeout_s is None else timeout_s
    raw = raw_result if isinstance(raw_result, str) else "" if raw_result is None else str(raw_result)
    started = time.monotonic()
    notes: dict[str, str] = {}
    summary = await _summarize(command, raw, is_error, llm, max_tokens, timeout, notes)
    _log_summary(command, raw, is_error, summary, notes, started, settings.summary_log_preview)
    return summary


async def _summarize(
    command: str, raw: str, is_error: bool, llm: Any, max_tokens: int, timeout: float, notes: dict[str, str]
) -> TaskSummary:
    try:
        raw_ids = await asyncio.to_thread(tokens.encode, raw) if len(raw) > THREAD_COUNT_CHARS else tokens.encode(raw)
    except Exception as exc:
        notes["tokenizer_error"] = type(exc).__name__
        return _final(REASON_TOKENIZER, -1, max_tokens, notes)
    raw_tokens = len(raw_ids)
    if not raw.strip():
        return _final(REASON_EMPTY, raw_tokens, max_tokens, notes)

    source: FallbackUsed = "none"
    read_chars = max_tokens * CHARS_PER_TOKEN_READ
    sentence, cut = "", False
    if llm is not None:
        sentence, cut = await _ask_model(llm, command, raw, raw_ids, is_error, timeout, read_chars, notes)
    if not sentence:  # only now read the result itself (a bounded prefix of it)
        source = "local"
        sentence, cut = _sentence(raw, read_chars)
    if not sentence:
        return _final(REASON_NO_SENTENCE, raw_tokens, max_tokens, notes)
    try:
        text, count, truncated = bound_tokens(sentence, max_tokens)
    except Exception as exc:
        notes["tokenizer_error"] = type(exc).__name__
        return _final(REASON_TOKENIZER, raw_tokens, max_tokens, notes)
    return TaskSummary(text, raw_tokens, count, truncated or cut, source)


def _sentence(text: str, limit_chars: int) -> tuple[str, bool]:
    """``first_sentence``, with ``…`` appended when it was cut at ``limit_chars``."""
    sentence, cut = first_sentence(text, limit_chars=limit_chars)
    return (sentence + ELLIPSIS if cut else sentence), cut


async def _ask_model(
    llm: Any,
    command: str,
    raw: str,
    raw_ids: list[int],
    is_error: bool,
    timeout: float,
    read_chars: int,
    notes: dict[str, str],
) -> tuple[str, bool]:
    """The model's first sentence and whether it was cut, or ``("", False)`` with ``notes["llm_error"]``."""
    try:
        messages = _prompt(command, raw, raw_ids, is_error)
        # the router applies timeout_s per request; this bounds the whole call, retries included
        async with asyncio.timeout(timeout):
            completion = await llm.complete(
                "summarize", messages, temperature=0, max_tokens=MODEL_MAX_TOKENS, timeout_s=timeout
            )
    except NiniError as exc:
        if exc.code is ErrorCode.CANCELED:
            raise
        notes["llm_error"] = exc.code.value
        return "", False
    except TimeoutError:
        notes["llm_error"] = ErrorCode.TIMEOUT.value
        return "", False
    except Exception as exc:  # a broken provider must not lose the task's result
        notes["llm_error"] = type(exc).__name__
        return "", False
    answer = getattr(completion, "text", None)
    if not isinstance(answer, str) or not answer.strip():
        notes["llm_error"] = "EMPTY_ANSWER"
        return "", False
    # a multi-sentence (or rambling) answer is cut to its first sentence, like a raw result
    sentence, cut = _sentence(answer, read_chars)
    if not sentence:
        notes["llm_error"] = "NO_SENTENCE"
        return "", False
    model = getattr(completion, "model", "")
    if model:
        notes["model"] = f"{getattr(completion, 'provider', '')}/{model}"
    return sentence, cut


def _prompt(command: str, raw: str, raw_ids: list[int], is_error: bool) -> list[dict[str, str]]:
    status = "failure (the task ended with an error)" if is_error else "success"
    if len(raw_ids) <= PROMPT_HEAD_TOKENS + PROMPT_TAIL_TOKENS:
        excerpt, shown = raw, "in full"
    else:
        omitted = len(raw_ids) - PROMPT_HEAD_TOKENS - PROMPT_TAIL_TOKENS
        excerpt = (
            tokens.decode(raw_ids[:PROMPT_HEAD_TOKENS])
            + f"\n[... {omitted} tokens omitted ...]\n"
            + tokens.decode(raw_ids[-PROMPT_TAIL_TOKENS:])
        )
        shown = "its start and its end"
    system = (
        "You write the one-sentence summary a parent agent receives when a sub-agent task returns. "
        "Reply with exactly one sentence in the language the result is mostly written in: whether the "
        "task succeeded or failed, and its key finding or error with the numbers that matter. "
        "No preamble, no list, no markdown."
    )
    user = (
        f"Task: {command[:200]}\nStatus: {status}\nResult ({len(raw_ids)} tokens, shown {shown}):\n<<<\n{excerpt}\n>>>"
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def _final(reason: str, raw_tokens: int, max_tokens: int, notes: dict[str, str]) -> TaskSummary:
    """The fixed failure text, bounded by tokens, or by UTF-8 bytes when the tokenizer fails."""
    notes["reason"] = reason
    text = FALLBACK_PREFIX + reason
    try:
        bounded, count, truncated = bound_tokens(text, max_tokens)
    except Exception as exc:
        notes.setdefault("tokenizer_error", type(exc).__name__)
        # every token is at least one byte, so a text of at most max_tokens bytes is within the bound
        bounded, truncated = _bound_bytes(text, max_tokens)
        count = -1
    return TaskSummary(bounded, raw_tokens, count, truncated, "final")


def bound_tokens(text: str, max_tokens: int) -> tuple[str, int, bool]:
    """``(text, its token count, False)`` when it fits, else the longest fitting prefix plus ``…``.

    The prefix is found by binary search over the token sequence, each step re-counting the
    candidate text (a cut can merge or split tokens at the boundary); the answer is only ever a
    candidate whose count was checked, and it is counted once more at the end.
    """
    ids = tokens.encode(text)
    if len(ids) <= max_tokens:
        return text, len(ids), False

    def candidate(k: int) -> str:
        return tokens.decode(ids[:k]).rstrip() + ELLIPSIS

    def fits(k: int) -> bool:
        return tokens.count_tokens(candidate(k)) <= max_tokens

    # The answer is near max_tokens - 1 (one token for the ellipsis): search a small window there
    # first, and all of [0, hi] only when the window's low end does not fit.
    hi = min(len(ids) - 1, max_tokens)
    lo = max(0, hi - 16)
    if not fits(lo):
        lo = 0
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid - 1
    result = candidate(lo)
    count = tokens.count_tokens(result)
    if count > max_tokens:  # only when even "…" alone does not fit
        result, _ = _bound_bytes(result, max_tokens)
        count = tokens.count_tokens(result)
    return result, count, True


def _bound_bytes(text: str, max_tokens: int) -> tuple[str, bool]:
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= max_tokens:
        return text, False
    room = max_tokens - len(ELLIPSIS.encode())
    if room <= 0:
        return data[:max_tokens].decode("utf-8", "ignore"), True
    return data[:room].decode("utf-8", "ignore").rstrip() + ELLIPSIS, True


# -- the first sentence ---------------------------------------------------------------------------

_END_RUN = re.compile(r"[。！？!?.]+")
_CJK_ENDS = frozenset("。！？")
_CLOSERS = frozenset("\"'”’)]}）】」』》")
_OPENERS = "\"'“‘([{（【「『《"
# "." after these does not end a sentence (so "etc." at a real sentence end does not either)
_ABBREVIATIONS = frozenset(
    "e.g. i.e. etc. vs. cf. approx. dr. mr. mrs. ms. prof. jr. sr. al. fig. eq. inc. ltd.".split()
)
_LIST_MARKER = re.compile(r"\(?(\d{1,3}|[A-Za-z])[.)]")
_STDERR = re.compile(r"\s*\[stderr\]", re.IGNORECASE)


def first_sentence(text: str, *, limit_chars: int = 50_000) -> tuple[str, bool]:
    """The first sentence of ``text`` with whitespace normalised, and whether it was cut short.

    Only the first ``limit_chars`` characters are read. Chinese ``。！？`` end a sentence anywhere;
    English ``.!?`` only before white space, a CJK character or the end, so decimals (3.14),
    versions (v1.2, 2.0.1), file names (data.csv) and URLs do not; nor do "." after an abbreviation
    (e.g., i.e., Dr., etc., vs., ...) or a list marker ("1."). A leading ``[stderr]`` is dropped,
    and a "sentence" without a letter or digit is skipped. When no end is found in what was read
    and the text goes on, that part is the sentence and ``cut`` is True. ``("", False)``: no sentence.
    """
    cut = len(text) > limit_chars
    head = text[:limit_chars]
    stderr = _STDERR.match(head)
    flat = " ".join(head[stderr.end() if stderr else 0 :].split())
    start = 0
    for match in _END_RUN.finditer(flat):
        end = match.end()
        while end < len(flat) and flat[end] in _CLOSERS:
            end += 1
        if not _ends_sentence(flat, match, end, start, cut):
            continue
        sentence = flat[start:end].strip()
        if any(ch.isalnum() for ch in sentence):
            return sentence, False
        start = end
    rest = flat[start:].strip()
    if any(ch.isalnum() for ch in rest):
        return rest, cut
    return "", False


def _ends_sentence(flat: str, match: re.Match[str], end: int, start: int, cut: bool) -> bool:
    if any(ch in _CJK_ENDS for ch in match.group()):
        return True
    if end == len(flat):
        return not cut  # the end of what was read, not of the text: "3." may go on as "3.14"
    following = flat[end]
    if not (following.isspace() or _is_cjk(following)):
        return False
    if match.group() != ".":
        return True
    word = flat[flat.rfind(" ", start, match.start()) + 1 : match.end()].lstrip(_OPENERS).lower()
    if word in _ABBREVIATIONS:
        return False
    return not _LIST_MARKER.fullmatch(flat[start : match.end()].strip())


def _is_cjk(ch: str) -> bool:
    return "\u3000" <= ch <= "\u9fff" or "\uf900" <= ch <= "\uffef"


# -- the log line ---------------------------------------------------------------------------------


def _log_summary(
    command: str,
    raw: str,
    is_error: bool,
    summary: TaskSummary,
    notes: dict[str, str],
    started: float,
    preview: bool,
) -> None:
    # one line per summary: what was summarized (by hash), how, and never more of it than the preview
    data: dict[str, Any] = {
        "summary_id": uuid.uuid4().hex,
        "command": command,
        "is_error": is_error,
        "raw_chars": len(raw),
        "raw_sha256": hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest(),
        "raw_tokens": summary.raw_tokens,
        "summary_tokens": summary.summary_tokens,
        "truncated": summary.truncated,
        "fallback_used": summary.fallback_used,
        "duration_ms": round((time.monotonic() - started) * 1000, 1),
        **notes,
    }
    if preview:
        data["preview"] = " ".join(raw[: PREVIEW_CHARS * 4].split())[:PREVIEW_CHARS]
    log.info("task summary %s (%s)", data["summary_id"], summary.fallback_used, extra={"data": data})
