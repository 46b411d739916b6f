"""The ``nini`` command: exit codes (0 ok, 1 user error, 2 policy denial), JSON output, no tracebacks."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

import nini
from nini.cli import app
from nini.cli._common import handles_errors
from nini.errors import NiniError
from tests.conftest import skill_md, write_skill
from tests.timeouts import timeout

RECORD_KEYS = {"name", "description", "type", "location", "enabled", "category", "metadata"}
BUNDLED = {"data-quality-check", "skill-creator", "skill-enhance"}
NINI_SCRIPT = Path(sys.executable).with_name("nini")


@pytest.fixture(autouse=True)
def _restore_nini_logger(nini_logger: logging.Logger) -> Iterator[None]:
    """Commands configure the global ``nini`` logger into this test's NINI_HOME; undo that."""
    yield


@pytest.fixture
def run(project_dir: Path):
    """Invoke the CLI in-process with ``--project-dir`` set; returns the click Result."""
    runner = CliRunner()

    def invoke(*args: str):
        return runner.invoke(app, ["--project-dir", str(project_dir), *args])

    return invoke


def ok(result) -> str:
    assert result.exit_code == 0, (result.exit_code, result.output, result.exception)
    assert "Traceback" not in result.output
    return result.stdout


def list_json(run, *args: str) -> list[dict]:
    return json.loads(ok(run("skills", "list", "--json", *args)))


def by_name(records: list[dict]) -> dict[str, dict]:
    return {r["name"]: r for r in records}


def fail(result, code: int = 1) -> str:
    assert result.exit_code == code, (result.exit_code, result.output, result.exception)
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    return result.output


# -- skills list -------------------------------------------------------------------------------------


@pytest.fixture
def some_skills(project_dir: Path, nini_home: Path) -> None:
    """One skill per kind of root: project, agents, user markdown, and a user function skill."""
    write_skill(
        project_dir / ".nini" / "skills",
        "project-skill",
        skill_md("project-skill", "From the project.", category="stats"),
    )
    write_skill(project_dir / ".agents" / "skills", "group/agents-skill", skill_md("agents-skill", "From .agents."))
    write_skill(nini_home / "skills", "user-skill", skill_md("user-skill", "From the user dir.", category="viz"))
    write_skill(
        nini_home / "skills",
        "user-fn",
        "from nini.skills import skill\n\n\n"
        "@skill(name='user-fn', category='data')\n"
        "def user_fn(x: int) -> int:\n"
        '    """Doubles x."""\n'
        "    return 2 * x\n",
        filename="skill.py",
    )


def test_list_json_records_have_exactly_the_contract_keys(run, some_skills, tmp_path: Path):
    records = list_json(run)
    names = {r["name"] for r in records}
    assert {"project-skill", "agents-skill", "user-skill", "user-fn"} | BUNDLED <= names
    for record in records:
        assert set(record) == RECORD_KEYS, record
        assert record["type"] in ("function", "markdown")
        assert isinstance(record["enabled"], bool) and isinstance(record["metadata"], dict)
        location = record["location"]
        assert location and not location.startswith("/") and not Path(location).is_absolute(), location
        assert str(tmp_path) not in json.dumps(record), "an absolute path leaked into a record"
    skills = by_name(records)
    assert skills["project-skill"]["location"] == "project-skill/SKILL.md"
    assert skills["agents-skill"]["location"] == "group/agents-skill/SKILL.md"
    assert skills["user-fn"]["location"] == "user-fn/skill.py"
    assert (skills["project-skill"]["category"], skills["user-skill"]["category"]) == ("statistics", "visualization")
    assert [r["name"] for r in records] == sorted(r["name"] for r in records)


@pytest.mark.parametrize("skill_type", ["markdown", "function"])
def test_list_type_filter(run, some_skills, skill_type):
    records = list_json(run, "--type", skill_type)
    assert records and {r["type"] for r in records} == {skill_type}
    everything = list_json(run)
    assert records == [r for r in everything if r["type"] == skill_type]


def test_list_rejects_an_unknown_type(run):
    result = run("skills", "list", "--type", "shell")
    assert result.exit_code != 0
    assert "Traceback" not in result.output and "shell" in result.output


def test_list_table_shows_each_skill(run, some_skills):
    lines = ok(run("skills", "list")).splitlines()
    assert lines[0].split()[:4] == ["NAME", "TYPE", "CATEGORY", "ENABLED"]
    rows = {line.split()[0]: line.split() for line in lines[1:]}
    assert rows["user-fn"][1:4] == ["function", "data", "yes"]
    assert rows["project-skill"][1:4] == ["markdown", "statistics", "yes"]


# -- enable / disable ---------------------------------------------------------------------------------


def test_disable_then_enable_persists_in_skills_state(run, nini_home: Path):
    state_path = nini_home / "skills_state.json"
    output = ok(run("skills", "disable", "data-quality-check"))
    assert "data-quality-check" in output
    assert json.loads(state_path.read_text())["skills"] == {"data-quality-check": False}
    records = by_name(list_json(run))
    assert records["data-quality-check"]["enabled"] is False
    assert records["skill-creator"]["enabled"] is True

    ok(run("skills", "enable", "data-quality-check"))
    assert json.loads(state_path.read_text())["skills"] == {"data-quality-check": True}
    assert by_name(list_json(run))["data-quality-check"]["enabled"] is True


def test_disable_keeps_other_overrides(run, nini_home: Path):
    ok(run("skills", "disable", "skill-creator"))
    ok(run("skills", "disable", "skill-enhance"))
    assert json.loads((nini_home / "skills_state.json").read_text())["skills"] == {
        "skill-creator": False,
        "skill-enhance": False,
    }
    records = by_name(list_json(run))
    assert [records[n]["enabled"] for n in ("data-quality-check", "skill-creator", "skill-enhance")] == [
        True,
        False,
        False,
    ]


@pytest.fixture
def twin_skills(project_dir: Path, nini_home: Path) -> None:
    """A function skill (user dir) and a Markdown skill (project) that are both named "twin"."""
    write_skill(project_dir / ".nini" / "skills", "twin", skill_md("twin", "The Markdown twin."))
    write_skill(
        nini_home / "skills",
        "twin",
        "from nini.skills import skill\n\n\n"
        "@skill(name='twin', category='data')\n"
        "def twin(x: int) -> int:\n"
        '    """The function twin."""\n'
        "    return x\n",
        filename="skill.py",
    )


def twins(run) -> dict[str, dict]:
    return {r["type"]: r for r in list_json(run) if r["name"] == "twin"}


def test_enable_and_disable_take_type_to_pick_one_of_two_skills_sharing_a_name(run, twin_skills):
    assert set(twins(run)) == {"function", "markdown"}

    ok(run("skills", "disable", "twin", "--type", "function"))
    assert twins(run)["function"]["enabled"] is False
    ok(run("skills", "enable", "twin", "--type", "function"))
    assert twins(run)["function"]["enabled"] is True

    ok(run("skills", "disable", "twin", "--type", "markdown"))
    assert [twins(run)[t]["enabled"] for t in ("function", "markdown")] == [True, False]
    output = fail(run("skills", "enable", "twin", "--type", "markdown"))
    assert "error [CONFLICT]" in output and "twin" in output


def test_enable_rejects_an_unknown_type(run, twin_skills):
    result = run("skills", "enable", "twin", "--type", "shell")
    assert result.exit_code != 0
    assert "Traceback" not in result.output and "shell" in result.output


@pytest.mark.parametrize("command", ["enable", "disable", "show"])
def test_unknown_skill_name_is_a_user_error(run, nini_home: Path, command):
    output = fail(run("skills", command, "no-such-skill"))
    assert "no-such-skill" in output
    assert "error [NOT_FOUND]" in output
    assert not (nini_home / "skills_state.json").exists()


# -- create -------------------------------------------------------------------------------------------


def test_create_markdown_skill_then_list_shows_it(run, nini_home: Path):
    output = ok(
        run("skills", "create", "sales-trend", "--description", "Monthly sales trend by region.", "--category", "stats")
    )
    path = nini_home / "skills" / "sales-trend" / "SKILL.md"
    assert str(path) in output and path.is_file()
    record = by_name(list_json(run))["sales-trend"]
    assert record["type"] == "markdown"
    assert record["description"] == "Monthly sales trend by region."
    assert record["category"] == "statistics"
    assert record["location"] == "sales-trend/SKILL.md"
    assert record["metadata"]["source"] == "user"
    assert record["enabled"] is True


def test_create_function_skill_then_list_shows_it(run, nini_home: Path):
    output = ok(
        run("skills", "create", "column-stats", "--type", "function", "-d", "Summarise one column.", "-c", "data")
    )
    folder = nini_home / "skills" / "column-stats"
    assert str(folder / "skill.py") in output and str(folder / "test_skill.py") in output
    record = by_name(list_json(run, "--type", "function"))["column-stats"]
    assert (record["type"], record["description"], record["category"]) == ("function", "Summarise one column.", "data")
    assert record["metadata"]["input_schema"]["required"] == ["values"]


def test_create_in_project_dir(run, project_dir: Path):
    target = project_dir / ".nini" / "skills"
    ok(run("skills", "create", "local-one", "-d", "Only in this project.", "--dir", str(target)))
    record = by_name(list_json(run))["local-one"]
    assert record["metadata"]["source"] == "project"
    assert record["location"] == "local-one/SKILL.md"


@pytest.mark.parametrize("skill_type,filename", [("markdown", "SKILL.md"), ("function", "skill.py")])
def test_create_twice_refuses_and_names_the_path(run, nini_home: Path, skill_type, filename):
    ok(run("skills", "create", "twice", "--type", skill_type, "-d", "First version."))
    path = nini_home / "skills" / "twice" / filename
    before = path.read_bytes()
    output = fail(run("skills", "create", "twice", "--type", skill_type, "-d", "Second version."))
    assert str(path) in output
    assert path.read_bytes() == before


@pytest.mark.parametrize(
    "args,fragment",
    [
        (["Bad_Name", "-d", "x"], "kebab-case"),
        (["a" * 65, "-d", "x"], "64"),
        (["fine-name", "-d", "uses <html> tags"], "angle"),
        (["fine-name", "-d", "x", "-c", "astrology"], "astrology"),
    ],
)
def test_create_rejects_invalid_input(run, nini_home: Path, args, fragment):
    output = fail(run("skills", "create", *args))
    assert "error [INVALID_ARGUMENT]" in output and fragment in output
    assert not (nini_home / "skills").exists() or not any((nini_home / "skills").iterdir())


# -- validate -----------------------------------------------------------------------------------------


def test_validate_accepts_a_good_skill(run, tmp_path: Path):
    path = write_skill(tmp_path, "good-skill", skill_md("good-skill", "Checks things well.", category="data"))
    output = ok(run("skills", "validate", str(path)))
    assert "ok" in output and "error" not in output
    ok(run("skills", "validate", str(path.parent)))  # the folder works too


@pytest.mark.parametrize(
    "folder,text,fragment",
    [
        ("Bad_Name", skill_md("Bad_Name", "Fine description."), "kebab-case"),
        ("no-desc", skill_md("no-desc"), "description"),
        ("angle", skill_md("angle", "Use <b>bold</b>."), "angle"),
        ("long-desc", skill_md("long-desc", "x" * 1025), "1024"),
        ("no-front", "# Just a title\n", "no description"),
        ("bad-yaml", "---\nname: [unclosed\n---\nBody\n", "YAML"),
        ("extra-key", skill_md("extra-key", "Fine.", owner="me"), "owner"),
    ],
)
def test_validate_rejects_a_bad_skill_and_says_why(run, tmp_path: Path, folder, text, fragment):
    path = write_skill(tmp_path, folder, text)
    output = fail(run("skills", "validate", str(path)))
    assert "error:" in output and fragment in output


def test_validate_and_loading_agree_on_a_skill_without_frontmatter(run, tmp_path: Path):
    path = write_skill(tmp_path, "no-front", "# Just a title\n\nBody.\n")
    output = ok(run("skills", "validate", str(path)))
    assert "is a valid skill" in output


def test_validate_missing_file(run, tmp_path: Path):
    output = fail(run("skills", "validate", str(tmp_path / "nowhere" / "SKILL.md")))
    assert "does not exist" in output


# -- doctor, snapshot ---------------------------------------------------------------------------------


def test_skills_doctor_lists_a_broken_skill_and_the_others_still_load(run, project_dir: Path):
    root = project_dir / ".nini" / "skills"
    write_skill(root, "broken", "---\nname: broken\ndescription: [unclosed\n---\nBody\n")
    write_skill(root, "fine", skill_md("fine", "Still loads."))

    output = fail(run("skills", "doctor"))  # a skill that could not load: exit 1 (issue 22)
    assert "broken/SKILL.md" in output
    assert "error" in output

    problems = json.loads(fail(run("skills", "doctor", "--json")))
    broken = [p for p in problems if p["location"] == "broken/SKILL.md"]
    assert len(broken) == 1 and broken[0]["severity"] == "error" and broken[0]["source"] == "project"

    names = {r["name"] for r in list_json(run)}
    assert "fine" in names and BUNDLED <= names
    assert "broken" not in names


def test_skills_doctor_without_problems(run):
    assert "no problems" in ok(run("skills", "doctor"))
    assert json.loads(ok(run("skills", "doctor", "--json"))) == []


def test_snapshot_prints_its_path_and_lists_skills(run, nini_home: Path, some_skills):
    output = ok(run("skills", "snapshot"))
    path = Path(output.strip())
    assert path == nini_home / "SKILLS_SNAPSHOT.md"
    text = path.read_text(encoding="utf-8")
    for name in ("project-skill", "user-skill", "user-fn", *BUNDLED):
        assert f"## {name}\n" in text
    assert str(nini_home) not in text and "/tmp" not in text


def test_snapshot_follows_enable_state(run, nini_home: Path):
    ok(run("skills", "disable", "skill-creator"))
    path = Path(ok(run("skills", "snapshot")).strip())
    section = path.read_text(encoding="utf-8").split("## skill-creator\n", 1)[1].split("\n## ", 1)[0]
    assert "- enabled: false" in section


# -- doctor, version ----------------------------------------------------------------------------------


def test_doctor_json(run, nini_home: Path):
    checks = json.loads(ok(run("doctor", "--json")))
    assert checks
    for check in checks:
        assert set(check) == {"name", "ok", "detail", "required"}
        assert isinstance(check["ok"], bool) and isinstance(check["required"], bool)
        assert isinstance(check["detail"], str) and check["detail"]
    by = {c["name"]: c for c in checks}
    assert {"python", "R", "sandbox", "NINI_HOME", "settings"} <= set(by)
    assert all(c["ok"] for c in checks if c["required"]), "a required check fails in this environment"
    assert by["NINI_HOME"]["detail"] == str(nini_home)


def test_doctor_says_which_protections_are_active(run, nini_home: Path, monkeypatch: pytest.MonkeyPatch):
    from nini.execution.guard import landlock_abi, seccomp_available
    from nini.execution.sandbox import probe_bwrap

    monkeypatch.setenv("NINI_EXECUTION__MAX_PROCESSES", "48")
    by = {c["name"]: c for c in json.loads(ok(run("doctor", "--json")))}  # approval is on by default
    assert by["sandbox"]["ok"] is probe_bwrap()[0]
    if probe_bwrap()[0]:
        assert "uid" in by["sandbox user"]["detail"]
    if probe_bwrap()[0]:  # seccomp stops programs, whatever Landlock this kernel has
        assert by["programs"]["ok"] is seccomp_available() and by["programs"]["detail"].startswith(
            "seccomp refuses execve"
        )
        assert by["landlock"]["ok"] is (landlock_abi() > 0)
        assert (
            (f"ABI {landlock_abi()}" in by["landlock"]["detail"])
            if landlock_abi()
            else "not in this kernel" in by["landlock"]["detail"]
        )
    assert "48 processes" in by["limits"]["detail"] and "workspace quota 10240 MiB" in by["limits"]["detail"]
    assert "link" in by["workspace files"]["detail"]
    assert by["user kernel"]["ok"] and "not sandboxed" in by["user kernel"]["detail"]
    assert "waits until you allow it (once or for the session)" in by["user kernel"]["detail"]
    monkeypatch.setenv("NINI_EXECUTION__APPROVE_IN_USER_KERNEL", "false")
    unasked = {c["name"]: c for c in json.loads(ok(run("doctor", "--json")))}["user kernel"]
    assert (
        unasked["ok"] is False
        and "WITHOUT asking" in unasked["detail"]
        and "approve_in_user_kernel" in unasked["detail"]
    )
    monkeypatch.setenv("NINI_EXECUTION__SANDBOX", "none")
    off = {c["name"]: c for c in json.loads(ok(run("doctor", "--json")))}
    assert off["sandbox"]["ok"] is False and "unsandboxed" in off["sandbox"]["detail"]
    assert off["programs"]["ok"] is False and "nothing stops it" in off["programs"]["detail"] and "landlock" not in off


def test_doctor_reports_settings_warnings_without_failing(run, nini_home: Path):
    nini_home.mkdir(parents=True)
    (nini_home / "settings.json").write_text("{broken")
    result = run("doctor", "--json")
    checks = {c["name"]: c for c in json.loads(ok(result))}
    assert checks["settings"]["ok"] is False and "not valid JSON" in checks["settings"]["detail"]
    assert (nini_home / "settings.json").read_text() == "{broken"


def test_doctor_table(run):
    lines = ok(run("doctor")).splitlines()
    assert lines and all(line.split()[0] in ("OK", "FAIL", "WARN") for line in lines)
    assert any(line.split()[:2] == ["OK", "python"] for line in lines)


def test_version(run):
    assert ok(run("--version")).strip() == f"nini {nini.__version__}"


# -- error handling shared by every command -----------------------------------------------------------


def _one_command_app(exc: Exception) -> typer.Typer:
    demo = typer.Typer()

    @demo.command()
    @handles_errors
    def boom() -> None:
        raise exc

    return demo


@pytest.mark.parametrize(
    "exc,exit_code,line",
    [
        (
            NiniError("POLICY_VIOLATION", "system() is not allowed"),
            2,
            "error [POLICY_VIOLATION]: system() is not allowed",
        ),
        (NiniError("NOT_FOUND", "no such thing"), 1, "error [NOT_FOUND]: no such thing"),
        (RuntimeError("a bug"), 1, "error [INTERNAL]: RuntimeError: a bug (traceback in the nini log)"),
    ],
)
def test_errors_become_one_line_and_an_exit_code(exc, exit_code, line):
    result = CliRunner().invoke(_one_command_app(exc), [])
    assert result.exit_code == exit_code
    assert result.stderr == line + "\n"
    assert result.stdout == ""
    assert "Traceback" not in result.output


# -- the installed console script ---------------------------------------------------------------------


def _nini(*args: str, **kwargs) -> subprocess.CompletedProcess:
    assert NINI_SCRIPT.is_file(), f"console script missing at {NINI_SCRIPT}"
    return subprocess.run([str(NINI_SCRIPT), *args], capture_output=True, text=True, timeout=timeout(60), **kwargs)


def test_console_script_usage_error_exits_1():
    result = _nini("--no-such-option")
    assert result.returncode == 1
    assert "No such option" in result.stderr and "--no-such-option" in result.stderr
    assert "Traceback" not in result.stderr


def test_console_script_nini_error_is_one_line_on_stderr(project_dir: Path):
    result = _nini("--project-dir", str(project_dir), "skills", "enable", "no-such-skill")
    assert result.returncode == 1
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error [NOT_FOUND]: ") and "no-such-skill" in lines[0]


def test_console_script_lists_skills(project_dir: Path):
    result = _nini("--project-dir", str(project_dir), "skills", "list", "--json")
    assert result.returncode == 0, result.stderr
    assert BUNDLED <= {r["name"] for r in json.loads(result.stdout)}


BUGGY_COMMAND = """
import typer
from nini.cli._common import handles_errors

app = typer.Typer()

@app.command()
@handles_errors
def boom() -> None:
    raise RuntimeError("a bug in a command that never loaded settings")

app()
"""


def test_unexpected_error_traceback_goes_to_the_log_not_the_terminal(nini_home: Path):
    """In a real process with no logging set up, the traceback must not reach stderr."""
    result = subprocess.run([sys.executable, "-c", BUGGY_COMMAND], capture_output=True, text=True, timeout=timeout(60))
    assert result.returncode == 1
    assert result.stderr == (
        "error [INTERNAL]: RuntimeError: a bug in a command that never loaded settings (traceback in the nini log)\n"
    )
    entries = [json.loads(line) for line in (nini_home / "logs" / "nini.jsonl").read_text().splitlines()]
    (entry,) = [e for e in entries if e["level"] == "ERROR"]
    assert entry["msg"] == "unhandled error in boom"
    assert "Traceback" in entry["exc"] and "RuntimeError: a bug" in entry["exc"]


def test_console_script_closed_pipe_is_not_an_error(project_dir: Path):
    """`nini skills list --json | head -0`: the reader is gone before nini writes; exit 0, say nothing."""
    child = subprocess.Popen(
        [str(NINI_SCRIPT), "--project-dir", str(project_dir), "skills", "list", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    child.stdout.close()  # nothing will ever read nini's output
    stderr = child.stderr.read().decode()
    child.stderr.close()
    assert child.wait(timeout=timeout(60)) == 0
    assert stderr == ""


def test_creating_a_skill_nini_will_not_use_says_why(run, project_dir: Path, tmp_path: Path):
    """Issue 22: a skill created outside the folders nini reads, or hidden by a higher-ranking one,
    used to be created silently and never appear."""
    outside = run("skills", "create", "lost-skill", "-d", "Never listed.", "--dir", str(tmp_path / "elsewhere"))
    assert (
        outside.exit_code == 0
        and "nini does not read skills from" in outside.stderr
        and "skills.extra_dirs" in outside.stderr
    )
    assert "lost-skill" not in {r["name"] for r in list_json(run)}

    mine = project_dir / ".nini" / "skills"
    assert run("skills", "create", "twin-skill", "-d", "The project's.", "--dir", str(mine)).stderr == ""
    hidden = run("skills", "create", "twin-skill", "-d", "Mine, shadowed.")
    assert hidden.exit_code == 0 and "'twin-skill' is shadowed by project:twin-skill/SKILL.md" in hidden.stderr
    assert "not the skill just created" in hidden.stderr


def test_doctor_starts_the_interpreter_inside_the_sandbox(run, nini_home: Path, monkeypatch: pytest.MonkeyPatch):
    """Issue 22: bwrap working used to be enough for OK, even where no kernel could start in it."""
    from nini.execution.sandbox import probe_bwrap

    if not probe_bwrap()[0]:
        pytest.skip(f"no working bubblewrap here: {probe_bwrap()[1]}")
    by = {c["name"]: c for c in json.loads(ok(run("doctor", "--json")))}
    assert by["sandbox python"]["ok"] is True and "imports nini and pandas" in by["sandbox python"]["detail"]
    monkeypatch.setenv("NINI_EXECUTION__MEMORY_LIMIT_MB", "256")  # too little for pandas: the interpreter fails inside
    starved = {c["name"]: c for c in json.loads(ok(run("doctor", "--json")))}
    assert starved["sandbox python"]["ok"] is False and "kernels will fail" in starved["sandbox python"]["detail"]


def test_an_interpreter_reached_through_a_link_under_tmp_runs_sandboxed(nini_home: Path, tmp_path: Path) -> None:
    """Issue 22: a virtualenv named through a link under /tmp (the sandbox's /tmp is a fresh one), or
    through "..", failed 'sandbox python' and every kernel (execvp: No such file); its prefix is now
    bound where it is named too, and the interpreter is named without ".."."""
    from nini.execution.sandbox import probe_bwrap

    if not probe_bwrap()[0]:
        pytest.skip(f"no working bubblewrap here: {probe_bwrap()[1]}")
    if sys.prefix == sys.base_prefix:
        pytest.skip("the tests do not run in a virtualenv, so there is no venv to reach through a link")
    link = tmp_path / "env-link"
    link.symlink_to(sys.prefix, target_is_directory=True)
    (tmp_path / "bin").mkdir()  # named through "..", as `../.venv/bin/python` run from a subfolder is
    python = tmp_path / "bin" / ".." / "env-link" / "bin" / Path(sys.executable).name

    def nini_cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(python), "-c", "from nini.cli import main; main()", *args],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=timeout(300),
            cwd=tmp_path,
        )

    checks = {c["name"]: c for c in json.loads(nini_cli("doctor", "--json").stdout)}
    assert checks["sandbox python"]["ok"] is True, checks["sandbox python"]
    ran = nini_cli("run-code", "-", "--json", stdin="import sys\nresult = sys.prefix\nprint(6 * 7)")
    assert ran.returncode == 0, ran.stderr
    outcome = json.loads(ran.stdout)
    assert outcome["isolation"] == "sandbox" and outcome["result"]["stdout"] == "42\n"
    assert outcome["result"]["result"] == str(link)  # the venv, under its linked name
