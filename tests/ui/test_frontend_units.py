"""The frontend's own unit tests (ChatModel on a recorded session, EventStream's reconnects), run
with node's test runner by `jlpm test` in jupyter_ext/frontend."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from tests.timeouts import timeout

FRONTEND = REPO_ROOT / "jupyter_ext" / "frontend"
JLPM = Path(sys.executable).with_name("jlpm")


def test_the_frontend_unit_tests_pass() -> None:
    if shutil.which("node") is None:
        pytest.skip("node is not installed, so the frontend is neither built nor tested here")
    if not (FRONTEND / "node_modules" / "typescript").is_dir():
        pytest.skip("the frontend's node packages are not installed (make setup runs jlpm install)")
    env = {**os.environ, "PATH": f"{JLPM.parent}:{os.environ.get('PATH', '')}"}
    done = subprocess.run(
        [str(JLPM), "test"], cwd=FRONTEND, capture_output=True, text=True, timeout=timeout(300), env=env, check=False
    )
    report = done.stdout + done.stderr
    assert done.returncode == 0, report[-4000:]
    counts = {}  # node's summary lines: "# pass 11", "# fail 0"
    for line in report.splitlines():
        words = line.split()
        if len(words) == 3 and words[0] == "#" and words[2].isdigit():
            counts[words[1]] = int(words[2])
    assert counts.get("fail") == 0 and counts.get("pass", 0) >= 10, counts
