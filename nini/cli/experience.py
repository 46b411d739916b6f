"""``nini remember`` and ``nini experience ...``: confirm pending experience into a library, and
look after the libraries (list, show, validate, deprecate, roll back)."""

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer

from nini.cli._common import handles_errors, print_json, state
from nini.cli._help import examples, group
from nini.cli.words import say
from nini.errors import ErrorCode, NiniError

if TYPE_CHECKING:  # the libraries (and the model judge) load inside commands: `nini --help` stays fast
    from nini.memory.experience import ExperienceMemory

app = group(
    "The team's and the project's experience libraries.", ["nini experience list", "nini experience show EXP-0001"]
)
REMEMBER_EXAMPLES = examples(
    "nini remember",
    'nini remember --add "use the median for revenue: the revenue column has outliers" --level project --yes',
)

Level = Literal["team", "project"]
Stage = Literal["init", "analysis", "report", "review"]
STAGES: tuple[Stage, ...] = ("init", "analysis", "report", "review")


def _memory(ctx: typer.Context) -> "ExperienceMemory":
    from nini.agent.experience import model_judge
    from nini.memory.experience import ExperienceMemory

    cli = state(ctx)
    return ExperienceMemory(cli.settings, Path(cli.project_dir).resolve(), judge=model_judge(cli.settings))


def _ask(prompt: str) -> str:
    return input(prompt)


def _ask_stage(language: str) -> Stage:
    prompt = (
        "这条经验属于哪个阶段（init/analysis/report/review）[analysis]："
        if language == "zh"
        else "Which stage is it from (init/analysis/report/review) [analysis]: "
    )
    while True:
        try:
            answer = input(prompt).strip().lower() or "analysis"
        except EOFError:
            return "analysis"
        if answer in STAGES:
            return answer


@handles_errors
def remember_command(
    ctx: typer.Context,
    add: Annotated[
        str | None,
        typer.Option(
            "--add", help='An experience stated explicitly, e.g. "use the median, the revenue column has outliers".'
        ),
    ] = None,
    level: Annotated[
        Level | None,
        typer.Option("--level", help="Where it goes: team or project (decided from the statement when left out)."),
    ] = None,
    type: Annotated[
        Literal["standard", "knowledge"] | None,
        typer.Option("--type", help="standard (a checkable rule) or knowledge (a judgement)."),
    ] = None,
    trigger: Annotated[str | None, typer.Option("--trigger", help="When to load it (default: the statement).")] = None,
    stage: Annotated[
        Stage | None,
        typer.Option("--stage", help="The stage it belongs to (asked when left out; analysis with --yes)."),
    ] = None,
    alternative: Annotated[
        list[str] | None, typer.Option("--alternative", metavar="TEXT", help="A rejected alternative (repeatable).")
    ] = None,
    signal: Annotated[
        str | None, typer.Option("--signal", help="What tells the choice apart (default: read from the statement).")
    ] = None,
    yes: Annotated[
        bool, typer.Option("--yes", help="With --add: the confirmation, given here; deposit without asking.")
    ] = False,
) -> None:
    """Choose which pending experience candidates to keep, or state one with --add."""
    from nini.memory.experience.menu import remember_dialogue

    memory = _memory(ctx)
    if add is None:
        if yes:
            raise NiniError(
                ErrorCode.INVALID_ARGUMENT,
                "--yes confirms a statement given with --add; the pending list is chosen interactively",
            )
        remember_dialogue(memory, _ask, typer.echo)
        return
    if stage is None:  # nothing to read it from: the user says, or the scripted form takes analysis
        stage = "analysis" if yes else _ask_stage(memory.language)
    result = memory.capture_statement(
        add, stage=stage, level=level, type_=type, trigger=trigger, alternatives=alternative or (), signal=signal
    )
    if not result.kept:
        reasons = "; ".join(f"{item['reason']}: {item['why']}" for item in result.dropped) or "it is already pending"
        raise NiniError(ErrorCode.INVALID_ARGUMENT, f"not kept as a candidate: {reasons}")
    for problem in result.problems:
        typer.echo(f"warning: {problem}", err=True)
    for note in (note for candidate in result.kept for note in candidate.notes):  # kept unjudged: what stage 1 saw
        typer.echo(f"note: {note}", err=True)
    if not yes:
        typer.echo(result.line(memory.language) or "")
        remember_dialogue(memory, _ask, typer.echo)
        return
    plan = memory.plan([c.id for c in result.kept])
    for line in plan.describe(memory.language):
        typer.echo(line)
    typer.echo(memory.deposit(plan, confirm=True))


@app.command("list", epilog=examples("nini experience list", "nini experience list --level project --all --json"))
@handles_errors
def list_entries(
    ctx: typer.Context,
    level: Annotated[Level | None, typer.Option("--level", help="Only team or only project.")] = None,
    all_: Annotated[bool, typer.Option("--all", help="Deprecated entries too.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON array of rows.")] = False,
) -> None:
    """The libraries' entries (active ones unless --all)."""
    rows = [row for row in _memory(ctx).entries(level) if all_ or row["status"] == "active"]
    if as_json:
        print_json(rows)
        return
    if not rows:
        typer.echo(say(ctx, "no_experience"))
        return
    for row in rows:
        typer.echo(
            f"{row['level']:<8} {row['id']:<9} {row['type']:<9} {row['status']:<10} "
            f"{row['strength']:<10} {row['title']}"
        )


@app.command(
    "show", epilog=examples("nini experience show EXP-0001", "nini experience show team/knowledge/EXP-0001.md")
)
@handles_errors
def show_entry(
    ctx: typer.Context,
    reference: Annotated[str, typer.Argument(metavar="ENTRY", help="EXP-0001, or team/knowledge/EXP-0001.md")],
) -> None:
    """Print one experience document."""
    memory = _memory(ctx)
    if "/" not in reference:
        found = [row for row in memory.entries() if row["id"] == reference.upper()]
        if not found:
            raise NiniError(ErrorCode.NOT_FOUND, f"no {reference} in the team or project INDEX.md")
        if len(found) > 1:
            raise NiniError(
                ErrorCode.INVALID_ARGUMENT, f"{reference} is in both libraries: say team/... or project/..."
            )
        reference = found[0]["reference"]
    typer.echo(memory.read(reference), nl=False)


@app.command("validate", epilog=examples("nini experience validate", "nini experience validate --json"))
@handles_errors
def validate(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="Print each library's problems as JSON.")] = False,
) -> None:
    """Check each INDEX.md: its header, its values, and that every File exists (nothing is rewritten)."""
    problems = _memory(ctx).validate()
    if as_json:
        print_json({level: [str(problem) for problem in found] for level, found in problems.items()})
    else:
        for level, found in problems.items():
            typer.echo(f"{level}: " + ("ok" if not found else f"{len(found)} problem(s)"))
            for problem in found:
                typer.echo(f"  {problem}")
    if any(problems.values()):
        raise typer.Exit(1)


@app.command("deprecate", epilog=examples("nini experience deprecate EXP-0003 --by EXP-0007 --yes"))
@handles_errors
def deprecate_entry(
    ctx: typer.Context,
    entry_id: Annotated[str, typer.Argument(metavar="ENTRY", help="The entry, e.g. EXP-0003.")],
    level: Annotated[Level, typer.Option("--level", help="Its library.")] = "project",
    by: Annotated[str | None, typer.Option("--by", help="The entry that replaces it.")] = None,
    yes: Annotated[bool, typer.Option("--yes", help="Do it without asking.")] = False,
) -> None:
    """Mark an entry deprecated (its file stays)."""
    from nini.memory.experience.curate import deprecate

    memory = _memory(ctx)
    if not yes and input(say(ctx, "deprecate_ask", entry=entry_id, level=level)).strip().lower() not in ("y", "yes"):
        typer.echo(say(ctx, "nothing_changed"))
        return
    typer.echo(deprecate(memory.library(level), entry_id.upper(), (by or "").upper()))


@app.command("rollback", epilog=examples("nini experience rollback project"))
@handles_errors
def rollback_library(
    ctx: typer.Context, level: Annotated[Level, typer.Argument(metavar="LEVEL", help="team or project")]
) -> None:
    """Undo the library's last deposit or deprecation (from its backup; created files are kept aside)."""
    from nini.memory.experience.curate import rollback

    typer.echo(rollback(_memory(ctx).library(level)))
