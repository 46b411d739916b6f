"""Preferences: selecting a prompt's block among 100,000 stored preferences, and learning from
10,000 feedback events.

(a) ``select_memory_for_injection`` (Top-8, 400-token budget, report skill type, a project with its
own rows) against 100,000 rows in the SQLite history file, as a ratio to a bare indexed query of the
same top rows (sqlite3, the global and the project's ``confidence >= floor ORDER BY confidence DESC LIMIT
16``) measured in the same run. Goal (issue 21): under 20 ms.
(b) ``ingest`` of 10,000 feedback events (each its own transaction: a signal's rule up, the run's
injected preferences moved), as a ratio to 10,000 bare INSERTs of the feedback rows, one transaction
each, on the same file.
"""

from __future__ import annotations

import os
import random
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

from bench_skills import median_time
from goals import goal

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

ROWS = 100_000
EVENTS = 10_000
GOAL_MS = 20


def fill(store, rng: random.Random) -> None:  # noqa: ANN001
    from nini.history.schema import user_preferences

    prefixes = ["tone", "verbosity", "report.decimals", "chart.style", "custom.rule", "punctuation.no_exclamation"]
    rows = []
    for i in range(ROWS):
        project = None if i % 10 == 0 else f"project-{i % 500}"
        rows.append(
            {
                "project_id": project,
                "key": f"{rng.choice(prefixes)}.{i}",
                "value": i % 7,
                "source": rng.choice(["explicit", "implicit"]),
                "confidence": round(rng.random(), 4),
                "evidence_count": rng.randint(0, 9),
                "updated_at": 1_700_000_000_000 + i,
            }
        )
    with store.writing() as conn:
        conn.execute(user_preferences.insert(), rows)


def main() -> int:
    import logging

    logging.disable(logging.INFO)
    with tempfile.TemporaryDirectory() as tmp:
        os.environ.setdefault("NINI_HOME", str(Path(tmp) / "home"))
        from nini.history.store import HistoryStore
        from nini.memory.preferences.inject import select_memory_for_injection
        from nini.memory.preferences.learning import Feedback, ingest
        from nini.tokens import encoding

        encoding()
        path = Path(tmp) / "nini.db"
        store = HistoryStore(f"sqlite:///{path}")
        try:
            fill(store, random.Random(0))
            bare_db = sqlite3.connect(path)
            # the rows are the unnamed user's (owner NULL), as select_memory_for_injection reads them
            columns = (
                "SELECT id, project_id, key, value, source, confidence FROM user_preferences "
                "WHERE owner IS NULL AND confidence >= 0.6 AND "
            )
            global_top = columns + "project_id IS NULL ORDER BY confidence DESC LIMIT 16"
            project_top = columns + "project_id = ? ORDER BY confidence DESC LIMIT 16"

            def bare_query() -> None:  # the same top rows, global and the project's, straight from the index
                bare_db.execute(global_top).fetchall()
                bare_db.execute(project_top, ("project-7",)).fetchall()

            bare = median_time(bare_query, 51)
            select = median_time(lambda: select_memory_for_injection(store, "project-7", "report", 8, 400), 51)
            block = select_memory_for_injection(store, "project-7", "report", 8, 400).block
            print(
                f"bench_prefs (a): the block for a report prompt among {ROWS:,} preferences "
                f"({len(block.splitlines()) - 3} lines)"
            )
            print(f"  bare indexed queries (top 16)   {bare * 1000:8.3f} ms   1.00x")
            print(
                f"  select_memory_for_injection     {select * 1000:8.3f} ms  {select / bare:6.1f}x  "
                f" goal < {GOAL_MS} ms: "
                f"{'met' if select * 1000 < GOAL_MS else 'MISSED'}"
            )
            goal("bench_prefs", f"preference block < {GOAL_MS} ms", f"{select * 1000:.3f} ms", select * 1000 < GOAL_MS)

            rng = random.Random(1)
            signals = [
                "no_exclamation",
                "concise",
                "formal",
                "fewer_decimals",
                "minimal_charts",
                "no_emoji",
                "detailed",
            ]
            started = time.perf_counter()
            for n in range(EVENTS):
                ingest(
                    store,
                    Feedback(
                        f"t{n}",
                        rng.choice(["accept", "reject", "partial"]),
                        "answer",
                        "project-7",
                        [rng.choice(signals)],
                        {"section": n % 9},
                        [rng.randint(1, ROWS)],
                    ),
                )
            learned = time.perf_counter() - started
            started = time.perf_counter()
            for n in range(EVENTS):
                with bare_db:
                    bare_db.execute(
                        "INSERT INTO skill_run_feedback (run_id, project_id, skill_id, action, "
                        "signals, evidence_ref, created_at) "
                        "VALUES (?, ?, 'answer', 'accept', '[]', '{}', 0)",
                        (f"b{n}", "project-7"),
                    )
            inserts = time.perf_counter() - started
            bare_db.close()
            print(f"bench_prefs (b): {EVENTS:,} feedback events, one transaction each")
            print(
                f"  bare INSERTs                    {inserts:8.2f} s    1.00x  ({inserts / EVENTS * 1e6:.0f} us each)"
            )
            print(
                f"  ingest (record + learn)         {learned:8.2f} s   {learned / inserts:5.1f}x  "
                f"({learned / EVENTS * 1e6:.0f} us each)"
            )
        finally:
            store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
