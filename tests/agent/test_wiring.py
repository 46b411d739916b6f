"""The runtime wires the agent (issue 37): the task:* skills join every registry it builds, while
``nini.skills`` alone loads no module of the agent; the runner's hooks and sections are the runtime's."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from nini.cli import app
from nini.config import Settings, load_settings
from nini.runtime import Runtime
from nini.skills.registry import SkillRegistry

TASKS = {"task:general", "task:explore", "task:skill:search", "task:skill:enhance"}

# builds a registry with its default skills, then names every module of the agent (or the runtime) loaded
ONLY_SKILLS = """
import sys
from nini.config import load_settings
from nini.skills.registry import SkillRegistry
import nini.skills.builtin
registry = SkillRegistry(load_settings(), None)
print(sorted(r["name"] for r in registry.list(type="function")))
print(sorted(m for m in sys.modules if m.startswith("nini.agent") or m == "nini.runtime"))
"""


def tasks_in(registry: SkillRegistry) -> set[str]:
    return {r["name"] for r in registry.list(type="function")} & TASKS


def test_the_skills_package_alone_loads_no_agent_module(nini_home: Path) -> None:
    env = {**os.environ, "NINI_HOME": str(nini_home)}
    done = subprocess.run([sys.executable, "-c", ONLY_SKILLS], capture_output=True, text=True, env=env, check=False)
    assert done.returncode == 0, done.stderr
    skills, agent_modules = done.stdout.splitlines()
    assert "run_code" in skills and "task:general" not in skills  # the built-ins, no task of the agent
    assert agent_modules == "[]"


def test_every_registry_of_a_runtime_has_the_task_skills(settings: Settings, project_dir: Path) -> None:
    runtime = Runtime(settings, project_dir=project_dir)
    try:
        own, alice = runtime.registry, runtime.registry_for("alice")
        assert alice is not own  # a named user's view of the skills
        assert tasks_in(own) == tasks_in(alice) == TASKS
        runtime.refresh_skills()  # after a change to the skills (enable/disable), every registry re-reads
        assert tasks_in(own) == tasks_in(alice) == TASKS
        assert runtime.registry.function("task:explore").name == "task:explore"
    finally:
        asyncio.run(runtime.aclose())


def test_nini_skills_list_still_lists_the_task_skills(project_dir: Path, nini_home: Path) -> None:
    result = CliRunner().invoke(app, ["--project-dir", str(project_dir), "skills", "list", "--json"])
    assert result.exit_code == 0, result.output
    assert {r["name"] for r in json.loads(result.stdout)} >= TASKS
    # the snapshot the command keeps up to date names them as a runtime's would
    assert "## task:skill:enhance" in load_settings().snapshot_path.read_text(encoding="utf-8")


def test_the_runtime_gives_its_runner_the_hooks_and_sections_in_their_order(
    settings: Settings, project_dir: Path
) -> None:
    async def check() -> None:
        async with Runtime(settings, project_dir=project_dir) as runtime:
            runner = runtime.agent
            assert [hook.__name__ for hook in runner.stop_hooks] == ["enhance", "experience_capture"]
            sections = [section.__name__ for section in runner.prompt_contributors]
            assert sections == ["notebook_section", "experience_section", "preference_section"]
            old = runner.router
            assert old is runtime.router
            await runtime.reload_models()  # the runner follows the runtime to its new router
            assert runner.router is runtime.router is not old

    asyncio.run(check())
