"""How nini's help reads: commands in sections, examples under every command, ``-h`` as well as ``--help``.

Help is click's plain text, not typer's rich panels: importing rich's help renderer alone costs
about what the rest of ``nini --help`` does (the goal is under 300 ms), and plain text reads the
same in a terminal, piped, or in a test. Each command still names its section with typer's own
``rich_help_panel``; ``SectionedGroup`` prints the commands section by section from it, so the
grouping holds whichever renderer typer uses.
"""

from __future__ import annotations

from typing import Any

import typer
from typer.core import TyperGroup

HELP_OPTIONS: dict[str, Any] = {"help_option_names": ["-h", "--help"]}

# The root help's sections, in the order they print.
ANALYSIS = "Analysis"
SESSIONS = "Sessions and reports"
SKILLS = "Skills"
MEMORY = "Memory"
MODELS = "Models"
SERVER = "Server"
SECTIONS = (ANALYSIS, SESSIONS, SKILLS, MEMORY, MODELS, SERVER)
SHORT_HELP_LIMIT = 200  # a command's whole first sentence in the list, wrapped, rather than cut with "..."


def examples(*lines: str) -> str:
    """An epilog of runnable command lines, printed as written (``\\b`` keeps click from rewrapping them)."""
    return "Examples:\n\n\b\n" + "\n".join(f"  {line}" for line in lines)


class SectionedGroup(TyperGroup):
    """A group whose command list is split into sections by each command's ``rich_help_panel``."""

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        found: dict[str, list[tuple[str, Any]]] = {}
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                found.setdefault(getattr(command, "rich_help_panel", None) or "Commands", []).append((name, command))
        if not found:
            return
        width = max(len(name) for rows in found.values() for name, _ in rows)  # one column across sections
        for title in sorted(found, key=lambda t: SECTIONS.index(t) if t in SECTIONS else len(SECTIONS)):
            with formatter.section(title):
                formatter.write_dl(
                    [
                        (name.ljust(width), command.get_short_help_str(SHORT_HELP_LIMIT))
                        for name, command in found[title]
                    ]
                )


def help_of(root: Any, args: list[str]) -> str | None:
    """The help ``nini WORD... -h`` asks for, read off the click tree without parsing an option; None
    for any other command line (it then runs as usual, help included).

    Parsing would convert the root's option values (``--project-dir``, ``--lang``), and typer
    converts through pydantic, whose import alone doubles the time of ``nini skills --help``.
    """
    if not args or args[-1] not in HELP_OPTIONS["help_option_names"]:
        return None
    command, context = root, root.context_class(root, info_name="nini", **root.context_settings)
    for word in args[:-1]:
        command = getattr(command, "commands", {}).get(word)
        if command is None:  # an option, a value or a typo: the usual path says what is wrong
            return None
        context = command.context_class(command, info_name=word, parent=context, **command.context_settings)
    return command.get_help(context)


def group(help: str, example_lines: tuple[str, ...] | list[str], **options: Any) -> typer.Typer:
    """A ``nini`` command group: plain sectioned help, ``-h``, help when called bare, and its examples."""
    return typer.Typer(
        help=help,
        epilog=examples(*example_lines),
        cls=SectionedGroup,
        context_settings=HELP_OPTIONS,
        rich_markup_mode=None,
        no_args_is_help=True,
        **options,
    )
