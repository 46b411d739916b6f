"""The shape of the ``nini`` command (issue 35, item 8): sections in the root help, a runnable example
under every command, ``-h``, shell completion, ``--json`` where a command prints data, flags shown
as flags, the root's ``--lang`` and ``--project-dir``, and a ``--help`` that loads nothing heavy."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer.main
from typer.testing import CliRunner

from nini.cli import app
from nini.cli._help import help_of
from tests.agent.conftest import nini  # noqa: F401 - the CLI in-process, pointed at the scripted model
from tests.timeouts import timeout

NINI = Path(sys.executable).with_name("nini")
ROOT = typer.main.get_command(app)
HEAVY = ("sqlalchemy", "pandas", "pydantic_settings", "pydantic", "openai", "jupyter_client", "numpy", "rich")


def tree(command: Any = ROOT, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    """Every command of the click tree, root and groups included, with the words that reach it."""
    found = [(path, command)]
    for name, sub in getattr(command, "commands", {}).items():
        found += tree(sub, (*path, name))
    return found


COMMANDS = tree()
IDS = [" ".join(("nini", *path)) for path, _ in COMMANDS]


def help_text(path: tuple[str, ...]) -> str:
    result = CliRunner().invoke(app, [*path, "--help"], prog_name="nini")
    assert result.exit_code == 0, result.output
    return result.stdout


def example_lines(text: str) -> list[str]:
    """The command lines under ``Examples:``, as written."""
    assert "Examples:" in text, text
    return [line.strip() for line in text.split("Examples:", 1)[1].splitlines() if line.strip()]


def nini_words(line: str) -> list[str]:
    """The words of the ``nini`` command in an example line (after a pipe, before a redirection)."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars="|><;&")
    lexer.whitespace_split = True
    words = list(lexer)
    start = words.index("nini") + 1
    rest = words[start:]
    return rest[: next((i for i, w in enumerate(rest) if w in ("|", ">", ">>", "<", ";", "&&")), len(rest))]


def parse(words: list[str]) -> tuple[str, ...]:
    """Parse ``nini WORDS`` down the tree as the real command would, without running anything; the
    path of the command reached (a usage error raises)."""
    command, context, path = ROOT, ROOT.make_context("nini", list(words)), ()
    while hasattr(command, "commands") and (remaining := [*_protected(context), *context.args]):
        name, command, rest = command.resolve_command(context, remaining)
        path = (*path, name)
        context = command.make_context(name, rest, parent=context)
    return path


def _protected(context: Any) -> list[str]:
    """The subcommand word a group's parse set aside (click's name for it changed across versions)."""
    return list(getattr(context, "_protected_args", None) or getattr(context, "protected_args", None) or [])


@pytest.mark.parametrize(("path", "command"), COMMANDS, ids=IDS)
def test_every_command_shows_examples_that_parse_to_it(path: tuple[str, ...], command: Any) -> None:
    examples = example_lines(help_text(path))
    assert examples, path
    for line in examples:
        words = nini_words(line)
        reached = parse(words)
        if not hasattr(command, "commands"):  # a leaf's examples are of that very command
            assert reached == path, (line, reached)
        elif path:  # a group's examples reach into that group
            assert reached[: len(path)] == path, (line, reached)


def test_the_parse_of_an_example_catches_a_wrong_one() -> None:
    """The check above has teeth: an unknown option or a missing argument is a usage error."""
    for words in (["skills", "list", "--no-such-option"], ["sessions", "show"], ["no-such-command"]):
        with pytest.raises(Exception) as caught:
            parse(words)
        assert hasattr(caught.value, "exit_code") and caught.value.exit_code == 2, words


@pytest.mark.parametrize(("path", "command"), COMMANDS, ids=IDS)
def test_dash_h_is_help_everywhere(path: tuple[str, ...], command: Any) -> None:
    result = CliRunner().invoke(app, [*path, "-h"], prog_name="nini")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("Usage: nini") and result.stdout == help_text(path)


@pytest.mark.parametrize(("path", "command"), COMMANDS, ids=IDS)
def test_the_console_scripts_short_way_to_help_prints_the_same_help(
    path: tuple[str, ...], command: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """``main()`` answers ``nini WORD... -h`` from the tree without parsing (help_of): the same text
    as the usual path (parse, run the root's callback, print on -h), at the same width."""
    assert ROOT.main([*path, "-h"], prog_name="nini", standalone_mode=False) == 0
    assert help_of(ROOT, [*path, "-h"]) + "\n" == capsys.readouterr().out


def test_the_short_way_to_help_leaves_anything_else_to_the_usual_path() -> None:
    for args in (["skills"], ["nosuch", "-h"], ["--lang", "en", "skills", "-h"], ["skills", "list", "--json"], []):
        assert help_of(ROOT, args) is None, args


@pytest.mark.parametrize(("path", "command"), COMMANDS, ids=IDS)
def test_flags_show_as_flags_and_every_option_says_what_it_does(path: tuple[str, ...], command: Any) -> None:
    text = help_text(path)
    assert "<bool>" not in text and "<list[" not in text, text
    for param in command.params:
        if param.param_type_name == "option" and not param.hidden:
            assert param.help, f"nini {' '.join(path)} {param.opts[0]} has no help text"
            if param.is_flag:  # `--json`, or `--on/--off`: never a value to type
                assert param.secondary_opts or param.opts[0] in text.replace(f"{param.opts[0]} <", "")


def test_the_root_help_groups_the_commands_in_sections() -> None:
    text = help_text(())
    sections = ["Analysis:", "Sessions and reports:", "Skills:", "Memory:", "Models:", "Server:"]
    where = [text.index(f"\n{title}\n") for title in sections]
    assert where == sorted(where), text  # in this order
    blocks = dict(
        zip(
            sections,
            [text[a:b] for a, b in zip(where, [*where[1:], text.index("Examples:")], strict=True)],
            strict=True,
        )
    )

    def names(block: str) -> set[str]:
        return {line.split()[0] for line in block.splitlines()[1:] if line[:2] == "  " and line[2:3].strip()}

    assert names(blocks["Analysis:"]) == {"ask", "run-code", "run-r", "r"}
    assert names(blocks["Sessions and reports:"]) == {"sessions", "report"}
    assert names(blocks["Skills:"]) == {"skills"}
    assert names(blocks["Memory:"]) == {"remember", "experience", "prefs", "feedback"}
    assert names(blocks["Models:"]) == {"models"}
    assert names(blocks["Server:"]) == {"doctor", "mcp"}
    assert "\nCommands:\n" not in text  # nothing left outside a section


def cli(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None, shell: bool = False
) -> subprocess.CompletedProcess[str]:
    """The real console script, in a subprocess."""
    command = ["bash", "-c", shlex.join([str(NINI), *args])] if shell else [str(NINI), *args]
    return subprocess.run(
        command, capture_output=True, text=True, timeout=timeout(120), env={**os.environ, **(env or {})}, cwd=cwd
    )


def test_the_real_command_answers_dash_h_and_help_in_sections() -> None:
    result = cli("-h")
    assert result.returncode == 0 and result.stderr == ""
    assert "Sessions and reports:" in result.stdout and "Examples:" in result.stdout
    leaf = cli("sessions", "show", "-h")
    assert leaf.returncode == 0 and "--json" in leaf.stdout and "nini sessions show demo" in leaf.stdout


def test_shell_completion_is_offered_and_completes() -> None:
    """``--show-completion`` prints the script for the shell nini runs in (here bash, detected from
    the parent process); the script's protocol then completes command names."""
    assert "--install-completion" in help_text(())
    script = cli("--show-completion", env={"SHELL": "/bin/bash"}, shell=True)
    assert script.returncode == 0, script.stderr
    assert (
        "complete -o default -F _nini_completion nini" in script.stdout
        and "_NINI_COMPLETE=complete_bash" in script.stdout
    )
    completed = cli(env={"_NINI_COMPLETE": "complete_bash", "COMP_WORDS": "nini skills li", "COMP_CWORD": "2"})
    assert completed.stdout.split() == ["list"], completed


def test_a_missing_project_dir_is_not_found_and_not_created(tmp_path: Path) -> None:
    result = cli("--project-dir", "no/such/folder", "sessions", "list", cwd=tmp_path)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr == "error [NOT_FOUND]: project folder no/such/folder does not exist\n"
    assert list(tmp_path.iterdir()) == []  # neither the folder nor a .nini/ anywhere
    a_file = tmp_path / "notes.txt"
    a_file.write_text("x", encoding="utf-8")
    refused = cli("--project-dir", str(a_file), "skills", "list", cwd=tmp_path)
    assert refused.returncode == 1 and refused.stderr.startswith("error [INVALID_ARGUMENT]: project folder")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


@pytest.mark.parametrize(("lang", "heading"), [("en", "## When to use"), ("zh", "## 适用场景")])
def test_the_root_lang_wins_over_the_locale_and_the_setting(
    tmp_path: Path, nini_home: Path, lang: str, heading: str
) -> None:
    """``nini --lang`` words the command in that language whatever ``ui.language`` and the locale say."""
    nini_home.mkdir(parents=True, exist_ok=True)
    other = "zh" if lang == "en" else "en"
    (nini_home / "settings.json").write_text(json.dumps({"ui": {"language": other}}), encoding="utf-8")
    locale = {"LANG": "zh_CN.UTF-8" if lang == "en" else "en_US.UTF-8"}
    result = cli(
        "--lang",
        lang,
        "skills",
        "create",
        "revenue-check",
        "-d",
        "Check revenue columns",
        "--dir",
        str(tmp_path),
        env=locale,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert heading in (tmp_path / "revenue-check" / "SKILL.md").read_text(encoding="utf-8")


def test_skills_show_reads_as_text_and_keeps_its_json_shape(project_dir: Path) -> None:
    runner = CliRunner()

    def run(*args: str) -> str:
        result = runner.invoke(app, ["--project-dir", str(project_dir), *args])
        assert result.exit_code == 0, result.output
        return result.stdout

    shown = run("skills", "show", "run_code")
    assert shown.startswith("run_code (function, code, enabled)\n") and "parameters:  code (string, required)" in shown
    record = json.loads(run("skills", "show", "run_code", "--json"))
    assert record["name"] == "run_code" and record["metadata"]["input_schema"]["required"] == ["code"]


def test_sessions_show_reads_as_text_and_keeps_its_json_shape(project_dir: Path) -> None:
    runner = CliRunner()
    base = ["--project-dir", str(project_dir)]
    created = runner.invoke(
        app,
        [*base, "run-code", "-", "--session", "shape", "--new", "--label", "sums", "--json"],
        input="print(1 + 1)\n",
    )
    assert created.exit_code == 0, created.output
    text = runner.invoke(app, [*base, "sessions", "show", "shape"])
    assert text.exit_code == 0, text.output
    lines = text.stdout.splitlines()
    assert lines[0] == "session shape" and "tool calls (1):" in lines and "executions (1):" in lines
    assert any(line.strip().startswith("run_code") and "succeeded" in line for line in lines), lines
    assert any("python" in line and line.rstrip().endswith("sums") for line in lines), lines
    bundle = json.loads(runner.invoke(app, [*base, "sessions", "show", "shape", "--json"]).stdout)
    assert set(bundle) == {"session", "messages", "tool_calls", "executions", "artifacts", "datasets"}
    assert bundle["session"]["id"] == "shape" and bundle["executions"][0]["label"] == "sums"


def test_report_prints_its_files_and_sections_as_json(tmp_path: Path, project_dir: Path) -> None:
    runner = CliRunner()
    base = ["--project-dir", str(project_dir)]
    ran = runner.invoke(
        app, [*base, "run-code", "-", "--session", "rep", "--new", "--label", "sums"], input="print(6 * 7)\n"
    )
    assert ran.exit_code == 0, ran.output
    result = runner.invoke(
        app, [*base, "--lang", "en", "report", "--session", "rep", "--out", str(tmp_path / "out"), "--json"]
    )
    assert result.exit_code == 0, result.output
    described = json.loads(result.stdout)
    assert set(described["paths"]) == {"md", "html"} and all(Path(p).is_file() for p in described["paths"].values())
    headings = [
        line[3:].strip()
        for line in Path(described["paths"]["md"]).read_text(encoding="utf-8").splitlines()
        if line.startswith("## ")
    ]
    assert described["sections"] == headings and "Key findings" in headings, headings
    assert described["model_sections"] == {"written": [], "refused": {}}


def test_checks_and_settings_print_json_with_json(tmp_path: Path, project_dir: Path) -> None:
    runner = CliRunner()
    base = ["--project-dir", str(project_dir)]

    def run(*args: str, code: int = 0) -> str:
        result = runner.invoke(app, [*base, *args])
        assert result.exit_code == code, result.output
        return result.stdout

    broken = tmp_path / "SKILL.md"
    broken.write_text("no frontmatter\n", encoding="utf-8")
    checked = json.loads(run("skills", "validate", str(broken), "--json", code=1))
    assert checked["valid"] is False and checked["errors"] and isinstance(checked["warnings"], list)
    assert json.loads(run("experience", "validate", "--json")) == {"team": [], "project": []}
    assert json.loads(run("skills", "enhance", "--on", "--json"))["auto_enhance"] is True
    assert json.loads(run("skills", "enhance", "--off", "--json"))["auto_enhance"] is False
    assert "--on / --off" in help_text(("skills", "enhance"))  # one switch, as prefs learning's
    added = run("prefs", "add", "verbosity", "concise")
    pref_id = added.split()[0]
    assert run("prefs", "show", pref_id) == added  # the list's row, as text
    assert json.loads(run("prefs", "show", pref_id, "--json"))["value"] == "concise"
    assert json.loads(run("prefs", "learning", "--off", "--json")) == {"key": "preferences.learning", "on": False}
    assert json.loads(run("prefs", "injection", "--json")) == {"key": "preferences.injection", "on": True}


def test_feedback_prints_what_it_learned_as_json(nini: Any, llm_server: Any) -> None:  # noqa: F811
    """Through the scripted model (real HTTP): a rejected answer, judged with --json."""
    from tests.llm_server import text

    llm_server.reply(text("Sales doubled!"))
    asked = nini("ask", "sales?", "--json")
    assert asked.exit_code == 0, asked.output
    turn = json.loads(asked.stdout)["turn_id"]
    judged = nini("feedback", turn, "reject", "--signal", "no_exclamation", "--json")
    assert judged.exit_code == 0, judged.output
    learned = json.loads(judged.stdout)
    assert learned["action"] == "reject" and learned["canceled"] == [] and isinstance(learned["feedback_id"], int)
    [change] = learned["changes"]
    assert change["key"] == "punctuation.no_exclamation" and change["after"] > change["before"] and change["why"]


def test_models_test_prints_json_with_json(tmp_path: Path, project_dir: Path) -> None:
    """A provider at a port nothing listens on: the failure, with where, in the JSON; exit 1 still."""
    runner = CliRunner()
    base = ["--project-dir", str(project_dir)]
    added = runner.invoke(
        app,
        [
            *base,
            "models",
            "add",
            "nowhere",
            "--kind",
            "openai",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--model",
            "m1",
            "--api-key-env",
            "",
        ],
    )
    assert added.exit_code == 0, added.output
    result = runner.invoke(app, [*base, "models", "test", "nowhere", "--json"])
    assert result.exit_code == 1
    [tested] = json.loads(result.stdout)
    assert tested["target"] == "nowhere/m1" and tested["ok"] is False and tested["detail"]


def test_help_loads_nothing_heavy() -> None:
    """``nini --help`` and a group's help import no settings, store, data or model library, nor
    pydantic (typer loads it to convert option values): that is what keeps them fast (timed in
    benchmarks/bench_cli.py, not here)."""
    probe = (
        "import sys, runpy\nsys.argv = ['nini', *sys.argv[1:]]\ntry:\n    from nini.cli import main; main()\n"
        "except SystemExit:\n    pass\nprint(sorted(m for m in sys.modules), file=sys.stderr)\n"
    )
    for args in (["--help"], ["skills", "--help"], ["sessions", "show", "-h"]):
        result = subprocess.run(
            [sys.executable, "-c", probe, *args], capture_output=True, text=True, timeout=timeout(120)
        )
        assert result.returncode == 0 and "Usage: nini" in result.stdout, result.stderr
        loaded = set(eval(result.stderr.strip().splitlines()[-1]))  # noqa: S307 - our own probe's list
        heavy = sorted(m for m in loaded if m.split(".")[0] in HEAVY or m.startswith(("nini.config", "nini.history")))
        assert heavy == [], (args, heavy)
