"""The docs stay true and whole: every setting is in docs/settings.md, every CLI command and option in
docs/cli.md, every link of README and docs/ resolves (files and headings), and README stays a short way
in that never points to a package index nini is not on."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from nini.cli import app
from nini.config import Settings
from tests.conftest import REPO_ROOT

DOCS = REPO_ROOT / "docs"
README = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
SETTINGS_PAGE = (DOCS / "settings.md").read_text(encoding="utf-8")
CLI_PAGE = (DOCS / "cli.md").read_text(encoding="utf-8")
PAGES = [REPO_ROOT / "README.md", *sorted(DOCS.glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")


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
def test_every_setting_is_in_the_settings_table(path: str) -> None:
    assert f"| `{path}` |" in SETTINGS_PAGE, f"setting {path} is missing from docs/settings.md's table"


def test_nini_home_is_documented() -> None:
    assert "`NINI_HOME`" in SETTINGS_PAGE and "NINI_HOME" in README


def _commands() -> list[str]:
    """``nini X`` and ``nini X Y`` for every command of the click tree, however deep."""
    import typer.main

    names: list[str] = []

    def walk(command: Any, path: str) -> None:
        subcommands = getattr(command, "commands", None)
        if not subcommands:
            names.append(path)
        for name, sub in (subcommands or {}).items():
            walk(sub, f"{path} {name}")

    walk(typer.main.get_command(app), "nini")
    return names


def test_command_listing_is_not_empty() -> None:
    assert {"nini skills list", "nini doctor", "nini r check"} <= set(_commands())


@pytest.mark.parametrize("command", _commands())
def test_every_cli_command_is_in_the_cli_page(command: str) -> None:
    assert command in CLI_PAGE, f"{command!r} is not described in docs/cli.md"


def _options() -> list[tuple[str, str]]:
    """(command, --option) for every option of every command (issue 22: the page lists every option)."""
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


def synopsis_lines(command: str) -> list[str]:
    """The lines of docs/cli.md's synopses (its ``text`` blocks) that show ``command``; the root's
    options (``nini --lang``) may be shown anywhere on the page."""
    if command == "nini":
        return [CLI_PAGE]
    blocks = re.findall(r"^```text\n(.*?)^```", CLI_PAGE, flags=re.S | re.M)
    return [
        line for block in blocks for line in block.splitlines() if line == command or line.startswith(command + " ")
    ]


@pytest.mark.parametrize(("command", "option"), _options())
def test_every_cli_option_is_in_its_commands_synopsis(command: str, option: str) -> None:
    assert any(re.search(rf"{re.escape(option)}\b", line) for line in synopsis_lines(command)), (
        f"{command} {option} is not in the command's synopsis in docs/cli.md"
    )


def anchors(page: Path) -> set[str]:
    """GitHub's ids of a Markdown page's headings: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"^```.*?^```", "", page.read_text(encoding="utf-8"), flags=re.S | re.M)
    headings = re.findall(r"^#+ (.+)$", text, flags=re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower().replace("`", "")).replace(" ", "-") for h in headings}


def links(page: Path) -> list[str]:
    """The relative links of a page (web addresses and mail are not checked here)."""
    text = re.sub(r"^```.*?^```", "", page.read_text(encoding="utf-8"), flags=re.S | re.M)
    return [target for target in LINK.findall(text) if not re.match(r"[a-z]+:", target)]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(REPO_ROOT).as_posix())
def test_every_link_resolves(page: Path) -> None:
    broken = []
    for target in links(page):
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(f"{target}: no such file")
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            broken.append(f"{target}: no heading #{anchor} in {file.name}")
    assert not broken, broken


def test_the_link_check_finds_a_broken_link(tmp_path: Path) -> None:
    """The check above looks at something real: a missing page and a missing heading are both caught."""
    (tmp_path / "a.md").write_text("# A page\n\n## Its part\n\n[ok](#its-part) [gone](b.md) [wrong](#no-such-part)\n")
    assert links(tmp_path / "a.md") == ["#its-part", "b.md", "#no-such-part"]
    assert anchors(tmp_path / "a.md") == {"a-page", "its-part"}


def test_readme_links_every_docs_page() -> None:
    linked = {Path(t.partition("#")[0]).name for t in links(REPO_ROOT / "README.md") if t.startswith("docs/")}
    pages = {p.name for p in DOCS.glob("*.md")}
    assert pages <= linked, f"docs pages README does not link: {sorted(pages - linked)}"


def test_readme_is_a_short_way_in() -> None:
    """What nini is, the screenshot, then Quick start with install, a model and a question, within the
    first screenful of text; the reference lives in docs/."""
    assert len(README.split()) < 1000, len(README.split())
    assert README.index("docs/images/sidebar.png") < README.index("## Quick start")
    quick_start = README[README.index("## Quick start") : README.index("\n## ", README.index("## Quick start") + 1)]
    for step in ("pip install .", "nini models add", "nini ask"):
        assert step in quick_start, step
    assert len(quick_start.splitlines()) < 40


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(REPO_ROOT).as_posix())
def test_no_page_installs_from_an_index_nini_is_not_on(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    assert not re.search(r"pip install ['\"]?nini\b", text), "nini is not on PyPI: install from a checkout or a wheel"


def test_the_screenshot_is_there_and_small() -> None:
    image = DOCS / "images" / "sidebar.png"
    assert image.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert image.stat().st_size < 300_000
