"""``nini skills ...``: list, inspect, enable, create and check skills, and switch automatic enhancement."""

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer

from nini.cli._common import handles_errors, print_data, print_json, state
from nini.cli._help import examples, group
from nini.cli.terminal import working
from nini.cli.words import say

if TYPE_CHECKING:  # skills (pydantic, the store) load inside commands: `nini --help` stays fast
    from nini.config import Settings
    from nini.skills import SkillRegistry

app = group(
    "Function and Markdown skills.",
    [
        "nini skills list --type markdown",
        "nini skills show data-quality-check",
        'nini skills create revenue-check -d "Check revenue columns before analysis"',
    ],
)

SkillType = Literal["function", "markdown"]


def _registry(ctx: typer.Context) -> "SkillRegistry":
    from nini.agent.tasks import skill_registry  # not nini.runtime's way to it: listing loads no store

    cli = state(ctx)
    return skill_registry(cli.settings, cli.project_dir)


@app.command("list", epilog=examples("nini skills list", "nini skills list --type markdown --json"))
@handles_errors
def list_skills(
    ctx: typer.Context,
    type: Annotated[SkillType | None, typer.Option("--type", help="Only function or only markdown skills.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON array of skill records.")] = False,
) -> None:
    """List every skill, function and Markdown alike; then the skills refused for taking the name of
    one of nini's meta-skills (not in --json, whose array is the skill records)."""
    registry = _registry(ctx)
    records = registry.list(type=type)
    if as_json:
        print_json(records)
        return
    if not records:
        typer.echo(say(ctx, "no_skills"))
        return
    width = max(len(r["name"]) for r in records)
    typer.echo(f"{'NAME':<{width}}  TYPE      CATEGORY           ENABLED  SOURCE   DESCRIPTION")
    for r in records:
        description = " ".join(r["description"].split())
        description = description if len(description) <= 70 else description[:69] + "…"
        enabled = "yes" if r["enabled"] else "no"
        typer.echo(
            f"{r['name']:<{width}}  {r['type']:<8}  {r['category']:<17}  {enabled:<7}  "
            f"{r['metadata'].get('source', ''):<7}  {description}"
        )
    for problem in (p for p in registry.problem_records() if p.kind == "refused"):
        typer.echo(f"refused: {problem.name} ({problem.source}:{problem.location}): {problem.message}")


@app.command("show", epilog=examples("nini skills show data-quality-check", "nini skills show run_code --json"))
@handles_errors
def show_skill(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(metavar="NAME", help="The skill's name (nini skills list).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the skill record as JSON.")] = False,
) -> None:
    """Show one skill: its kind, source, state, description and, for a function skill, its parameters."""
    print_data(_registry(ctx).get(name), as_json, _skill_lines)


def _skill_lines(record: dict[str, Any]) -> list[str]:
    """The record as a person reads it; ``--json`` has all of it (a function skill's whole input schema)."""
    metadata = record.get("metadata") or {}
    lines = [
        f"{record['name']} ({record['type']}, {metadata.get('source', '-')}, "
        f"{'enabled' if record['enabled'] else 'disabled'})",
        f"category:    {record['category']}",
        f"location:    {record['location']}",
        f"description: {' '.join(record['description'].split())}",
    ]
    schema = metadata.get("input_schema") or {}
    required = set(schema.get("required") or [])
    for number, (param, spec) in enumerate((schema.get("properties") or {}).items()):
        kinds = [spec["type"]] if spec.get("type") else [t.get("type", "?") for t in spec.get("anyOf", [])]
        kind = "/".join(k for k in kinds if k != "null") or "any"
        lines.append(
            f"{'parameters:' if number == 0 else '':<13}{param} ({kind}{', required' if param in required else ''})"
            f"{': ' + ' '.join(spec['description'].split()) if spec.get('description') else ''}"
        )
    return lines


# A function skill and a Markdown skill may share a name; without --type the function skill is meant.
TypeOption = Annotated[
    SkillType | None,
    typer.Option("--type", help="function or markdown: which skill, when one of each kind has NAME."),
]


NameArgument = Annotated[str, typer.Argument(metavar="NAME", help="The skill's name (nini skills list).")]


@app.command("enable", epilog=examples("nini skills enable data-quality-check"))
@handles_errors
def enable(ctx: typer.Context, name: NameArgument, type: TypeOption = None) -> None:
    """Enable a skill (persisted in NINI_HOME/skills_state.json)."""
    _registry(ctx).set_enabled(name, True, type=type)
    typer.echo(say(ctx, "enabled", name=name))


@app.command(
    "disable", epilog=examples("nini skills disable data-quality-check", "nini skills disable twin --type markdown")
)
@handles_errors
def disable(ctx: typer.Context, name: NameArgument, type: TypeOption = None) -> None:
    """Disable a skill (persisted in NINI_HOME/skills_state.json)."""
    _registry(ctx).set_enabled(name, False, type=type)
    typer.echo(say(ctx, "disabled", name=name))


@app.command("snapshot", epilog=examples("nini skills snapshot"))
@handles_errors
def snapshot(ctx: typer.Context) -> None:
    """Bring SKILLS_SNAPSHOT.md up to date and print its path."""
    registry = _registry(ctx)
    registry.refresh()
    typer.echo(str(registry.write_snapshot()))


@app.command("doctor", epilog=examples("nini skills doctor", "nini skills doctor --json"))
@handles_errors
def doctor(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="Print the problems as a JSON array.")] = False,
) -> None:
    """List skills that were skipped, break a rule, are shadowed or conflict; exit 1 when one was skipped."""
    problems = _registry(ctx).problem_records()
    errors = sum(1 for p in problems if p.severity == "error")
    if as_json:
        print_json([p.to_dict() for p in problems])
    elif not problems:
        typer.echo(say(ctx, "no_skill_problems"))
    else:
        typer.echo(f"{len(problems)} problem(s): {errors} skipped, {len(problems) - errors} warning(s)")
        for p in problems:
            where = f"{p.source}:{p.location}" if p.location else p.source or "-"
            typer.echo(f"{p.severity:<7}  {p.kind:<9}  {where}  {p.message}")
            if p.path is not None:
                typer.echo(f"{'':<20}{p.path}")
    if errors:
        raise typer.Exit(1)  # a skill that could not load is an error, not a remark


@app.command(
    "create",
    epilog=examples(
        'nini skills create revenue-check -d "Check revenue columns before analysis"',
        'nini skills create margin-calc --type function -d "Compute margins" -c statistics',
    ),
)
@handles_errors
def create(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(metavar="NAME", help="kebab-case, at most 64 characters")],
    description: Annotated[str, typer.Option("--description", "-d", help="What it does and when to use it.")],
    type: Annotated[
        SkillType, typer.Option("--type", help="markdown (SKILL.md) or function (skill.py + test).")
    ] = "markdown",
    category: Annotated[str, typer.Option("--category", "-c", help="data, statistics, visualization, ...")] = "other",
    directory: Annotated[Path | None, typer.Option("--dir", help="Parent folder; default NINI_HOME/skills.")] = None,
) -> None:
    """Create a new skill that already follows every rule."""
    from nini.skills.discovery import standard_roots
    from nini.skills.scaffold import create_skill

    cli = state(ctx)
    target = directory if directory is not None else cli.settings.user_skills_dir
    created = create_skill(
        name,
        type=type,
        description=description,
        category=category,
        directory=target,
        language=cli.settings.ui.current_language,
    )
    for path in created:
        typer.echo(say(ctx, "created", path=path))
    registry = _registry(ctx)  # brings the snapshot up to date when the new skill is in a skills root
    roots = [root.path.resolve() for root in standard_roots(cli.settings, cli.project_dir)]
    if target.resolve() not in roots:
        typer.echo(say(ctx, "skills_dir_unread", folder=target, name=name, resolved=target.resolve()), err=True)
    mine = {Path(path).resolve() for path in created}
    for problem in registry.problem_records():  # the new skill itself hidden by one that ranks higher
        if (
            problem.kind in ("shadowed", "refused")
            and problem.path is not None
            and Path(problem.path).resolve() in mine
        ):
            used = "" if problem.kind == "refused" else ": that one is used, not the skill just created"
            typer.echo(f"warning: {problem.message}{used}", err=True)


@app.command(
    "validate",
    epilog=examples(
        "nini skills validate ~/.nini/skills/revenue-check",
        "nini skills validate .agents/skills/revenue-check/SKILL.md",
    ),
)
@handles_errors
def validate(
    path: Annotated[Path, typer.Argument(metavar="PATH", help="A SKILL.md file or the folder holding it.")],
    as_json: Annotated[bool, typer.Option("--json", help='Print {"valid", "errors", "warnings"} as JSON.')] = False,
) -> None:
    """Check a SKILL.md against the Agent Skills rules; exit 1 when it breaks one."""
    from nini.skills.markdown import validate_skill_file

    errors, warnings = validate_skill_file(path)
    if as_json:
        print_json({"valid": not errors, "errors": list(errors), "warnings": list(warnings)})
        if errors:
            raise typer.Exit(1)
        return
    for message in warnings:
        typer.echo(f"warning: {message}")
    for message in errors:
        typer.echo(f"error: {message}")
    if errors:
        raise typer.Exit(1)
    typer.echo(f"ok: {path} is a valid skill")


@app.command(
    "enhance",
    epilog=examples(
        "nini skills enhance --status",
        "nini skills enhance --on --profile neutral",
        "nini skills enhance --session demo-agent",
    ),
)
@handles_errors
def enhance(
    ctx: typer.Context,
    on: Annotated[
        bool | None, typer.Option("--on/--off", help="Turn automatic enhancement on or off (settings.json).")
    ] = None,
    profile: Annotated[str | None, typer.Option("--profile", help="conservative, neutral or aggressive.")] = None,
    status: Annotated[bool, typer.Option("--status", help="Show the settings.")] = False,
    session_id: Annotated[
        str | None,
        typer.Option("--session", help="Evaluate the last run of this session and, when it qualifies, enhance now."),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the settings, or the --session decision, as JSON.")
    ] = False,
) -> None:
    """Automatic skill enhancement after good agent runs: switch it, pick a profile, or run it by hand."""
    import asyncio

    from nini.agent.enhance import PROFILES
    from nini.config import load_settings, save_setting
    from nini.errors import ErrorCode, NiniError

    cli = state(ctx)
    if profile is not None and profile not in PROFILES:
        raise NiniError(ErrorCode.INVALID_ARGUMENT, f"--profile must be one of {', '.join(PROFILES)}, not {profile!r}")
    if on is not None:
        save_setting(cli.settings.home, "skill_enhance.auto_enhance", on)
    if profile is not None:
        save_setting(cli.settings.home, "skill_enhance.trigger_profile", profile)
    changed = on is not None or profile is not None
    settings = load_settings(home=cli.settings.home) if changed else cli.settings
    if session_id is not None:
        with working(f"evaluating the run of {session_id}"):
            decided = asyncio.run(_enhance_by_hand(settings, cli.project_dir, session_id))
        if as_json:
            print_json(decided)
            return
        decision = decided["decision"]
        typer.echo(
            f"turn {decided['turn_id']}: {decision['reason_code']} (score {decision['total_score']} of "
            f"{decision['threshold']}, profile {decision['profile']})"
        )
        if decided["message"]:
            typer.echo(decided["message"])
        return
    current = settings.skill_enhance
    threshold = PROFILES.get(current.trigger_profile, PROFILES["conservative"])
    if as_json:
        print_json({**current.model_dump(), "threshold": threshold})
        return
    if status or not changed:
        typer.echo(
            f"auto_enhance: {'on' if current.auto_enhance else 'off'}, profile: {current.trigger_profile} "
            f"(threshold {threshold} of 6), "
            f"context: {current.max_enhance_context_chars} chars, timeout: {current.sub_agent_timeout_ms} ms"
        )
    else:
        typer.echo(f"auto_enhance: {'on' if current.auto_enhance else 'off'}, profile: {current.trigger_profile}")


async def _enhance_by_hand(settings: "Settings", project_dir: Path, session_id: str) -> dict[str, Any]:
    """The decision on the session's last finished run (auto enhance counted as on: you asked), and
    the enhancement when it qualifies."""
    from nini.agent.enhance import decide, record_decision
    from nini.agent.skill_enhancer import enhance_from_run
    from nini.errors import ErrorCode, NiniError
    from nini.runtime import Runtime

    async with Runtime(settings, project_dir=project_dir) as runtime:
        session = runtime.session(session_id)
        ends = [e for e in await runtime.store.call(runtime.store.list_events, session.id) if e["type"] == "done"]
        if not ends:
            raise NiniError(ErrorCode.NOT_FOUND, f"session {session_id} has no finished agent run to evaluate")
        last = ends[-1]
        completed = bool((last["data"] or {}).get("completed_normally"))
        decision = await decide(
            session,
            last["turn_id"],
            completed_normally=completed,
            auto_enhance_enabled=True,
            router=lambda: runtime.router,
        )
        outcome = await enhance_from_run(session, last["turn_id"]) if decision.should_trigger else None
        ended_by = (last["data"] or {}).get("ended_by", "unknown")
        await record_decision(session, last["turn_id"], decision, ended_by, outcome)
        return {
            "turn_id": last["turn_id"],
            "decision": decision.to_dict(),
            "message": outcome.message if outcome else None,
        }
