"""README stays true: every setting and every CLI command is documented there."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from nini.cli import app
from nini.config import Settings
from tests.conftest import REPO_ROOT

README = (REPO_ROOT / "README.md").read_text(encoding="utf-8")


def setting_paths(model: type[BaseModel], prefix: str = "") -> list[str]:
    paths = []
    for name, field in model.model_fields.items():
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            paths += setting_paths(annotation, f"{prefix}{name}.")
        else:
            paths.append(prefix + name)
    return paths


@pytest.mark.parametrize("path", [p for p in setting_paths(Settings) if p != "home"])
def test_every_setting_is_in_the_readme_table(path: str) -> None:
    assert f"| `{path}` |" in README, f"setting {path} is missing from README's settings table"


def test_nini_home_is_documented() -> None:
    assert "`NINI_HOME`" in README


def _commands() -> list[str]:
    import typer.main

    root = typer.main.get_command(app)
    names = []
    for name, command in root.commands.items():
        sub = getattr(command, "commands", None)
        names += [f"nini {name} {s}" for s in sub] if sub else [f"nini {name}"]
    return names


def test_command_listing_is_not_empty() -> None:
    assert "nini skills list" in _commands() and "nini doctor" in _commands()


@pytest.mark.parametrize("command", _commands())
def test_every_cli_command_is_in_the_readme(command: str) -> None:
    assert command in README, f"{command!r} is not described in README.md"


def _options() -> list[tuple[str, str]]:
    """(command, --option) for every option of every command (issue 22: the tour lists every option)."""
    import typer.main

    found: list[tuple[str, str]] = []

    def walk(command: Any, path: str) -> None:
        for name, sub in getattr(command, "commands", {}).items():
            walk(sub, f"{path} {name}")
        for param in command.params:
            if param.param_type_name == "option":
                found.extend((path, opt) for opt in param.opts if opt.startswith("--") and opt != "--help")

    walk(typer.main.get_command(app), "nini")
    assert len(found) > 50, found  # the walk reached the commands' options
    return found


@pytest.mark.parametrize(("command", "option"), _options())
def test_every_cli_option_is_in_the_readme(command: str, option: str) -> None:
    assert option in README, f"{command} {option} is not described in README.md"
