"""Enhancement trigger cost, against a bare store read of the same rows measured in the same run.

(a) ``evaluate_trigger`` on varied signals (dicts and dataclasses, every profile): P50/P95 per call.
Goal (issue 15): P95 < 0.1 ms.
(b) ``extract_signals`` on a session whose run made 500 tool calls (failures, recoveries, code
runs that saved datasets and charts), after 500 calls of earlier turns that must be ignored, in
a real SQLite store: P50/P95. Goal: < 20 ms.
Baseline: a bare read of the same 500 rows with sqlite3 (one SELECT, rows fetched, no JSON
decoding), the least any extraction must pay. Ratios are printed against its P50.
"""

from __future__ import annotations

import random
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

from goals import goal

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

CALLS = 500
EVALUATIONS = 20_000
READS = 60
TOOLS = ["run_code", "run_r_code", "describe_dataset", "list_datasets", "read_file", "search_skills"]


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[int(len(ordered) * 0.95) - 1]


def bench_evaluate() -> tuple[float, float]:
    from nini.agent.enhance import TriggerSignals, evaluate_trigger

    rng = random.Random(15)
    inputs = []
    for n in range(EVALUATIONS):
        values = {
            "tool_call_count": rng.randint(-2, 40),
            "unique_tool_count": rng.choice([0, 1, 2, "3", 2.5]),
            "has_error_recovered": rng.random() < 0.3,
            "has_write_or_edit": rng.random() < 0.5,
            "user_clarification_count": rng.randint(0, 4),
        }
        signals = values if n % 2 else TriggerSignals(**{k: v for k, v in values.items()})
        inputs.append((signals, rng.choice(["conservative", "neutral", "aggressive"])))
    samples = []
    clock = time.perf_counter_ns
    for signals, profile in inputs:
        started = clock()
        evaluate_trigger(
            auto_enhance_enabled=True, completed_normally=True, session_id="s", signals=signals, profile=profile
        )
        samples.append((clock() - started) / 1e6)
    return percentiles(samples)


def build_session(store: object) -> None:
    rng = random.Random(500)
    store.create_session(session_id="s1")
    for turn, count in (("t-earlier", CALLS), ("t-run", CALLS)):
        for _ in range(count):
            tool = rng.choice(TOOLS)
            call = store.start_tool_call("s1", tool, {"code": "x = 1\n" * 20, "label": "step"}, turn_id=turn)
            failed = rng.random() < 0.1
            result = (
                None
                if failed
                else {
                    "stdout": "ok\n" * 10,
                    "artifacts": ["charts/a.png"] if rng.random() < 0.1 else [],
                    "datasets_saved": ["t"] if rng.random() < 0.05 else [],
                }
            )
            store.finish_tool_call(
                call["id"],
                status="failed" if failed else "succeeded",
                result=result,
                error_code="CODE_ERROR" if failed else None,
                result_summary="ok",
            )


def timed(function: object, repeat: int) -> tuple[float, float]:
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        function()
        samples.append((time.perf_counter() - started) * 1000)
    return percentiles(samples)


def main() -> None:
    from nini.agent.enhance import extract_signals
    from nini.history.store import HistoryStore

    p50, p95 = bench_evaluate()
    print(
        f"evaluate_trigger, {EVALUATIONS} calls: P50 {p50 * 1000:.2f} µs, P95 {p95 * 1000:.2f} µs "
        f"(goal P95 < 100 µs: {'met' if p95 < 0.1 else 'NOT met'})"
    )
    goal("bench_trigger", "evaluate_trigger P95 < 100 µs", f"{p95 * 1000:.2f} µs", p95 < 0.1)
    with tempfile.TemporaryDirectory() as tmp:
        database = Path(tmp) / "nini.db"
        store = HistoryStore(f"sqlite:///{database}")
        try:
            build_session(store)
            signals = extract_signals(store, "s1", "t-run")
            assert signals.tool_call_count == CALLS, signals
            raw = sqlite3.connect(database)
            query = "SELECT * FROM tool_calls WHERE session_id = ? AND turn_id = ? ORDER BY started_at, id"

            def bare() -> None:
                assert len(raw.execute(query, ("s1", "t-run")).fetchall()) == CALLS

            for _ in range(5):  # warm both paths
                bare()
                extract_signals(store, "s1", "t-run")
            base50, base95 = timed(bare, READS)
            api50, api95 = timed(lambda: store.list_tool_calls("s1", turn_id="t-run"), READS)
            ext50, ext95 = timed(lambda: extract_signals(store, "s1", "t-run"), READS)
            raw.close()
        finally:
            store.close()
    print(f"bare sqlite3 read of the run's {CALLS} rows (baseline): P50 {base50:.2f} ms, P95 {base95:.2f} ms")
    print(
        f"store.list_tool_calls of the same rows: P50 {api50:.2f} ms, P95 {api95:.2f} ms "
        f"({api50 / base50:.1f}x the bare read)"
    )
    print(
        f"extract_signals from the {CALLS}-call run (after {CALLS} calls of earlier turns): P50 {ext50:.2f} ms, "
        f"P95 {ext95:.2f} ms ({ext50 / base50:.1f}x the bare read; goal < 20 ms: {'met' if ext95 < 20 else 'NOT met'})"
    )
    goal("bench_trigger", "extract_signals P95 < 20 ms", f"{ext95:.2f} ms", ext95 < 20)
    print(f"evaluate_trigger P50 is {p50 / base50:.5f}x the bare read ({base50 / p50:,.0f} evaluations per read)")
    print(f"signals: {signals}")


if __name__ == "__main__":
    main()
