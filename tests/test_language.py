"""One language, chosen by the locale (issue 35, item 1): with ``ui.language`` auto, the CLI words
everything (its own lines, refusals, reports, skill templates, experience) in Chinese under a
``zh*`` locale and in English under any other; ``ui.language`` zh or en forces one; ``--lang``
beats both for one command. The CLI cases run the installed ``nini`` in a process of its own with
the locale in its environment, as a person's terminal gives it."""

from __future__ import annotations

import contextvars
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from nini.config import Settings, UISettings
from nini.language import locale_language, set_client_language, use_language, words_language
from nini.skills.builtin.run_r import r_status
from tests.conftest import write_settings
from tests.timeouts import timeout

NINI = Path(sys.executable).with_name("nini")
CJK = re.compile(r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]")
EN, ZH = "en_US.UTF-8", "zh_CN.UTF-8"
needs_r = pytest.mark.skipif(not r_status(Settings())[0], reason="R unavailable")


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({"LANG": "zh_CN.UTF-8"}, "zh"),
        ({"LANG": "zh_TW"}, "zh"),
        ({"LANG": "zh"}, "zh"),
        ({"LANG": "zh_CN.GB18030"}, "zh"),
        ({"LANG": "en_US.UTF-8"}, "en"),
        ({"LANG": "de_DE.UTF-8"}, "en"),
        ({"LANG": "C"}, "en"),
        ({"LANG": "C.UTF-8"}, "en"),
        ({"LANG": "POSIX"}, "en"),
        ({}, "en"),
        ({"LANG": ""}, "en"),
        ({"LC_ALL": "zh_CN.UTF-8", "LANG": "en_US.UTF-8"}, "zh"),  # LC_ALL first
        ({"LC_ALL": "C", "LC_MESSAGES": "zh_CN.UTF-8"}, "en"),
        ({"LC_MESSAGES": "zh_CN.UTF-8", "LANG": "en_US.UTF-8"}, "zh"),  # then LC_MESSAGES
        ({"LC_ALL": "", "LC_MESSAGES": "", "LANG": "zh_CN.UTF-8"}, "zh"),  # an empty one is skipped
        ({"LC_CTYPE": "zh_CN.UTF-8", "LANG": "en_US.UTF-8"}, "en"),  # messages are not LC_CTYPE's
    ],
)
def test_locale_language_reads_lc_all_lc_messages_lang_in_that_order(environ: dict[str, str], expected: str) -> None:
    assert locale_language(environ) == expected


def test_locale_language_reads_the_process_environment_at_each_call(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LANG", "zh_CN.UTF-8")
    assert locale_language() == "zh" and UISettings().current_language == "zh"
    monkeypatch.setenv("LC_ALL", "en_GB.UTF-8")
    assert locale_language() == "en" and UISettings().current_language == "en"


def _in_context(*steps: tuple) -> str:
    """Run ``steps`` ((function, argument) pairs) in a fresh context, then the words' language of ``auto``
    and of the forced settings: nothing leaks into the test's own context."""

    def go() -> str:
        for function, argument in steps:
            function(argument)
        return "/".join(words_language(setting) for setting in ("auto", "zh", "en"))

    return contextvars.copy_context().run(go)


def test_the_override_beats_the_setting_which_beats_the_client_which_beats_the_locale(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LANG", "zh_CN.UTF-8")
    assert _in_context() == "zh/zh/en"  # auto: the locale
    assert _in_context((set_client_language, "en-GB")) == "en/zh/en"  # the client beats the locale
    assert _in_context((use_language, "en")) == "en/en/en"  # --lang beats a forced ui.language
    assert _in_context((set_client_language, "en"), (use_language, "zh")) == "zh/zh/zh"
    assert _in_context((use_language, "en"), (use_language, None)) == "zh/zh/en"  # None lifts it
    assert words_language("auto") == "zh"  # nothing set above reached this context


# -- through the real CLI ---------------------------------------------------------------------------


def nini(*args: str, locale: str, cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """The installed ``nini`` with ``locale`` as LANG (LC_ALL and LC_MESSAGES unset), NINI_HOME the test's."""
    env = {key: value for key, value in os.environ.items() if key not in ("LC_ALL", "LC_MESSAGES")} | {"LANG": locale}
    return subprocess.run(
        [str(NINI), "--project-dir", str(cwd), *args],
        capture_output=True,
        text=True,
        input=stdin,
        env=env,
        cwd=cwd,
        timeout=timeout(180),
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    return folder


def test_a_cli_line_follows_the_locale(project: Path) -> None:
    said = {locale: nini("sessions", "list", locale=locale, cwd=project) for locale in (EN, ZH, "C")}
    assert [result.returncode for result in said.values()] == [0, 0, 0]
    assert {locale: result.stdout for locale, result in said.items()} == {
        EN: "no sessions yet\n",
        ZH: "还没有会话\n",
        "C": "no sessions yet\n",
    }


@needs_r
def test_a_policy_refusal_follows_the_locale_in_the_specs_words(project: Path) -> None:
    (project / "bad.R").write_text('system("ls")\n', encoding="utf-8")
    said = {locale: nini("r", "check", "bad.R", locale=locale, cwd=project) for locale in (EN, ZH)}
    assert [result.returncode for result in said.values()] == [2, 2]
    assert "error [POLICY_VIOLATION]: function not allowed: system (line 1)" in said[EN].stderr.splitlines()
    assert "error [POLICY_VIOLATION]: 不允许调用函数: system (第 1 行)" in said[ZH].stderr.splitlines()


def test_a_python_policy_refusal_follows_the_locale(project: Path) -> None:
    (project / "bad.py").write_text('import os\nos.system("ls")\n', encoding="utf-8")
    said = {locale: nini("run-code", "bad.py", locale=locale, cwd=project) for locale in (EN, ZH)}
    assert [result.returncode for result in said.values()] == [2, 2], said[EN].stderr
    assert "line 1: import of 'os' is not allowed (rule forbidden-import)" in said[EN].stderr and not CJK.search(
        said[EN].stderr
    )
    assert "第 1 行：不允许导入 'os'（规则 forbidden-import）" in said[ZH].stderr


def test_a_new_skills_template_follows_the_locale(project: Path) -> None:
    for locale, name in ((EN, "english-skill"), (ZH, "chinese-skill")):
        made = nini(
            "skills",
            "create",
            name,
            "-d",
            "Sum sales by month.",
            "--dir",
            str(project / "skills"),
            locale=locale,
            cwd=project,
        )
        assert made.returncode == 0, made.stderr
    english = (project / "skills" / "english-skill" / "SKILL.md").read_text(encoding="utf-8")
    chinese = (project / "skills" / "chinese-skill" / "SKILL.md").read_text(encoding="utf-8")
    assert "## When to use" in english and not CJK.search(english)
    assert "## 适用场景" in chinese


def test_experience_words_follow_the_locale(project: Path) -> None:
    statement = "use the median for revenue: the revenue column has outliers"
    said = {}
    for locale in (EN, ZH):
        (folder := project / locale).mkdir()
        said[locale] = nini("remember", "--add", statement, "--level", "project", "--yes", locale=locale, cwd=folder)
        assert said[locale].returncode == 0, said[locale].stderr
    assert "Deposited 1 experience(s): EXP-0001 (project)" in said[EN].stdout and not CJK.search(said[EN].stdout)
    assert "已沉淀 1 条经验：EXP-0001（project）" in said[ZH].stdout


def _notebook(folder: Path) -> Path:
    """A saved notebook with one computed, printed result (no kernel is needed to report on it)."""
    cell = nbformat.v4.new_code_cell(
        "total = 41 + 1\nprint('total:', total)",
        execution_count=1,
        outputs=[nbformat.v4.new_output("stream", name="stdout", text="total: 42\n")],
    )
    path = folder / "sales.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# Sales"), cell]), path)
    return path


def _report(project: Path, locale: str, *options: str) -> str:
    out = project / f"out-{len(list(project.glob('out-*')))}"
    made = nini(
        "report", str(_notebook(project)), "--format", "md", "--out", str(out), *options, locale=locale, cwd=project
    )
    assert made.returncode == 0, made.stderr
    [markdown] = out.glob("*.md")
    return markdown.read_text(encoding="utf-8")


def test_report_headings_follow_the_locale(project: Path) -> None:
    english, chinese = _report(project, EN), _report(project, ZH)
    assert "## Key findings" in english and not CJK.search(english)
    assert "## 关键发现" in chinese and "## Key findings" not in chinese


def test_lang_beats_a_forced_ui_language_and_without_it_the_setting_beats_the_locale(
    project: Path, nini_home: Path
) -> None:
    write_settings(nini_home, {"ui": {"language": "zh"}})
    assert "## 关键发现" in _report(project, EN)  # the setting, not the English locale
    assert "## Key findings" in _report(project, EN, "--lang", "en")
    listed = nini("--lang", "en", "sessions", "list", locale=ZH, cwd=project)
    assert listed.stdout == "no sessions yet\n", listed.stderr
    assert nini("sessions", "list", locale=EN, cwd=project).stdout == "还没有会话\n"
    json.loads(
        nini("--lang", "en", "sessions", "list", "--json", locale=ZH, cwd=project).stdout
    )  # --json: data, no words
