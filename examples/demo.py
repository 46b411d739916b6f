"""`make demo`: nini end to end, offline, on bundled data, in a fresh NINI_HOME.

Each step runs the real `nini` command, exactly as a user would type it. The demo's NINI_HOME
(`demo-output/home`) and project (`demo-output/project`) are made anew by each run and kept after
it, so that every command README.md shows works when typed next, with
`export NINI_HOME=$PWD/demo-output/home`. `NINI_DEMO_OUTPUT` puts all of it somewhere else (the
test that runs the demo and then README's commands does so).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

NINI = str(Path(sys.executable).with_name("nini"))
EXAMPLES = Path(__file__).resolve().parent
DEMO_OUTPUT = Path(os.environ.get("NINI_DEMO_OUTPUT") or EXAMPLES.parent / "demo-output").resolve()


def step(title: str, *args: str, env: dict[str, str], cwd: Path, stdin: str | None = None, live: bool = False) -> str:
    print(f"\n== {title}\n$ nini {' '.join(args)}", flush=True)
    if live:  # streamed output: let it reach the terminal as it comes
        if subprocess.run([NINI, *args], env=env, cwd=cwd).returncode != 0:
            sys.exit(f"demo step failed: nini {' '.join(args)}")
        return ""
    if stdin is not None:
        print("".join(f"> {line}\n" for line in stdin.splitlines()), end="")
    result = subprocess.run([NINI, *args], env=env, cwd=cwd, capture_output=True, text=True, input=stdin)
    print(result.stdout.rstrip())
    if result.returncode == 0 and result.stderr.strip():
        print(result.stderr.rstrip())
    if result.returncode != 0:
        print(result.stderr.rstrip(), file=sys.stderr)
        sys.exit(f"demo step failed: nini {' '.join(args)} (exit {result.returncode})")
    return result.stdout


def main() -> None:
    home, project = DEMO_OUTPUT / "home", DEMO_OUTPUT / "project"
    for previous in (home, project):  # the last demo's record: each run starts from nothing
        shutil.rmtree(previous, ignore_errors=True)
    project.mkdir(parents=True)
    with tempfile.TemporaryDirectory(prefix="nini-demo-") as tmp:
        env = {**os.environ, "NINI_HOME": str(home)}
        print(f"NINI_HOME={home} (made anew by each demo, kept after it)")

        step(
            "Create a Markdown skill from the scaffold",
            "skills",
            "create",
            "monthly-sales-summary",
            "--type",
            "markdown",
            "--description",
            "按月汇总销售额，比较各地区的增长并画出趋势图。",
            "--category",
            "statistics",
            env=env,
            cwd=project,
        )
        step(
            "Check it against the Agent Skills rules",
            "skills",
            "validate",
            str(home / "skills" / "monthly-sales-summary"),
            env=env,
            cwd=project,
        )
        step("List every skill (user, project and bundled)", "skills", "list", env=env, cwd=project)
        snapshot = step("Write the skills snapshot", "skills", "snapshot", env=env, cwd=project).strip()
        print(f"\nThe snapshot is at {snapshot}; its first lines:")
        print("".join(Path(snapshot).read_text(encoding="utf-8").splitlines(keepends=True)[:12]).rstrip())
        step("Check the installation", "doctor", env=env, cwd=project)
        analyse(env, project, Path(tmp))
    print(
        "\ndemo finished. To go on with its sessions, skills and settings (README's commands):\n"
        f"  . .venv/bin/activate\n  export NINI_HOME={home}\n  nini report --session demo-agent\n"
        "The demo's agent answered from a recording; for `nini ask` connect a model of yours first:\n"
        "  nini models add ollama --base-url http://127.0.0.1:11434/v1 --model qwen2.5:7b"
    )


def analyse(env: dict[str, str], project: Path, tmp: Path) -> None:
    """A short analysis of the bundled sales data through run_code, exported as a notebook."""
    data, analysis = EXAMPLES / "data" / "sales.csv", EXAMPLES / "analysis"
    step(
        "Load the bundled sales data and summarise revenue by region (Python in a sandboxed kernel)",
        "run-code",
        str(analysis / "01_summary.py"),
        "--session",
        "demo",
        "--new",
        "--data",
        str(data),
        "--dataset",
        "sales",
        "--save-as",
        "region_summary",
        "--label",
        "revenue-by-region",
        env=env,
        cwd=project,
    )
    step(
        "Chart monthly revenue per region (saved as PNG and SVG)",
        "run-code",
        str(analysis / "02_trend.py"),
        "--session",
        "demo",
        "--dataset",
        "sales",
        "--purpose",
        "visualization",
        "--label",
        "monthly-revenue",
        env=env,
        cwd=project,
    )
    analyse_in_r(env, project)
    ask_agent(env, project)
    remember(env, project)
    step("What the sessions recorded", "sessions", "list", env=env, cwd=project)
    notebook = tmp / "demo-session.ipynb"
    step(
        "Export the session as a notebook that re-runs the analysis",
        "sessions",
        "export",
        "demo",
        "--format",
        "ipynb",
        "--out",
        str(notebook),
        env=env,
        cwd=project,
    )
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    print(
        f"{notebook.name}: {len(cells)} cells, "
        f"{sum(1 for c in cells if c['cell_type'] == 'code')} of them code, with their recorded outputs"
    )
    # the report outlives the throwaway NINI_HOME: demo-output/ (git-ignored) keeps it, charts included
    written = step(
        "The layered report of the agent's session (Markdown + HTML)",
        "report",
        "--session",
        "demo-agent",
        "--out",
        str(DEMO_OUTPUT),
        env=env,
        cwd=project,
    ).split()
    markdown = next(Path(p) for p in written if p.endswith(".md"))
    print(
        f"\n{markdown.name}, its sections: "
        + " · ".join(line[3:] for line in markdown.read_text(encoding="utf-8").splitlines() if line.startswith("## "))
    )
    print(f"open it: {markdown.with_suffix('.html')}")


def remember(env: dict[str, str], project: Path) -> None:
    """Experience memory without a model: a judgement stated on purpose goes into the project's
    library on the command line's confirmation; the next run on revenue is warned about it."""
    step(
        "Keep a judgement as project experience (the confirmation given on the command line)",
        "remember",
        "--add",
        "use the median for revenue, the revenue column has a few very large orders",
        "--level",
        "project",
        "--yes",
        env=env,
        cwd=project,
    )
    step("The project's experience library", "experience", "list", env=env, cwd=project)


def analyse_in_r(env: dict[str, str], project: Path) -> None:
    """The same data in R: Python's datasets are R's too (Parquet in the session workspace)."""
    from nini.config import load_settings
    from nini.skills.builtin.run_r import r_status

    usable, why = r_status(load_settings(home=env["NINI_HOME"]))
    if not usable:
        print(f"\n== R steps skipped: {why}")
        return
    step(
        "Model revenue in R and plot the fit with ggplot2 (policy-checked R in a sandboxed worker)",
        "run-r",
        str(EXAMPLES / "analysis" / "03_model.R"),
        "--session",
        "demo",
        "--dataset",
        "sales",
        "--save-as",
        "revenue_model",
        "--label",
        "revenue-model",
        env=env,
        cwd=project,
    )
    step(
        "Read R's model table back in Python",
        "run-code",
        "-",
        "--session",
        "demo",
        env=env,
        cwd=project,
        stdin="model = datasets['revenue_model']\nprint(model.round(3).to_string(index=False))\n",
    )


def ask_agent(env: dict[str, str], project: Path) -> None:
    """A whole agent turn, replayed: no model is reachable offline, so the model's side comes from
    a recorded script (examples/agent/replay.json) through the `replay` provider. Everything else
    is real: the Python and R it asks for run in their sandboxes, the task:explore sub-agent runs
    with its read-only tools, and its long answer reaches the agent as one sentence. With automatic
    skill enhancement on, the run (several tools, datasets saved) qualifies, and after the answer a
    task:skill:enhance sub-agent turns it into a skill: the run ends with its `[Skill] ...` note."""
    provider = {
        "name": "demo-replay",
        "kind": "replay",
        "model": "recorded",
        "script": str(EXAMPLES / "agent" / "replay.json"),
    }
    step(
        "Turn good agent runs into skills automatically (saved in settings.json)",
        "skills",
        "enhance",
        "--on",
        env=env,
        cwd=project,
    )
    # the recorded model is this one command's (NINI_LLM__PROVIDERS), never the home's settings.json:
    # a later `nini ask` with this home must not answer with the demo's recording
    print('\n(the model of the next step: NINI_LLM__PROVIDERS=\'[{"kind": "replay", ...}]\', for that command only)')
    step(
        "Ask the agent (model replies replayed from examples/agent/replay.json)",
        "ask",
        "哪个地区的收入最高？各地区的增长趋势如何？",
        "--data",
        str(EXAMPLES / "data" / "sales.csv"),
        "--session",
        "demo-agent",
        "--new",
        env={**env, "NINI_LLM__PROVIDERS": json.dumps([provider])},
        cwd=project,
        live=True,
    )
    step("The skill that run became", "skills", "show", "regional-revenue-trend", env=env, cwd=project)
    step(
        "The numbers behind that answer, as the run recorded them (datasets saved by Python and R)",
        "run-code",
        "-",
        "--session",
        "demo-agent",
        env=env,
        cwd=project,
        stdin="for name in ('region_revenue', 'region_trend'):\n"
        "    if name in datasets:\n        print(datasets[name].to_string(index=False), end='\\n\\n')\n",
    )


if __name__ == "__main__":
    main()
