"""``nini prefs ...`` and ``nini feedback``: see, add, edit and delete preferences, preview exactly
what the next run is given, switch learning and injection, and judge a run's output."""

import json
from pathlib import Path
from typing import Annotated, Any, Literal

import typer

from nini.cli._common import handles_errors, print_json, state
from nini.cli._help import examples, group
from nini.cli.terminal import working
from nini.cli.words import say
from nini.errors import ErrorCode, NiniError

app = group(
    "Your preferences: the ones you write and the ones learned from your feedback.",
    ["nini prefs list", "nini prefs add report.decimals 2", "nini prefs preview --skill-type report"],
)
FEEDBACK_EXAMPLES = examples(
    'nini feedback t1a2b3c4d5e6f reject --comment "too many exclamation marks"',
    "nini feedback t1a2b3c4d5e6f accept --signal no_exclamation --json",
)

ProjectOption = Annotated[
    str | None, typer.Option("--project", metavar="ID", help="A project id (see prefs list); '.' is this project.")
]
IdArgument = Annotated[int, typer.Argument(metavar="ID", help="The preference's id (nini prefs list).")]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of the table.")]


def _open(ctx: typer.Context) -> Any:
    """(runtime-free) the preference memory of this project over the history store; close its store after."""
    from nini.history.store import HistoryStore
    from nini.memory.preferences import PreferenceMemory

    cli = state(ctx)
    return PreferenceMemory(cli.settings, HistoryStore.from_settings(cli.settings), Path(cli.project_dir))


def _project(memory: Any, project: str | None) -> str | None:
    return memory.project_id if project == "." else project


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def _show(ctx: typer.Context, rows: list[dict[str, Any]]) -> None:
    if not rows:
        typer.echo(say(ctx, "no_preferences"))
    for row in rows:
        scope = row["project_id"] or "global"
        typer.echo(
            f"{row['id']:>6}  {row['key']:<28} {json.dumps(row['value'], ensure_ascii=False):<16} "
            f"{row['source']:<9} {row['confidence']:.2f}  {row['evidence_count']:>3}  {scope}"
        )


@app.command("list", epilog=examples("nini prefs list", "nini prefs list --project . --json"))
@handles_errors
def list_prefs(ctx: typer.Context, project: ProjectOption = ".", as_json: JsonOption = False) -> None:
    """This project's preferences and the global ones (id, key, value, source, confidence, evidence, scope)."""
    memory = _open(ctx)
    try:
        rows = memory.table.list(_project(memory, project), owner=memory.settings.session_owner)
    finally:
        memory.store.close()
    print_json(rows) if as_json else _show(ctx, rows)


@app.command("show", epilog=examples("nini prefs show 3", "nini prefs show 3 --json"))
@handles_errors
def show_pref(ctx: typer.Context, preference_id: IdArgument, as_json: JsonOption = False) -> None:
    """One preference (id, key, value, source, confidence, evidence, scope)."""
    memory = _open(ctx)
    try:
        row = memory.table.get(preference_id, owner=memory.settings.session_owner)
    finally:
        memory.store.close()
    print_json(row) if as_json else _show(ctx, [row])


@app.command("add", epilog=examples("nini prefs add report.decimals 2", "nini prefs add verbosity concise --project ."))
@handles_errors
def add_pref(
    ctx: typer.Context,
    key: Annotated[str, typer.Argument(metavar="KEY", help="What it is about, e.g. report.decimals or verbosity.")],
    value: Annotated[str, typer.Argument(metavar="VALUE", help='JSON (2, true, "text"), or text.')],
    project: ProjectOption = None,
) -> None:
    """Your own preference (confidence 1.0, never changed by learning); global unless --project."""
    memory = _open(ctx)
    try:
        _show(
            ctx,
            [
                memory.table.put_explicit(
                    _project(memory, project), key, _value(value), owner=memory.settings.session_owner
                )
            ],
        )
    finally:
        memory.store.close()


@app.command("edit", epilog=examples("nini prefs edit 3 --value 1", "nini prefs edit 3 --confidence 0.5"))
@handles_errors
def edit_pref(
    ctx: typer.Context,
    preference_id: IdArgument,
    value: Annotated[str | None, typer.Option("--value", help="A new value (JSON, or text).")] = None,
    confidence: Annotated[
        float | None, typer.Option("--confidence", help="0 to 1 (default 1.0: your edit makes it yours).")
    ] = None,
) -> None:
    """Change a preference; your edit makes it explicit."""
    memory = _open(ctx)
    try:
        _show(
            ctx,
            [
                memory.table.edit(
                    preference_id,
                    value=None if value is None else _value(value),
                    confidence=confidence,
                    owner=memory.settings.session_owner,
                )
            ],
        )
    finally:
        memory.store.close()


@app.command("delete", epilog=examples("nini prefs delete 3"))
@handles_errors
def delete_pref(ctx: typer.Context, preference_id: IdArgument) -> None:
    """Delete a preference; the very next run is given the rest."""
    memory = _open(ctx)
    try:
        row = memory.table.delete(preference_id, owner=memory.settings.session_owner)
    finally:
        memory.store.close()
    typer.echo(say(ctx, "deleted_preference", id=row["id"], pref=row["key"]))


@app.command("preview", epilog=examples("nini prefs preview", "nini prefs preview --skill-type report --json"))
@handles_errors
def preview(
    ctx: typer.Context,
    project: ProjectOption = ".",
    skill_type: Annotated[str, typer.Option("--skill-type", help="answer, report or chart.")] = "answer",
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the selection (each preference and why) as JSON.")
    ] = False,
) -> None:
    """Exactly the block the next run of this skill type is given."""
    memory = _open(ctx)
    try:
        selection = memory.select(skill_type, _project(memory, project), owner=memory.settings.session_owner)
    finally:
        memory.store.close()
    print_json(selection.to_dict()) if as_json else typer.echo(selection.block)


def _switch(ctx: typer.Context, key: str, on: bool | None, as_json: bool) -> None:
    """Show the switch ``key``, or set it first: ``key: on`` (``{"key": ..., "on": ...}`` with --json)."""
    from nini.config import save_setting

    cli = state(ctx)
    if on is None:
        on = bool(getattr(cli.settings.preferences, key.split(".")[1]))
    else:
        save_setting(cli.settings.home, key, on)
    print_json({"key": key, "on": on}) if as_json else typer.echo(f"{key}: {'on' if on else 'off'}")


SwitchJsonOption = Annotated[bool, typer.Option("--json", help='Print {"key", "on"} as JSON.')]


@app.command("learning", epilog=examples("nini prefs learning", "nini prefs learning --off"))
@handles_errors
def learning(
    ctx: typer.Context,
    on: Annotated[bool | None, typer.Option("--on/--off", help="Learn from feedback, or not.")] = None,
    as_json: SwitchJsonOption = False,
) -> None:
    """Switch learning from feedback (explicit preferences are injected either way)."""
    _switch(ctx, "preferences.learning", on, as_json)


@app.command("injection", epilog=examples("nini prefs injection", "nini prefs injection --on"))
@handles_errors
def injection(
    ctx: typer.Context,
    on: Annotated[bool | None, typer.Option("--on/--off", help="Put preferences into prompts, or not.")] = None,
    as_json: SwitchJsonOption = False,
) -> None:
    """Switch putting preferences into prompts."""
    _switch(ctx, "preferences.injection", on, as_json)


@handles_errors
def feedback_command(
    ctx: typer.Context,
    run_id: Annotated[
        str, typer.Argument(metavar="RUN", help="A turn id (an answer), report:<artifact id>, or a proposal id.")
    ],
    action: Annotated[
        Literal["accept", "reject", "partial"], typer.Argument(metavar="ACTION", help="accept, reject or partial.")
    ],
    signal: Annotated[
        list[str] | None,
        typer.Option("--signal", metavar="KEY", help="A preference it speaks for, e.g. no_exclamation (repeatable)."),
    ] = None,
    comment: Annotated[
        str | None, typer.Option("--comment", help="Your words; a model (or keyword rules) reads signals from them.")
    ] = None,
    edited: Annotated[
        Path | None, typer.Option("--edited", help="Your edit of a report's Markdown: the signals come from the diff.")
    ] = None,
    as_json: Annotated[
        bool,
        typer.Option(
            "--json", help="Print the feedback's id, the changes learned and the signals cancelled out as JSON."
        ),
    ] = False,
) -> None:
    """Judge a run's output: what was learned is printed, one change per line."""
    import asyncio

    with working("learning from the feedback"):
        learned = asyncio.run(_feedback(ctx, run_id, action, signal or [], comment, edited))
    if as_json:
        print_json(
            {
                "feedback_id": learned.feedback_id,
                "action": action,
                "changes": learned.changes,
                "canceled": list(learned.canceled),
            }
        )
        return
    typer.echo(say(ctx, "feedback_recorded", id=learned.feedback_id, action=action))
    for change in learned.changes:
        typer.echo(f"  {change['key']}: {change['before']:.2f} -> {change['after']:.2f} ({change['why']})")
    for name in learned.canceled:
        typer.echo(f"  {name}: cancelled out (accepted and rejected on the same run)")


async def _feedback(
    ctx: typer.Context, run_id: str, action: str, signals: list[str], comment: str | None, edited: Path | None
) -> Any:
    from nini.runtime import Runtime

    cli = state(ctx)
    async with Runtime(cli.settings, project_dir=Path(cli.project_dir)) as runtime:
        original = edited_text = None
        if edited is not None:
            original = await runtime.store.call(runtime.preferences.report_text, runtime, run_id)
            try:
                edited_text = edited.read_text(encoding="utf-8")
            except OSError as exc:
                raise NiniError(
                    ErrorCode.INVALID_ARGUMENT, f"--edited: cannot read {edited.name}: {exc.strerror}"
                ) from None
        from nini.agent.preferences import comment_reader

        llm = comment_reader(runtime.router) if comment else None
        return await runtime.preferences.feedback(
            run_id, action, signals=signals, comment=comment, original=original, edited=edited_text, llm=llm
        )
