"""README's commands work when typed after ``make demo``: the demo runs (its output in a temporary
folder), then every concrete ``nini`` line of README's bash blocks runs exactly as written, through
a shell, from a copy of ``examples/``, with the demo's NINI_HOME as README says to export it.

Synopsis lines (``nini ask "QUESTION" [--data FILE ...]``) are not commands to type: a line with a
placeholder (an upper-case word, ``[``, ``|``) is left out; ``test_docs`` checks their options.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")
PLACEHOLDER = re.compile(r"\[|\||\.\.\.|\b[A-Z][A-Z0-9_]+\b")


def readme_commands() -> list[str]:
    """The ``nini ...`` lines of README's bash blocks that have no placeholder, comments and all."""
    commands: list[str] = []
    for block in re.findall(r"^```bash\n(.*?)^```", README, flags=re.S | re.M):
        for line in block.splitlines():
            command = line.split("  #", 1)[0].strip()
            if command.startswith("nini ") and not PLACEHOLDER.search(command):
                commands.append(line.strip())
    return commands


COMMANDS = readme_commands()


@pytest.fixture(scope="module")
def after_demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, str], Path]:
    """The environment README's export lines give, and the folder the commands are typed in,
    after ``examples/demo.py`` ran to its end."""
    root = tmp_path_factory.mktemp("after-demo")
    env = {k: v for k, v in os.environ.items() if not k.startswith("NINI_")}
    env.update(NINI_DEMO_OUTPUT=str(root / "demo-output"), PATH=f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}")
    demo = subprocess.run([sys.executable, str(REPO / "examples" / "demo.py")], env=env, cwd=REPO,
                          capture_output=True, text=True, timeout=1200)  # fmt: skip
    assert demo.returncode == 0, demo.stdout[-3000:] + demo.stderr[-3000:]
    assert "demo finished" in demo.stdout
    work = root / "work"
    shutil.copytree(REPO / "examples", work / "examples")
    env["NINI_HOME"] = str(root / "demo-output" / "home")  # export NINI_HOME=$PWD/demo-output/home
    del env["NINI_DEMO_OUTPUT"]
    return env, work


def test_readme_shows_the_commands_a_user_types_after_the_demo() -> None:
    assert "nini report --session demo-agent          # the agent's session as a layered report" in COMMANDS
    assert sum(c.startswith("nini report") for c in COMMANDS) >= 5 and len(COMMANDS) >= 10, COMMANDS
    assert "export NINI_HOME=$PWD/demo-output/home" in README


@pytest.mark.parametrize("command", COMMANDS, ids=[c.split("  #")[0].strip() for c in COMMANDS])
def test_a_readme_command_works_after_the_demo(command: str, after_demo: tuple[dict[str, str], Path]) -> None:
    env, work = after_demo
    done = subprocess.run(["bash", "-c", command], env=env, cwd=work, stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=600)  # fmt: skip
    # a command whose comment gives its exit code for a case ("exit 3 if a cell failed") may end so
    documented = {int(code) for code in re.findall(r"# exit (\d) if", command)}
    assert done.returncode in {0, *documented}, f"{command}\nstdout: {done.stdout[-2000:]}\nstderr: {done.stderr[-2000:]}"
    assert "Traceback" not in done.stderr
    if done.returncode == 3:  # the bundled notebook's cell 4 fails on purpose (no cost column)
        assert "1 of 7 cells failed: cell 6 (KeyError)" in done.stderr  # cell 6 of all ten, the 4th code cell
    if command.startswith("nini sessions list"):
        assert {"demo", "demo-agent"} <= set(done.stdout.split()), done.stdout
    if command.startswith("nini report"):  # it names the files it wrote, and they are there
        written = [Path(p) for p in done.stdout.split() if p.endswith((".md", ".html", ".ipynb"))]
        assert written and all((p if p.is_absolute() else work / p).is_file() for p in written), done.stdout
