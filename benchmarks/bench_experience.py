"""Experience memory: matching against a large library, and capture on a long conversation.

(a) One request matched against 5,000 INDEX rows (4,000 team, 1,000 project), cold (first match:
parse, embed every row) and warm (the INDEX unchanged: only the request is embedded), as a ratio
to a bare read of the two INDEX files measured in the same run. Goal (issue 20): warm under 100 ms.
(b) Capture plus stage 1 on a 200-message conversation through a loopback model (the scripted
OpenAI-compatible server of tests/llm_server.py on 127.0.0.1, real HTTP) that answers with ten
candidates: signal scan, the model call, stage 1 and the pending file's write, as a ratio to one
bare model call with the same answer (what nini adds around the call it must make).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

from bench_skills import median_time
from bench_summary import median_time_async
from goals import goal

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))  # tests.llm_server

TOPICS = [
    "revenue",
    "region",
    "churn",
    "latency",
    "inventory",
    "refunds",
    "sessions",
    "temperature",
    "claims",
    "orders",
    "margin",
    "signups",
    "tickets",
    "exposure",
    "dosage",
    "yield",
    "defects",
    "returns",
    "traffic",
    "payroll",
]
VERBS = [
    "use the median for",
    "join on the new table for",
    "exclude test accounts from",
    "winsorize",
    "log-transform",
    "deduplicate",
    "weight by population for",
    "use a left join for",
    "bucket by week for",
    "cap outliers in",
]
GOAL_MS = 100


def rows(n: int, rng: random.Random, level: str) -> list:
    from nini.memory.experience.model import IndexRow

    made = []
    for i in range(1, n + 1):
        topic, verb = rng.choice(TOPICS), rng.choice(VERBS)
        folder = "knowledge/" if level == "team" else ""
        made.append(
            IndexRow(
                tag=f"#{rng.choice(['analysis', 'report', 'review', 'init'])} #{topic}",
                type=rng.choice(["standard", "knowledge"]),
                title=f"{verb} {topic} {i}",
                trigger=f"{topic} by {rng.choice(TOPICS)}",
                surface_signal=f"{topic} column skewed",
                hidden_risk=f"{topic} totals drift",
                status=rng.choice(["active"] * 9 + ["deprecated"]),
                scope=rng.choice(["narrow", "medium", "broad"]),
                strength=rng.choice(["hypothesis", "validated", "enforced"]),
                replaces="",
                replaced_by="",
                file=f"{folder}EXP-{i:04d}.md",
            )
        )
    return made


def bench_match(root: Path) -> None:
    from nini.memory.experience.index import ParsedIndex, render_index
    from nini.memory.experience.match import Matcher, libraries

    rng = random.Random(0)
    libs = libraries(root / "team", root / "project")
    for level, count in (("team", 4000), ("project", 1000)):
        libs[level].root.mkdir(parents=True, exist_ok=True)
        libs[level].index_path.write_text(render_index(ParsedIndex(rows=rows(count, rng, level)), level))
    request, datasets = "What is the typical revenue by region this quarter?", "sales: region, revenue, orders"

    def bare_read() -> None:
        for library in libs.values():
            library.index_path.read_text(encoding="utf-8")

    read = median_time(bare_read, 21)
    started = time.perf_counter()
    matcher = Matcher()
    found = matcher.match(libs, request, "analysis", datasets=datasets)
    cold = time.perf_counter() - started
    warm = median_time(lambda: matcher.match(libs, request, "analysis", datasets=datasets), 21)
    print(
        f"bench_experience (a): one request against 5,000 INDEX rows ({len(found)} matches: "
        f"{', '.join(m.row.title for m in found[:2])}, ...)"
    )
    print(f"  bare read of both INDEX files  {read * 1000:8.2f} ms   1.00x")
    print(f"  match, cold (parse + embed)    {cold * 1000:8.2f} ms  {cold / read:6.1f}x")
    print(
        f"  match, warm                    {warm * 1000:8.2f} ms  {warm / read:6.1f}x   goal < "
        f"{GOAL_MS} ms: {'met' if warm * 1000 < GOAL_MS else 'MISSED'}"
    )
    goal("bench_experience", f"warm match < {GOAL_MS} ms", f"{warm * 1000:.2f} ms", warm * 1000 < GOAL_MS)


async def bench_capture(root: Path) -> None:
    from nini.agent.llm import ModelRouter
    from nini.config import LLMSettings, ProviderSettings, load_settings
    from nini.memory.experience import ExperienceMemory
    from tests.llm_server import ScriptedLLM, text

    rng = random.Random(1)
    conversation = []
    for i in range(100):
        conversation.append(
            {"role": "assistant", "content": f"The mean {rng.choice(TOPICS)} is {rng.randint(1, 999)}; " * 5}
        )
        said = (
            f"No, {rng.choice(VERBS)} {rng.choice(TOPICS)}, the column has outliers"
            if i % 4 == 0
            else f"What about {rng.choice(TOPICS)} in week {i}?"
        )
        conversation.append({"role": "user", "content": said})
    answer = json.dumps(
        {
            "candidates": [
                {
                    "title": f"Median for {t}",
                    "decision": f"use the median of {t}",
                    "alternatives": ["the mean"],
                    "signal": f"the {t} column has outliers",
                    "pointers": ["sales"],
                }
                for t in TOPICS[:10]
            ]
        }
    )
    settings = load_settings(home=root / "home")
    with ScriptedLLM() as server:
        router = ModelRouter(
            LLMSettings(
                providers=[ProviderSettings(name="loopback", kind="openai", base_url=server.base_url, model="m")],
                max_retries=0,
            )
        )
        try:

            async def bare() -> None:
                server.reply(text(answer))
                await router.complete("fast", [{"role": "user", "content": "x"}], temperature=0)

            async def capture() -> None:
                project = Path(tempfile.mkdtemp(dir=root))
                server.reply(text(answer))
                result = await ExperienceMemory(settings, project).capture_conversation(
                    router, conversation, session_id="s1", stage="analysis", datasets=["sales"]
                )
                assert len(result.kept) == 10, result.dropped

            await bare()
            await capture()
            bare_s, capture_s = await median_time_async(bare, 9), await median_time_async(capture, 9)
        finally:
            await router.aclose()
    print(
        "bench_experience (b): capture + stage 1 on a 200-message conversation, loopback model answering 10 candidates"
    )
    print(f"  one bare model call            {bare_s * 1000:8.2f} ms   1.00x")
    print(f"  capture + stage 1 + pending    {capture_s * 1000:8.2f} ms  {capture_s / bare_s:6.2f}x")


def main() -> int:
    import logging

    logging.disable(logging.INFO)  # the model client's and stage 1's log lines are not the result
    with tempfile.TemporaryDirectory() as tmp:
        os.environ.setdefault("NINI_HOME", str(Path(tmp) / "home"))
        bench_match(Path(tmp))
        asyncio.run(bench_capture(Path(tmp)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
