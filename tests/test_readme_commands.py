"""The commands README.md and docs/*.md show work when typed after ``make demo``: the demo runs once
(its output in a temporary folder), then every ``nini`` line of each page's bash blocks runs exactly as
written, through a shell, from a copy of ``examples/``, with the demo's NINI_HOME as README says to
export it.

The convention the pages follow (docs/development.md says it too): a ``bash`` block holds commands to
type, a ``text`` block a synopsis (``nini ask "QUESTION" [--data FILE ...]``), which is not run;
``test_docs`` checks that its options are documented. A command that cannot run here says why in its
comment, one of ``# needs a model``, ``# needs a running server``, ``# needs a terminal``, and is left
out: no model is reachable, no server runs and stdin is not a terminal in this test. Other lines of a
bash block (``make``, ``pip``, ``export``) are what this module's fixture does itself.

One test per page's section (``docs/cli.md#Skills``): its commands run in order, in a copy of the demo's
home and folder of its own, so a section may change the record (``nini models add``, ``nini skills
disable``) without changing another's; every failing command of the section is named at once. A command two
pages show (README's ``nini report --session demo-agent`` is also docs/reports.md's) runs once, on the first:
the demo and these commands are the suite's slowest module. So a command shown twice must not depend on what its
section did before it (a page's ``nini models remove X`` removes the X that page added).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.timeouts import timeout

# the demo (minutes on a loaded machine) runs in the first test's setup; a group's commands take up to a few minutes
pytestmark = [pytest.mark.slow, pytest.mark.timeout(timeout(1200))]
REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
NOT_RUN = re.compile(r"#.*\bneeds (?:a model|a running server|a terminal)\b")


def block_commands(text: str) -> list[str]:
    """The ``nini`` lines of ``text``'s bash blocks (a line starting with ``nini``, or a pipe into it),
    comments and all, except those whose comment says what they need that a test does not have."""
    commands: list[str] = []
    for block in re.findall(r"^```bash\n(.*?)^```", text, flags=re.S | re.M):
        for line in block.splitlines():
            command = line.split("  #", 1)[0].strip()
            if (command.startswith("nini ") or " | nini " in command) and not NOT_RUN.search(line):
                commands.append(line.strip())
    return commands


def groups(page: Path) -> dict[str, list[str]]:
    """``page``'s commands by its ``## `` sections (``docs/cli.md#Skills``), in order: a group is a test."""
    name = page.relative_to(REPO).as_posix()
    parts = re.split(r"^## (.+)$", page.read_text(encoding="utf-8"), flags=re.M)
    found = {name: block_commands(parts[0])}
    found.update(
        {f"{name}#{title.strip()}": block_commands(body) for title, body in zip(parts[1::2], parts[2::2], strict=True)}
    )
    return {group: commands for group, commands in found.items() if commands}


GROUPS = {group: commands for page in PAGES for group, commands in groups(page).items()}
COMMANDS = {
    page.relative_to(REPO).as_posix(): [
        c for g, cs in GROUPS.items() if g.split("#")[0] == page.relative_to(REPO).as_posix() for c in cs
    ]
    for page in PAGES
}
RAN: dict[str, str | None] = {}  # each command run so far (without its comment), and why it failed (None: it worked)


@pytest.fixture(scope="module")
def after_demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, str], Path]:
    """The environment README's export lines give, and the demo's output, after ``examples/demo.py``
    ran to its end."""
    root = tmp_path_factory.mktemp("after-demo")
    env = {k: v for k, v in os.environ.items() if not k.startswith("NINI_")}
    env.update(
        NINI_DEMO_OUTPUT=str(root / "demo-output"),
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}",
        LANG="en_US.UTF-8",
    )
    demo = subprocess.run(
        [sys.executable, str(REPO / "examples" / "demo.py")],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout(1200),
    )
    assert demo.returncode == 0, demo.stdout[-3000:] + demo.stderr[-3000:]
    assert "demo finished" in demo.stdout
    del env["NINI_DEMO_OUTPUT"]
    return env, root / "demo-output"


def where_to_type(env: dict[str, str], demo_output: Path, folder: Path) -> dict[str, str]:
    """A folder holding a copy of ``examples/`` and of the demo's output, as the repository's folder
    is after ``make demo``; the environment with NINI_HOME pointing at that copy's home."""
    shutil.copytree(REPO / "examples", folder / "examples")
    shutil.copytree(demo_output, folder / "demo-output", symlinks=True)
    return {**env, "NINI_HOME": str(folder / "demo-output" / "home")}  # export NINI_HOME=$PWD/demo-output/home


def run(command: str, env: dict[str, str], work: Path) -> str | None:
    """Run one documented command as typed; why it failed, or None."""
    done = subprocess.run(
        ["bash", "-c", command],
        env=env,
        cwd=work,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout(600),
    )
    # a command whose comment gives its exit code for a case ("exit 3 if a cell failed") may end so
    documented = {int(code) for code in re.findall(r"# exit (\d) if", command)}
    problems = []
    if done.returncode not in {0, *documented}:
        problems.append(f"exit {done.returncode}")
    if "Traceback" in done.stderr:
        problems.append("a traceback")
    if done.returncode == 3 and "1 of 7 cells failed: cell 6 (KeyError)" not in done.stderr:
        problems.append(
            "not the bundled notebook's failed cell"
        )  # cell 6 of all ten, the 4th code cell: no cost column
    if command.startswith("nini sessions list") and not {"demo", "demo-agent"} <= set(done.stdout.split()):
        problems.append("the demo's sessions are not listed")
    if command.startswith("nini report"):  # it names the files it wrote, and they are there
        written = [Path(p) for p in done.stdout.split() if p.endswith((".md", ".html", ".ipynb"))]
        if not written or not all((p if p.is_absolute() else work / p).is_file() for p in written):
            problems.append("the files it names are not there")
    if not problems:
        return None
    return f"{command}\n  {', '.join(problems)}\n  stdout: {done.stdout[-1500:]}\n  stderr: {done.stderr[-1500:]}"


def test_the_pages_show_the_commands_a_user_types_after_the_demo() -> None:
    readme = COMMANDS["README.md"]
    assert "nini report --session demo-agent          # the agent's session as a layered report" in readme
    assert "export NINI_HOME=$PWD/demo-output/home" in (REPO / "README.md").read_text(encoding="utf-8")
    assert len(COMMANDS["docs/cli.md"]) >= 30, COMMANDS["docs/cli.md"]
    assert sum(c.startswith("nini report") for commands in COMMANDS.values() for c in commands) >= 5
    # the markers leave out only what needs a model, a server or a terminal
    shown = [line for page in PAGES for line in re.findall(r"^nini .*$", page.read_text(encoding="utf-8"), flags=re.M)]
    left_out = [line for line in shown if NOT_RUN.search(line)]
    assert 0 < len(left_out) <= 12, left_out


def test_a_synopsis_is_never_in_a_bash_block() -> None:
    """``nini skills show NAME`` in a bash block would be run and fail obscurely: the convention is checked."""
    placeholder = re.compile(r"\[--|\bQUESTION\b|\b(?:NAME|ID|FILE|DIR|PATH|TEXT|KEY|VALUE)\b(?!=)")
    wrong = [c for commands in COMMANDS.values() for c in commands if placeholder.search(c.split("  #", 1)[0])]
    assert not wrong, wrong


@pytest.mark.parametrize("group", list(GROUPS))
def test_every_command_of_a_page_works_after_the_demo(
    group: str, after_demo: tuple[dict[str, str], Path], tmp_path: Path
) -> None:
    env, demo_output = after_demo
    env = where_to_type(env, demo_output, tmp_path)
    failures = []
    for command in GROUPS[group]:
        typed = " ".join(command.split("  #", 1)[0].split())
        if typed not in RAN:  # a command another page shows too runs once, on the first page
            RAN[typed] = run(command, env, tmp_path)
        failures += [RAN[typed]] if RAN[typed] else []
    assert not failures, f"{len(failures)} of {len(GROUPS[group])} commands of {group} failed:\n\n" + "\n\n".join(
        failures
    )


def test_after_the_demo_ask_needs_a_model_of_ones_own(after_demo: tuple[dict[str, str], Path], tmp_path: Path) -> None:
    """Issue 35: the demo's recorded model was its one `nini ask`'s, not the home's: a later ask with
    that home is NO_MODEL_AVAILABLE (saying how to add one), never the recording's answer."""
    env, demo_output = after_demo
    env = where_to_type(env, demo_output, tmp_path)
    assert "replay" not in (tmp_path / "demo-output" / "home" / "settings.json").read_text(encoding="utf-8")
    done = subprocess.run(
        ["nini", "ask", "anything"],
        env=env,
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout(120),
    )
    assert done.returncode != 0 and "NO_MODEL_AVAILABLE" in done.stderr, done.stdout + done.stderr
    assert "nini models add" in done.stderr and "Traceback" not in done.stderr
    assert "144" not in done.stdout + done.stderr  # the recorded answer: 144 rows, 12 months, 4 regions
