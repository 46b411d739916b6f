"""Skills discovery speed: cold scan, unchanged refresh and one-edit refresh over 1,000 skills.

Goals (issue 2): cold scan under 0.5 s, unchanged refresh under 20 ms. Baselines measured in the
same run: the bare cost of reading and YAML-parsing every SKILL.md (the floor for a cold scan)
and the cold scan itself (what a refresh would cost without the fingerprint).
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

import yaml
from goals import goal

from nini.config import load_settings
from nini.skills import SkillRegistry
from nini.skills.discovery import SkillRoot

N_SKILLS = 1_000
REPEAT = 7
COLD_GOAL_S = 0.5
UNCHANGED_GOAL_S = 0.020

CATEGORIES = ["data", "stats", "viz", "report", "workflow", "utility"]


def make_skills(root: Path, count: int) -> None:
    for i in range(count):
        folder = root / f"group-{i % 20:02d}" / f"skill-{i:04d}"
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_text(
            "---\n"
            f"name: skill-{i:04d}\n"
            f"description: Analyse dataset number {i}, clean it, summarise it and chart the result.\n"
            f"category: {CATEGORIES[i % len(CATEGORIES)]}\n"
            "license: MIT\n"
            "---\n\n"
            f"# Skill {i}\n\n## 适用场景\n\n- Tables with a date column.\n\n## 步骤\n\n"
            + "".join(f"{n}. Step {n} of the procedure, with parameters.\n" for n in range(1, 12))
            + "\n## 注意事项\n\n- Keep the raw data unchanged.\n",
            encoding="utf-8",
        )


def median_time(action, repeat: int = REPEAT) -> float:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        action()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def bare_read_and_parse(files: list[Path]) -> None:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    for path in files:
        text = path.read_text(encoding="utf-8")
        yaml.load(text.split("---", 2)[1], Loader=loader)


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        skills_dir, home = Path(tmp) / "skills", Path(tmp) / "home"
        make_skills(skills_dir, N_SKILLS)
        settings = load_settings(home=home)
        roots = [SkillRoot("user", skills_dir)]
        files = sorted(skills_dir.rglob("SKILL.md"))

        baseline = median_time(lambda: bare_read_and_parse(files))
        cold = median_time(lambda: SkillRegistry(settings, roots=roots, function_skills=[]))
        registry = SkillRegistry(settings, roots=roots, function_skills=[])
        assert len(registry.list()) == N_SKILLS
        unchanged = median_time(registry.refresh, repeat=50)

        edits = [0]

        def edit_and_refresh() -> None:
            edits[0] += 1
            target = files[edits[0] % len(files)]
            target.write_text(target.read_text(encoding="utf-8").replace("Analyse", "Analyze", 1), encoding="utf-8")
            assert registry.refresh()

        edited = median_time(edit_and_refresh)

    print(f"bench_skills: {N_SKILLS} markdown skills, median of {REPEAT} runs (unchanged refresh: 50)")
    print(f"  baseline: bare read + YAML parse of every file  {baseline * 1000:8.1f} ms")
    print(
        f"  cold scan (registry build + snapshot)           {cold * 1000:8.1f} ms  "
        f"{cold / baseline:5.2f}x baseline   goal < {COLD_GOAL_S * 1000:.0f} ms: "
        f"{'met' if cold < COLD_GOAL_S else 'MISSED'}"
    )
    print(
        f"  refresh, nothing changed                        {unchanged * 1000:8.2f} ms  "
        f"{unchanged / cold:6.3f}x cold scan   goal < {UNCHANGED_GOAL_S * 1000:.0f} ms: "
        f"{'met' if unchanged < UNCHANGED_GOAL_S else 'MISSED'}"
    )
    goal("bench_skills", f"cold scan < {COLD_GOAL_S * 1000:.0f} ms", f"{cold * 1000:.1f} ms", cold < COLD_GOAL_S)
    what = f"unchanged refresh < {UNCHANGED_GOAL_S * 1000:.0f} ms"
    goal("bench_skills", what, f"{unchanged * 1000:.2f} ms", unchanged < UNCHANGED_GOAL_S)
    print(f"  refresh after one edit (incl. the write)        {edited * 1000:8.2f} ms  {edited / cold:6.3f}x cold scan")
    return 0


if __name__ == "__main__":
    sys.exit(main())
