"""The pending file: round trips in its JSON form, keeps a damaged file aside instead of losing it,
and a process killed while writing it leaves a readable file."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from nini.memory.experience.model import Candidate
from nini.memory.experience.pending import PENDING_NAME, PendingFile
from tests.memory.conftest import candidate
from tests.timeouts import timeout

WRITER = """
import sys
from pathlib import Path
from nini.memory.experience.model import Candidate
from nini.memory.experience.pending import PendingFile
pending = PendingFile(Path(sys.argv[1]))
n = 0
while True:
    n += 1
    with pending.change() as state:
        state.candidates = [
            Candidate(decision=f"d{n}-{i}" + "x" * 2000, alternatives=["a"], signal="s") for i in range(50)
        ]
"""


def test_candidates_round_trip_in_the_exp_candidate_form(tmp_path: Path) -> None:
    pending = PendingFile(tmp_path)
    original = candidate(
        task_id="s1", stage="review", pointers=["sales.csv"], level="team", type="standard", used_to_think="mean"
    )
    pending.add([original])
    data = json.loads((tmp_path / PENDING_NAME).read_text())
    assert (
        data["asked"] is False
        and data["candidates"][0]["taskId"] == "s1"
        and data["candidates"][0]["usedToThink"] == "mean"
    )
    assert {
        "taskId",
        "stage",
        "trigger",
        "decision",
        "alternatives",
        "signal",
        "solution",
        "verify",
        "pointers",
        "level",
        "type",
    } <= set(data["candidates"][0])
    assert pending.load().candidates == [original]
    assert Candidate.from_json({"decision": 3, "alternatives": "mean", "signal": None, "unknown": 1}).alternatives == [
        "mean"
    ]


def test_a_damaged_file_is_kept_aside_and_new_candidates_still_land(tmp_path: Path) -> None:
    (tmp_path / PENDING_NAME).write_text('{"candidates": [ {"decision": "half')
    state = PendingFile(tmp_path).add([candidate()])
    assert len(state.candidates) == 1 and "kept as" in state.problems[0]
    [aside] = tmp_path.glob(f"{PENDING_NAME}.damaged-*")
    assert aside.read_text() == '{"candidates": [ {"decision": "half'


def written(folder: Path) -> int:
    """How many times WRITER has written the pending file in ``folder`` (0 before its first)."""
    if not (folder / PENDING_NAME).exists():
        return 0
    candidates = PendingFile(folder).load().candidates
    return int(candidates[0].decision.split("-")[0][1:]) if candidates else 0


def test_a_writer_killed_mid_write_leaves_a_whole_file(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root)}
    for _ in range(5):
        writer = subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path)], env=env)
        deadline = time.monotonic() + timeout(30)
        while written(tmp_path) < 3:  # a poll: killed amid its rewrites, after a few of them
            assert time.monotonic() < deadline and writer.poll() is None, "the writer did not write"
            time.sleep(0.02)
        writer.send_signal(signal.SIGKILL)
        writer.wait()
        state = PendingFile(tmp_path).load()
        assert state.problems == [] and len(state.candidates) == 50
        assert len({c.decision.split("-")[0] for c in state.candidates}) == 1  # all from one write
    assert not list(tmp_path.glob(f"{PENDING_NAME}.damaged-*"))
