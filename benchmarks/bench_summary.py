"""Task-summary cost against one bare tiktoken encode of the same raw result, measured in the same run.

summarize_task_result on raw results of 1k, 100k and 1M tokens (log lines, numbers, Chinese and
English prose), (a) with no model (local extraction) and (b) through a loopback model (the scripted
OpenAI-compatible server of tests/llm_server.py on 127.0.0.1, called over real HTTP) whose answer
is a 6k-token "sentence" with no sentence end, so the binary-search truncation runs every time.
Goal (issue 6): within 2x of one encode of the input. A fixed cost (the HTTP round trip, the
bound search over a 4k-token answer) dominates small inputs, so the goal is judged where the
input is large enough for its encode to matter (100k tokens and up).
"""

from __future__ import annotations

import asyncio
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench_skills import median_time
from goals import goal

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))  # tests.llm_server

SIZES = (1_000, 100_000, 1_000_000)
REPEAT = {1_000: 9, 100_000: 7, 1_000_000: 3}
GOAL_RATIO = 2.0
GOAL_FROM_TOKENS = 100_000
ANSWER_TOKENS = 6_000

PROSE_EN = [
    "Revenue grew 3.5% in Q2 while costs fell by 1.2 million",
    "The model v2.1 converged after 37 epochs with a validation loss of 0.0421",
    "Rows with missing region were dropped, e.g. 17 of them in data.csv",
    "See https://example.com/reports/v1.2/summary.html?id=42 for the full table",
]
PROSE_ZH = [
    "数据清洗完成，共删除 1,234 行重复记录",
    "回归系数为 0.87，p 值小于 0.001，结果显著",
    "华东地区的销售额同比增长 12.5%，高于预期",
]


def realistic_text(n_tokens: int) -> str:
    """About ``n_tokens`` tokens of a mixed task result, cut to exactly that many."""
    from nini import tokens

    rng = random.Random(n_tokens)
    lines = []
    approx = 0
    while approx < n_tokens * 1.1:
        kind = rng.random()
        if kind < 0.5:
            line = (
                f"2024-06-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:"
                f"{rng.randint(0, 59):02d} INFO step={rng.randint(1, 9999)} loss={rng.random():.4f} "
                f"rows={rng.randint(100, 99999)} file=part-{rng.randint(0, 99):02d}.parquet"
            )
        elif kind < 0.8:
            line = rng.choice(PROSE_EN) + ". " + rng.choice(PROSE_EN) + "."
        else:
            line = rng.choice(PROSE_ZH) + "。" + rng.choice(PROSE_ZH) + "。"
        lines.append(line)
        approx += len(line) // 3
    ids = tokens.encode("\n".join(lines))
    return tokens.decode(ids[:n_tokens])


async def median_time_async(action, repeat: int) -> float:
    """``median_time`` for a coroutine function, awaited on the running loop."""
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        await action()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


async def measure(texts: dict[int, str]) -> list[tuple[int, str, float, float, str]]:
    from nini import tokens
    from nini.agent.llm import ModelRouter
    from nini.agent.summary import summarize_task_result
    from nini.config import LLMSettings, ProviderSettings
    from tests.llm_server import ScriptedLLM, text

    answer = "ok" + " ok" * (ANSWER_TOKENS - 1)  # one "sentence", no end: truncated to 4096 tokens
    rows = []
    with ScriptedLLM() as server:
        provider = ProviderSettings(name="loopback", kind="openai", base_url=server.base_url, model="m")
        router = ModelRouter(LLMSettings(providers=[provider], max_retries=0))
        try:
            for n, raw in texts.items():
                repeat = REPEAT[n]
                encode = median_time(lambda raw=raw: tokens.encode(raw), repeat)

                async def local(raw: str = raw) -> None:
                    result = await summarize_task_result("task:general", raw, is_error=False)
                    assert result.fallback_used == "local" and result.summary_tokens <= 4096

                async def loopback(raw: str = raw) -> None:
                    server.reply(text(answer))
                    result = await summarize_task_result("task:general", raw, is_error=False, llm=router)
                    assert result.fallback_used == "none" and result.truncated and result.summary_tokens <= 4096

                await local()  # warm-up: thread pool, SDK client, connection
                await loopback()
                rows.append((n, "local (no model)", encode, await median_time_async(local, repeat), ""))
                rows.append((n, "loopback model, truncated", encode, await median_time_async(loopback, repeat), ""))
        finally:
            await router.aclose()
    return rows


def main() -> int:
    with tempfile.TemporaryDirectory() as home:
        os.environ.setdefault("NINI_HOME", home)  # the tokenizer cache is seeded here, not in ~/.nini
        from nini import tokens

        tokens.encoding()
        texts = {n: realistic_text(n) for n in SIZES}
        started = time.perf_counter()
        rows = asyncio.run(measure(texts))
        total = time.perf_counter() - started
    print(f"bench_summary: summarize_task_result vs one bare encode() of the raw result (median; {total:.1f} s)")
    print(f"  {'tokens':>9}  {'path':<26} {'encode ms':>10} {'summary ms':>11} {'ratio':>7}  goal <= {GOAL_RATIO:.0f}x")
    for n, path, encode, summary, _ in rows:
        ratio = summary / encode
        verdict = (
            ("met" if ratio <= GOAL_RATIO else "MISSED") if n >= GOAL_FROM_TOKENS else "n/a (fixed cost dominates)"
        )
        print(f"  {n:>9,}  {path:<26} {encode * 1000:10.2f} {summary * 1000:11.2f} {ratio:6.2f}x  {verdict}")
        if n >= GOAL_FROM_TOKENS:
            goal(
                "bench_summary",
                f"{n:,} tokens ({path}) <= {GOAL_RATIO:.0f}x one encode",
                f"{ratio:.2f}x",
                ratio <= GOAL_RATIO,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
