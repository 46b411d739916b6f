"""Task-return summaries: one sentence, the model -> local -> final chain, the token bound, the log line."""

from __future__ import annotations

import asyncio
import hashlib
import io
import json
import logging
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from nini import tokens
from nini.agent import summary as summary_module
from nini.agent.llm import Completion, ModelRouter
from nini.agent.summary import (
    FALLBACK_PREFIX,
    TaskSummary,
    bound_tokens,
    first_sentence,
    should_summarize,
    summarize_task_result,
)
from nini.config import AgentSettings, LLMSettings, ProviderSettings
from nini.errors import ErrorCode, NiniError
from nini.logs import JsonLineFormatter
from tests.llm_server import Reply, ScriptedLLM, error, text

EMPTY = FALLBACK_PREFIX + summary_module.REASON_EMPTY
NO_SENTENCE = FALLBACK_PREFIX + summary_module.REASON_NO_SENTENCE
NO_TOKENIZER = FALLBACK_PREFIX + summary_module.REASON_TOKENIZER


def summarize(raw: Any, *, is_error: bool = False, command: str = "task:general", **options: Any) -> TaskSummary:
    return asyncio.run(summarize_task_result(command, raw, is_error=is_error, **options))


def with_router(
    server: ScriptedLLM | None, action: Callable[[ModelRouter], Awaitable[Any]], **llm_settings: Any
) -> Any:
    """Run ``action(router)`` on a fresh loop with a router pointed at ``server`` (no retries)."""
    providers = [ProviderSettings(name="local", kind="openai", base_url=server.base_url, model="m")] if server else []

    async def main() -> Any:
        router = ModelRouter(LLMSettings(providers=providers, max_retries=0, **llm_settings))
        try:
            return await action(router)
        finally:
            await router.aclose()

    return asyncio.run(main())


def summarize_with(server: ScriptedLLM | None, raw: str, *, is_error: bool = False, **options: Any) -> TaskSummary:
    return with_router(
        server, lambda router: summarize_task_result("task:explore", raw, is_error=is_error, llm=router, **options)
    )


def user_prompt(request: dict[str, Any]) -> str:
    return "\n".join(m["content"] for m in request["messages"])


class LogCapture:
    """What the summary logger wrote, formatted as nini writes its log file."""

    def __init__(self) -> None:
        self.stream = io.StringIO()

    @property
    def text(self) -> str:
        return self.stream.getvalue()

    def lines(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.text.splitlines()]


@contextmanager
def summary_log_to(handler: logging.Handler) -> Iterator[None]:
    handler.setFormatter(JsonLineFormatter())
    logger = logging.getLogger("nini.agent.summary")
    old_level = logger.level
    logger.setLevel(logging.INFO)
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)
        handler.close()


@pytest.fixture
def summary_log() -> Iterator[LogCapture]:
    capture = LogCapture()
    with summary_log_to(logging.StreamHandler(capture.stream)):
        yield capture


# -- which commands are summarized ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("task:general", True),
        ("task:explore", True),
        ("task:skill:search", True),
        ("task:skill:enhance", True),
        ("task:anything-new", True),
        ("run_code", False),
        ("run_r_code", False),
        ("read_file", False),
        ("write_file", False),
        ("generate_report", False),
        ("unknown_tool", False),
        ("task", False),
        ("task_general", False),
        ("Task:general", False),
        (" task:general", False),
        ("", False),
    ],
)
def test_should_summarize_exactly_task_commands(name: str, expected: bool) -> None:
    assert should_summarize(name) is expected


# -- the first sentence ---------------------------------------------------------------------------

FIRST_SENTENCES = [
    # (text, expected first sentence)
    ("The mean revenue was 3.14 million. It rose later.", "The mean revenue was 3.14 million."),
    (
        "Upgraded pandas from v1.2 to 2.0.1 without errors. Then ran tests.",
        "Upgraded pandas from v1.2 to 2.0.1 without errors.",
    ),
    ("Saved data.csv and report.v2.html for review. More follows.", "Saved data.csv and report.v2.html for review."),
    (
        "Compared OLS vs. ridge, e.g. on sales, i.e. two fits. Next.",
        "Compared OLS vs. ridge, e.g. on sales, i.e. two fits.",
    ),
    (
        "Dr. Smith checked columns a, b, etc. and found no gaps. Next.",
        "Dr. Smith checked columns a, b, etc. and found no gaps.",
    ),
    (
        "Fetched https://example.com/v1.2/data.csv?x=1.5&y=2 today! Next.",
        "Fetched https://example.com/v1.2/data.csv?x=1.5&y=2 today!",
    ),
    ("See https://example.com/a.b. Then stop.", "See https://example.com/a.b."),
    ("Did the model converge? Yes, after 12 epochs.", "Did the model converge?"),
    ("数据清洗完成，共 1,234 行。第二句不应出现。", "数据清洗完成，共 1,234 行。"),
    ("分析失败！原因未知。", "分析失败！"),
    ("是否继续？是的。", "是否继续？"),
    ("模型 v2.1 在 test.csv 上的准确率为 0.93。Next sentence.", "模型 v2.1 在 test.csv 上的准确率为 0.93。"),
    ("Loaded sales.csv.然后开始分析。", "Loaded sales.csv."),
    (
        "He used pandas 2.0.1 和 R 4.2.0 处理 data.csv，结果 p=0.05。之后。",
        "He used pandas 2.0.1 和 R 4.2.0 处理 data.csv，结果 p=0.05。",
    ),
    ("他说：“完成了。”然后离开。", "他说：“完成了。”"),
    ('She said "done." Then left.', 'She said "done."'),
    ("  Line one\n   continues\there.\n\nSecond.", "Line one continues here."),
    ("[stderr] Warning: column x has 3.5% NaN. Ignored.", "Warning: column x has 3.5% NaN."),
    ("  \n[stderr]\nValueError: bad value. More.", "ValueError: bad value."),
    ("1. Load the data. 2. Clean it.", "1. Load the data."),
    ("... ! Real result here. More.", "Real result here."),
    ("loss=0.25 acc=0.91 epochs=12", "loss=0.25 acc=0.91 epochs=12"),
    ("Ends at the very end.", "Ends at the very end."),
]


@pytest.mark.parametrize(("raw", "expected"), FIRST_SENTENCES)
def test_first_sentence(raw: str, expected: str) -> None:
    assert first_sentence(raw) == (expected, False)


@pytest.mark.parametrize("raw", ["", "   \n\t", "---- ==== ....", "[stderr]", "[stderr]\n  ...  "])
def test_first_sentence_of_nothing(raw: str) -> None:
    assert first_sentence(raw) == ("", False)


def test_first_sentence_reads_only_a_bounded_prefix() -> None:
    text = "word " * 1000 + "end. tail"
    sentence, cut = first_sentence(text, limit_chars=100)
    assert cut and len(sentence) <= 100 and "end" not in sentence
    # a dot right at the edge of what was read is not taken as an end ("3." may go on as "3.14")
    assert first_sentence("the value is 3.14 and more", limit_chars=15) == ("the value is 3.", True)


# -- local path (no model) ------------------------------------------------------------------------


def test_success_result_gives_its_first_sentence() -> None:
    raw = "The dataset has 1,234 rows and revenue grew 3.5% in Q2 (see data.csv). Details follow.\n" * 3
    result = summarize(raw)
    assert result == TaskSummary(
        "The dataset has 1,234 rows and revenue grew 3.5% in Q2 (see data.csv).",
        tokens.count_tokens(raw),
        tokens.count_tokens(result.text),
        False,
        "local",
    )


def test_failure_result_gives_its_first_sentence_without_stderr_marker() -> None:
    raw = (
        '[stderr] Traceback (most recent call last):\n  File "x.py", line 3\nValueError: could '
        "not convert 'abc' to float. Exit 1."
    )
    result = summarize(raw, is_error=True)
    assert result.fallback_used == "local"
    assert (
        result.text
        == "Traceback (most recent call last): File \"x.py\", line 3 ValueError: could not convert 'abc' to float."
    )


def test_chinese_result() -> None:
    result = summarize("任务完成：销售额 v2 版本的均值为 3.14 万元，文件 sales.csv 已更新。其余细节略。")
    assert result.text == "任务完成：销售额 v2 版本的均值为 3.14 万元，文件 sales.csv 已更新。"
    assert result.fallback_used == "local"


@pytest.mark.parametrize("raw", ["", "   \n\t  ", None])
def test_empty_result_gives_the_final_fallback(raw: Any) -> None:
    result = summarize(raw)
    assert (result.text, result.fallback_used, result.truncated) == (EMPTY, "final", False)
    assert result.raw_tokens == tokens.count_tokens(raw or "")
    assert result.summary_tokens == tokens.count_tokens(EMPTY)


@pytest.mark.parametrize("raw", ["---- ==== ....", "[stderr]\n", "!!! ??? ..."])
def test_nothing_to_extract_gives_the_final_fallback(raw: str) -> None:
    result = summarize(raw)
    assert (result.text, result.fallback_used) == (NO_SENTENCE, "final")


def test_fallback_text_is_the_fixed_wording() -> None:
    assert FALLBACK_PREFIX == "[Task摘要失败] 原因: "
    assert EMPTY == "[Task摘要失败] 原因: 任务结果为空"


def test_max_tokens_must_be_positive() -> None:
    with pytest.raises(NiniError) as caught:
        summarize("Hello.", max_tokens=0)
    assert caught.value.code is ErrorCode.INVALID_ARGUMENT


# -- the token bound ------------------------------------------------------------------------------


def ok_words(n: int) -> str:
    """A text of exactly ``n`` tokens and no sentence end ("ok ok ok ...")."""
    value = "ok" + " ok" * (n - 1)
    assert tokens.count_tokens(value) == n
    return value


def test_exactly_4096_tokens_is_not_cut() -> None:
    raw = ok_words(4096)
    result = summarize(raw)
    assert (result.text, result.summary_tokens, result.truncated, result.fallback_used) == (raw, 4096, False, "local")


def test_4097_tokens_is_cut_to_the_longest_prefix_that_fits_with_an_ellipsis() -> None:
    raw = ok_words(4097)
    result = summarize(raw)
    assert result.truncated and result.summary_tokens == tokens.count_tokens(result.text) == 4096
    assert result.text == ok_words(4095) + "…"


MIXED = "数据分析 🎉 v1.2 data.csv 的均值为 3.14159，naïve café Ünïcode — 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 ok!? 結果"


@pytest.mark.parametrize("limit", [1, 2, 3, 5, 8, 13, 21, 34])
def test_bound_is_the_longest_fitting_prefix(limit: int) -> None:
    text = MIXED * 3
    ids = tokens.encode(text)
    result, count, truncated = bound_tokens(text, limit)
    assert truncated and count == tokens.count_tokens(result) <= limit
    assert result.endswith("…") and text.startswith(result[:-1])

    def fits(k: int) -> bool:
        return tokens.count_tokens(tokens.decode(ids[:k]).rstrip() + "…") <= limit

    longest = max(k for k in range(len(ids)) if fits(k))
    assert result == tokens.decode(ids[:longest]).rstrip() + "…"


def test_bound_leaves_fitting_text_alone() -> None:
    assert bound_tokens(MIXED, 4096) == (MIXED, tokens.count_tokens(MIXED), False)


def test_small_max_tokens_bounds_every_step() -> None:
    assert summarize("A fairly long first sentence about revenue in 2024. Second.", max_tokens=5).summary_tokens <= 5
    final = summarize("", max_tokens=5)
    assert final.fallback_used == "final" and final.truncated and tokens.count_tokens(final.text) <= 5


def test_200k_token_result_is_summarized_quickly_and_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    raw = ("step 3.14 of run v1.2 wrote data.csv 数据 " * 25_000) + "The end. "
    encode_lengths: list[int] = []
    real_encode = tokens.encode

    def spy(text: str) -> list[int]:
        encode_lengths.append(len(text))
        return real_encode(text)

    raw_tokens = len(real_encode(raw))
    assert raw_tokens >= 200_000
    monkeypatch.setattr(tokens, "encode", spy)
    result = summarize(raw)  # how fast: benchmarks/bench_summary.py
    assert result.raw_tokens == raw_tokens and result.fallback_used == "local"
    assert result.truncated and result.text.endswith("…") and result.summary_tokens <= 4096
    assert "The end" not in result.text  # the sentence end lies past the bounded prefix
    # the raw text is encoded once; everything else only sees bounded pieces
    assert encode_lengths.count(len(raw)) == 1
    assert max(n for n in encode_lengths if n != len(raw)) <= 4096 * summary_module.CHARS_PER_TOKEN_READ + 1


# -- tokenizer failure ----------------------------------------------------------------------------


def broken_encoding() -> Any:
    raise RuntimeError("tokenizer exploded")


def test_count_failure_gives_the_final_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tokens, "encoding", broken_encoding)
    result = summarize("A perfectly good sentence. And another.")
    assert result == TaskSummary(NO_TOKENIZER, -1, -1, False, "final")


def test_count_failure_is_bounded_without_a_tokenizer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tokens, "encoding", broken_encoding)
    result = summarize("A perfectly good sentence.", max_tokens=12)
    monkeypatch.undo()
    assert result.fallback_used == "final" and result.truncated
    assert len(result.text.encode()) <= 12 and tokens.count_tokens(result.text) <= 12
    assert result.text.startswith("[Task")


def test_count_failure_after_the_raw_count_still_falls_back(monkeypatch: pytest.MonkeyPatch) -> None:
    real_encode = tokens.encode
    calls = []

    def first_call_only(text: str) -> list[int]:
        calls.append(text)
        if len(calls) > 1:
            raise MemoryError("no more")
        return real_encode(text)

    monkeypatch.setattr(tokens, "encode", first_call_only)
    result = summarize("A perfectly good sentence. And another.")
    assert (result.text, result.fallback_used, result.summary_tokens) == (NO_TOKENIZER, "final", -1)
    assert result.raw_tokens == len(real_encode("A perfectly good sentence. And another."))


# -- the model path (real HTTP against the scripted server) ---------------------------------------

ANSWER = "The task loaded 1,234 rows from sales.csv and found revenue grew 3.5% in Q2."


def test_model_sentence_is_used_and_the_request_is_a_summarize_call(llm_server: ScriptedLLM) -> None:
    llm_server.reply(text(ANSWER))
    raw = "Step 1 loaded data. Step 2 computed growth. " * 20
    result = summarize_with(llm_server, raw)
    assert result == TaskSummary(ANSWER, tokens.count_tokens(raw), tokens.count_tokens(ANSWER), False, "none")
    [request] = llm_server.requests
    assert request["temperature"] == 0 and 0 < request["max_tokens"] <= 512
    prompt = user_prompt(request)
    assert (
        "task:explore" in prompt
        and "Status: success" in prompt
        and "failure" not in prompt.split("Status:")[1].split("\n")[0]
    )
    assert raw.strip() in prompt


def test_model_is_told_about_a_failure(llm_server: ScriptedLLM) -> None:
    llm_server.reply(text("The task failed with ValueError: bad column."))
    result = summarize_with(llm_server, "[stderr] ValueError: bad column. Exit.", is_error=True)
    assert result.fallback_used == "none"
    assert "Status: failure" in user_prompt(llm_server.requests[0])


def test_multi_sentence_answer_is_cut_to_its_first_sentence(llm_server: ScriptedLLM) -> None:
    llm_server.reply(text("  Revenue rose 3.5% to 1.2M in v2.0 of data.csv.\nAlso, costs fell. Third sentence!"))
    result = summarize_with(llm_server, "whatever raw. text.")
    assert (result.text, result.fallback_used) == ("Revenue rose 3.5% to 1.2M in v2.0 of data.csv.", "none")


def test_chinese_answer(llm_server: ScriptedLLM) -> None:
    llm_server.reply(text("任务成功：共清洗 1,234 行，均值 3.14。另外一句。"))
    assert summarize_with(llm_server, "raw. text.").text == "任务成功：共清洗 1,234 行，均值 3.14。"


@pytest.mark.parametrize(
    ("reply", "llm_error"),
    [
        (error(500, message="boom"), "UPSTREAM_ERROR"),
        (error(429, message="slow down"), "UPSTREAM_ERROR"),
        (text(""), "EMPTY_ANSWER"),
        (text("   \n "), "EMPTY_ANSWER"),
        (text("... !!!"), "NO_SENTENCE"),
    ],
)
def test_model_failures_fall_through_to_local_extraction(
    llm_server: ScriptedLLM, summary_log: LogCapture, reply: Reply, llm_error: str
) -> None:
    llm_server.reply(reply)
    result = summarize_with(llm_server, "Local sentence wins here. Second.")
    assert (result.text, result.fallback_used) == ("Local sentence wins here.", "local")
    assert len(llm_server.requests) == 1
    [line] = summary_log.lines()
    assert line["data"]["llm_error"] == llm_error


def test_model_timeout_falls_through_in_time(llm_server: ScriptedLLM, summary_log: LogCapture) -> None:
    llm_server.reply(Reply(content="Too late.", delay_s=60))  # a timeout that did not hold would get it
    result = summarize_with(llm_server, "Local sentence wins here. Second.", timeout_s=0.5)
    assert (result.text, result.fallback_used) == ("Local sentence wins here.", "local")
    assert summary_log.lines()[0]["data"]["llm_error"] == "TIMEOUT"


def test_settings_summary_timeout_is_the_default(llm_server: ScriptedLLM) -> None:
    llm_server.reply(Reply(content="Too late.", delay_s=60))
    result = summarize_with(llm_server, "Local sentence. Two.", settings=AgentSettings(summary_timeout_s=0.5))
    assert result.fallback_used == "local"


def test_no_model_available_falls_through() -> None:
    result = summarize_with(None, "Local sentence wins here. Second.")
    assert (result.text, result.fallback_used) == ("Local sentence wins here.", "local")


def test_model_failure_and_nothing_local_gives_the_final_fallback(llm_server: ScriptedLLM) -> None:
    llm_server.reply(error(503))
    result = summarize_with(llm_server, "==== ---- ....")
    assert (result.text, result.fallback_used) == (NO_SENTENCE, "final")


def test_empty_result_does_not_call_the_model(llm_server: ScriptedLLM) -> None:
    assert summarize_with(llm_server, "  \n ").text == EMPTY
    assert llm_server.requests == []


def test_count_failure_does_not_call_the_model(llm_server: ScriptedLLM, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tokens, "encoding", broken_encoding)
    assert summarize_with(llm_server, "Good sentence.").text == NO_TOKENIZER
    assert llm_server.requests == []


def test_huge_result_sends_only_a_bounded_head_and_tail(llm_server: ScriptedLLM) -> None:
    llm_server.reply(text(ANSWER))
    raw = "HEAD-MARK first line. " + ("row 3.14 v1.2 data.csv 数据 " * 30_000) + "TAIL-MARK last line."
    result = summarize_with(llm_server, raw)
    assert result.fallback_used == "none" and result.raw_tokens > 200_000
    prompt = user_prompt(llm_server.requests[0])
    assert "HEAD-MARK" in prompt and "TAIL-MARK" in prompt and "tokens omitted" in prompt
    assert tokens.count_tokens(prompt) <= summary_module.PROMPT_HEAD_TOKENS + summary_module.PROMPT_TAIL_TOKENS + 300


def test_over_long_model_answer_is_truncated(llm_server: ScriptedLLM) -> None:
    llm_server.reply(text(ok_words(6000)))
    result = summarize_with(llm_server, "raw. text.")
    assert result.fallback_used == "none" and result.truncated
    assert result.text == ok_words(4095) + "…" and result.summary_tokens == 4096


# -- cancellation ---------------------------------------------------------------------------------


def test_cancelling_during_the_model_call_propagates(llm_server: ScriptedLLM, summary_log: LogCapture) -> None:
    llm_server.reply(Reply(content="Never used.", delay_s=60))  # a cancel that waited for it would not raise

    async def action(router: ModelRouter) -> None:
        task = asyncio.create_task(summarize_task_result("task:general", "Raw. Text.", is_error=False, llm=router))
        while not llm_server.requests:
            await asyncio.sleep(0.01)
        task.cancel()
        await task

    with pytest.raises(asyncio.CancelledError):
        with_router(llm_server, action)
    assert summary_log.text == ""  # a cancelled summary is not a summary


class FakeModel:
    def __init__(self, outcome: BaseException | str) -> None:
        self.outcome = outcome
        self.calls: list[dict[str, Any]] = []

    async def complete(self, purpose: str, messages: list[dict], **options: Any) -> Completion:
        self.calls.append({"purpose": purpose, "messages": messages, **options})
        if isinstance(self.outcome, BaseException):
            raise self.outcome
        return Completion(text=self.outcome)


@pytest.mark.parametrize("outcome", [asyncio.CancelledError(), NiniError(ErrorCode.CANCELED, "run cancelled")])
def test_cancellation_raised_by_the_model_propagates(outcome: BaseException, summary_log: LogCapture) -> None:
    with pytest.raises(type(outcome)):
        summarize("Raw. Text.", llm=FakeModel(outcome))
    assert summary_log.text == ""


@pytest.mark.parametrize(
    "outcome", [RuntimeError("bug"), NiniError(ErrorCode.NO_MODEL_AVAILABLE, "none"), ValueError("x"), TimeoutError()]
)
def test_any_model_exception_falls_through(outcome: BaseException) -> None:
    result = summarize("Local sentence. Two.", llm=FakeModel(outcome))
    assert (result.text, result.fallback_used) == ("Local sentence.", "local")


def test_the_call_asks_for_purpose_summarize() -> None:
    model = FakeModel("Model sentence. Second.")
    result = summarize("Raw. Text.", llm=model, settings=AgentSettings(summary_timeout_s=7))
    assert result.text == "Model sentence."
    [call] = model.calls
    assert (call["purpose"], call["temperature"], call["timeout_s"]) == ("summarize", 0, 7)


# -- the log line ---------------------------------------------------------------------------------


def test_one_log_line_with_the_fields_and_no_raw_text_beyond_the_preview(summary_log: LogCapture) -> None:
    raw = "Opening sentence of the result. " + "filler " * 50 + "HIDDEN-TAIL-MARKER with secrets."
    result = summarize(raw, is_error=True, command="task:skill:search")
    [line] = summary_log.lines()
    data = line["data"]
    assert line["logger"] == "nini.agent.summary" and line["level"] == "INFO"
    assert data["command"] == "task:skill:search" and data["is_error"] is True
    assert (data["raw_tokens"], data["summary_tokens"], data["truncated"], data["fallback_used"]) == (
        result.raw_tokens,
        result.summary_tokens,
        result.truncated,
        result.fallback_used,
    )
    assert data["raw_sha256"] == hashlib.sha256(raw.encode()).hexdigest()
    assert len(data["preview"]) <= 120 and raw.startswith(data["preview"])
    assert len(data["summary_id"]) == 32
    assert "HIDDEN-TAIL-MARKER" not in summary_log.text


def test_preview_off(summary_log: LogCapture) -> None:
    raw = "UNIQUE-OPENING-WORDS of the result. Second."
    summarize(raw, settings=AgentSettings(summary_log_preview=False))
    [line] = summary_log.lines()
    assert "preview" not in line["data"] and "UNIQUE-OPENING" not in summary_log.text
    assert line["data"]["raw_sha256"] == hashlib.sha256(raw.encode()).hexdigest()


def test_final_fallback_logs_its_reason(summary_log: LogCapture) -> None:
    summarize("")
    [line] = summary_log.lines()
    assert line["data"]["fallback_used"] == "final" and line["data"]["reason"] == summary_module.REASON_EMPTY


def test_concurrent_summaries_write_complete_distinct_lines(tmp_path: Any) -> None:
    path = tmp_path / "summary.jsonl"
    raws = [f"Result number {i} has {i * 3.5} rows. " * (1 + i % 7) for i in range(60)]

    async def many(batch: list[str]) -> list[TaskSummary]:
        return await asyncio.gather(
            *(summarize_task_result(f"task:general#{r.split()[2]}", r, is_error=False) for r in batch)
        )

    with summary_log_to(logging.FileHandler(path, encoding="utf-8")):
        results = asyncio.run(many(raws[:30]))  # concurrently on one loop
        # and from six threads at once, each with its own loop
        threads = [threading.Thread(target=lambda i=i: asyncio.run(many(raws[30 + i :: 6]))) for i in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert [r.text for r in results] == [f"Result number {i} has {i * 3.5} rows." for i in range(30)]
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert len(lines) == 60
    assert len({line["data"]["summary_id"] for line in lines}) == 60
    assert {line["data"]["raw_sha256"] for line in lines} == {hashlib.sha256(r.encode()).hexdigest() for r in raws}
    assert {line["data"]["command"] for line in lines} == {f"task:general#{i}" for i in range(60)}
