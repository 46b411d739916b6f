"""``nini skills ...``: list, inspect, enable, create and check skills."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import typer

from nini.cli._common import handles_errors, print_json, state
from nini.skills import SkillRegistry
from nini.skills.markdown import validate_skill_file
from nini.skills.scaffold import create_skill

app = typer.Typer(help="Function and Markdown skills.", no_args_is_help=True)

SkillType = Literal["function", "markdown"]


def _registry(ctx: typer.Context) -> SkillRegistry:
    cli = state(ctx)
    return SkillRegistry(cli.settings, cli.project_dir)


@app.command("list")
@handles_errors
def list_skills(
    ctx: typer.Context,
    type: Annotated[SkillType | None, typer.Option("--type", help="Only function or only markdown skills.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON array of skill records.")] = False,
) -> None:
    """List every skill, function and Markdown alike."""
    records = _registry(ctx).list(type=type)
    if as_json:
        print_json(records)
        return
    if not records:
        typer.echo("no skills found")
        return
    width = max(len(r["name"]) for r in records)
    typer.echo(f"{'NAME':<{width}}  TYPE      CATEGORY           ENABLED  SOURCE   DESCRIPTION")
    for r in records:
        description = " ".join(r["description"].split())
        description = description if len(description) <= 70 else description[:69] + "…"
        enabled = "yes" if r["enabled"] else "no"
        typer.echo(f"{r['name']:<{width}}  {r['type']:<8}  {r['category']:<17}  {enabled:<7}  "
                   f"{r['metadata'].get('source', ''):<7}  {description}")


@app.command("show")
@handles_errors
def show_skill(ctx: typer.Context, name: str) -> None:
    """Print one skill record as JSON."""
    print_json(_registry(ctx).get(name))


# A function skill and a Markdown skill may share a name; without --type the function skill is meant.
TypeOption = Annotated[
    SkillType | None,
    typer.Option("--type", help="function or markdown: which skill, when one of each kind has NAME."),
]


@app.command("enable")
@handles_errors
def enable(ctx: typer.Context, name: str, type: TypeOption = None) -> None:
    """Enable a skill (persisted in NINI_HOME/skills_state.json)."""
    _registry(ctx).set_enabled(name, True, type=type)
    typer.echo(f"enabled {name}")


@app.command("disable")
@handles_errors
def disable(ctx: typer.Context, name: str, type: TypeOption = None) -> None:
    """Disable a skill (persisted in NINI_HOME/skills_state.json)."""
    _registry(ctx).set_enabled(name, False, type=type)
    typer.echo(f"disabled {name}")


@app.command("snapshot")
@handles_errors
def snapshot(ctx: typer.Context) -> None:
    """Bring SKILLS_SNAPSHOT.md up to date and print its path."""
    registry = _registry(ctx)
    registry.refresh()
    typer.echo(str(registry.write_snapshot()))


@app.command("doctor")
@handles_errors
def doctor(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="Print the problems as a JSON array.")] = False,
) -> None:
    """List skills that were skipped, break a rule, are shadowed or conflict."""
    problems = _registry(ctx).problem_records()
    if as_json:
        print_json([p.to_dict() for p in problems])
        return
    if not problems:
        typer.echo("no problems: every skill loaded")
        return
    errors = sum(1 for p in problems if p.severity == "error")
    typer.echo(f"{len(problems)} problem(s): {errors} skipped, {len(problems) - errors} warning(s)")
    for p in problems:
        where = f"{p.source}:{p.location}" if p.location else p.source or "-"
        typer.echo(f"{p.severity:<7}  {p.kind:<9}  {where}  {p.message}")
        if p.path is not None:
            typer.echo(f"{'':<20}{p.path}")


@app.command("create")
@handles_errors
def create(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="kebab-case, at most 64 characters")],
    description: Annotated[str, typer.Option("--description", "-d", help="What it does and when to use it.")],
    type: Annotated[SkillType, typer.Option("--type", help="markdown (SKILL.md) or function (skill.py + test).")] = "markdown",
    category: Annotated[str, typer.Option("--category", "-c", help="data, statistics, visualization, ...")] = "other",
    directory: Annotated[Path | None, typer.Option("--dir", help="Parent folder; default NINI_HOME/skills.")] = None,
) -> None:
    """Create a new skill that already follows every rule."""
    target = directory if directory is not None else state(ctx).settings.user_skills_dir
    for path in create_skill(name, type=type, description=description, category=category, directory=target):
        typer.echo(f"created {path}")
    _registry(ctx)  # brings the snapshot up to date when the new skill is in a skills root


@app.command("validate")
@handles_errors
def validate(path: Annotated[Path, typer.Argument(help="A SKILL.md file or the folder holding it.")]) -> None:
    """Check a SKILL.md against the Agent Skills rules; exit 1 when it breaks one."""
    errors, warnings = validate_skill_file(path)
    for message in warnings:
        typer.echo(f"warning: {message}")
    for message in errors:
        typer.echo(f"error: {message}")
    if errors:
        raise typer.Exit(1)
    typer.echo(f"ok: {path} is a valid skill")
