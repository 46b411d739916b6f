"""Settings: defaults < settings.json < NINI_* environment < explicit arguments, with per-field fallback.

Every fallback must be visible twice (``settings.warnings`` for ``nini doctor`` and a warning on the
``nini.config`` logger) and must never rewrite the user's settings.json.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import pytest

from nini.config import SETTINGS_FILE, Settings, load_settings

OLD_MTIME_NS = 1_000_000_000 * 1_000_000_000  # 2001-09-09: any rewrite moves it


def write_settings(home: Path, content: str | bytes | dict) -> Path:
    """Write NINI_HOME/settings.json with an old mtime, so that a rewrite always shows."""
    if isinstance(content, dict):
        content = json.dumps(content)
    if isinstance(content, str):
        content = content.encode("utf-8")
    home.mkdir(parents=True, exist_ok=True)
    path = home / SETTINGS_FILE
    path.write_bytes(content)
    os.utime(path, ns=(OLD_MTIME_NS, OLD_MTIME_NS))
    return path


def load_and_check_warnings(caplog: pytest.LogCaptureFixture, **kwargs) -> Settings:
    """load_settings(), asserting that what it recorded in ``warnings`` was also logged as warnings."""
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="nini.config"):
        settings = load_settings(**kwargs)
    logged = [r.getMessage() for r in caplog.records if r.name == "nini.config" and r.levelno == logging.WARNING]
    assert logged == settings.warnings
    return settings


def values(settings: Settings) -> dict:
    return {
        "home": settings.home,
        "log_level": settings.log_level,
        "r_enabled": settings.r_enabled,
        "extra_dirs": settings.skills.extra_dirs,
    }


def defaults(home: Path, **changes) -> dict:
    return {"home": home, "log_level": "INFO", "r_enabled": True, "extra_dirs": [], **changes}


# -- layers -----------------------------------------------------------------------------------------


def test_defaults_without_settings_file(nini_home: Path, caplog):
    settings = load_and_check_warnings(caplog)
    assert values(settings) == defaults(nini_home)
    assert settings.warnings == []
    assert settings.settings_path == nini_home / "settings.json"
    assert settings.user_skills_dir == nini_home / "skills"
    assert settings.logs_dir == nini_home / "logs"
    assert settings.snapshot_path == nini_home / "SKILLS_SNAPSHOT.md"
    assert settings.skills_state_path == nini_home / "skills_state.json"
    assert not nini_home.exists(), "loading settings must not create NINI_HOME or settings.json"


def test_home_defaults_to_dot_nini_in_the_user_home(tmp_path: Path, monkeypatch):
    monkeypatch.delenv("NINI_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    assert load_settings().home == tmp_path / "user" / ".nini"


@pytest.mark.parametrize(
    "content,expected",
    [
        ({}, {}),
        ({"log_level": "DEBUG"}, {"log_level": "DEBUG"}),
        ({"log_level": "warning"}, {"log_level": "WARNING"}),
        ({"r_enabled": False}, {"r_enabled": False}),
        ({"skills": {"extra_dirs": ["/srv/skills"]}}, {"extra_dirs": [Path("/srv/skills")]}),
        (
            {"log_level": "ERROR", "r_enabled": False, "skills": {"extra_dirs": ["/a", "/b"]}},
            {"log_level": "ERROR", "r_enabled": False, "extra_dirs": [Path("/a"), Path("/b")]},
        ),
    ],
)
def test_values_from_settings_file(nini_home: Path, caplog, content, expected):
    write_settings(nini_home, content)
    settings = load_and_check_warnings(caplog)
    assert values(settings) == defaults(nini_home, **expected)
    assert settings.warnings == []


def test_settings_file_with_a_utf8_bom_is_read(nini_home: Path, caplog):
    write_settings(nini_home, "\ufeff" + json.dumps({"log_level": "ERROR", "r_enabled": False}))
    settings = load_and_check_warnings(caplog)
    assert values(settings) == defaults(nini_home, log_level="ERROR", r_enabled=False)
    assert settings.warnings == []


@pytest.mark.parametrize(
    "content,env,expected",
    [
        ({"log_level": "DEBUG"}, {"NINI_LOG_LEVEL": "ERROR"}, {"log_level": "ERROR"}),
        ({"r_enabled": True}, {"NINI_R_ENABLED": "false"}, {"r_enabled": False}),
        ({"r_enabled": False}, {"NINI_R_ENABLED": "1"}, {"r_enabled": True}),
        (
            {"skills": {"extra_dirs": ["/from/file"]}},
            {"NINI_SKILLS__EXTRA_DIRS": '["/from/env", "/also/env"]'},
            {"extra_dirs": [Path("/from/env"), Path("/also/env")]},
        ),
        # the environment overrides only what it sets; the file's other values stay
        (
            {"log_level": "DEBUG", "r_enabled": False},
            {"NINI_SKILLS__EXTRA_DIRS": '["/from/env"]'},
            {"log_level": "DEBUG", "r_enabled": False, "extra_dirs": [Path("/from/env")]},
        ),
        ({}, {"NINI_LOG_LEVEL": "warning"}, {"log_level": "WARNING"}),
    ],
)
def test_environment_overrides_the_file(nini_home: Path, monkeypatch, caplog, content, env, expected):
    write_settings(nini_home, content)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    settings = load_and_check_warnings(caplog)
    assert values(settings) == defaults(nini_home, **expected)
    assert settings.warnings == []


def test_explicit_arguments_override_environment_and_file(nini_home: Path, monkeypatch, caplog):
    write_settings(nini_home, {"log_level": "DEBUG", "r_enabled": False, "skills": {"extra_dirs": ["/file"]}})
    monkeypatch.setenv("NINI_LOG_LEVEL", "ERROR")
    monkeypatch.setenv("NINI_SKILLS__EXTRA_DIRS", '["/env"]')
    settings = load_and_check_warnings(caplog, log_level="WARNING", skills={"extra_dirs": ["/arg"]})
    assert values(settings) == defaults(nini_home, log_level="WARNING", r_enabled=False, extra_dirs=[Path("/arg")])


def test_home_argument_overrides_nini_home_and_reads_its_own_file(tmp_path: Path, nini_home: Path, caplog):
    write_settings(nini_home, {"log_level": "DEBUG"})
    other = tmp_path / "other-home"
    write_settings(other, {"log_level": "ERROR"})
    settings = load_and_check_warnings(caplog, home=other)
    assert (settings.home, settings.log_level) == (other, "ERROR")


# -- fallbacks from the file ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "content,expected,warning",
    [
        pytest.param(b'{"log_level": "DEBUG",', {}, "not valid JSON", id="not-json"),
        pytest.param(b"", {}, "not valid JSON", id="empty-file"),
        pytest.param(b'["log_level", "DEBUG"]', {}, "must hold a JSON object", id="array"),
        pytest.param(b'"DEBUG"', {}, "must hold a JSON object", id="string"),
        pytest.param(b"null", {}, "must hold a JSON object", id="null"),
        pytest.param(b'{"log_level": "DEBUG", "note": "caf\xe9"}', {}, "utf-8", id="invalid-utf8"),
        pytest.param(b"\x00\x01\x02\xff" * 64, {}, "not valid JSON", id="binary"),
        pytest.param(
            {"log_level": "LOUD", "r_enabled": False, "skills": {"extra_dirs": ["/srv/s"]}},
            {"r_enabled": False, "extra_dirs": [Path("/srv/s")]},
            "log_level",
            id="bad-field-others-kept",
        ),
        pytest.param(
            {"log_level": "DEBUG", "r_enabled": "perhaps"},
            {"log_level": "DEBUG"},
            "r_enabled",
            id="bad-bool-others-kept",
        ),
        pytest.param(
            {"log_level": "DEBUG", "skills": {"extra_dirs": "/srv/not-a-list"}},
            {"log_level": "DEBUG"},
            "skills.extra_dirs",
            id="nested-not-a-list",
        ),
        pytest.param(
            {"r_enabled": False, "skills": {"extra_dirs": 5}},
            {"r_enabled": False},
            "skills.extra_dirs",
            id="nested-number",
        ),
        pytest.param(
            {"log_level": "ERROR", "skills": "everything"},
            {"log_level": "ERROR"},
            "skills",
            id="skills-not-an-object",
        ),
        pytest.param(
            {"log_level": "DEBUG", "colour": "blue"},
            {"log_level": "DEBUG"},
            "'colour'",
            id="unknown-key",
        ),
        pytest.param(
            {"home": "/somewhere/else", "r_enabled": False},
            {"r_enabled": False},
            "'home' is ignored",
            id="home-in-file",
        ),
    ],
)
def test_file_fallbacks(nini_home: Path, caplog, content, expected, warning):
    path = write_settings(nini_home, content)
    before = (path.read_bytes(), path.stat().st_mtime_ns)

    settings = load_and_check_warnings(caplog)

    assert values(settings) == defaults(nini_home, **expected)
    assert len(settings.warnings) == 1, settings.warnings
    assert warning in settings.warnings[0]
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before, "settings.json was rewritten"


def test_each_bad_value_gets_its_own_warning_once(nini_home: Path, caplog):
    path = write_settings(
        nini_home,
        {"log_level": "LOUD", "r_enabled": "perhaps", "skills": {"extra_dirs": ["/ok", None, 5]}, "x": 1},
    )
    before = (path.read_bytes(), path.stat().st_mtime_ns)
    settings = load_and_check_warnings(caplog)
    assert values(settings) == defaults(nini_home)
    assert len(settings.warnings) == 4, settings.warnings
    for fragment in ("log_level", "r_enabled", "skills.extra_dirs", "'x'"):
        assert sum(fragment in w for w in settings.warnings) == 1, (fragment, settings.warnings)
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before


def test_unreadable_settings_file_falls_back(nini_home: Path, caplog):
    # settings.json that is a folder: reading it fails with an OSError that is not "missing"
    (nini_home / SETTINGS_FILE).mkdir(parents=True)
    settings = load_and_check_warnings(caplog)
    assert values(settings) == defaults(nini_home)
    assert len(settings.warnings) == 1 and "cannot be read" in settings.warnings[0]


# -- fallbacks from the environment and arguments -------------------------------------------------------


@pytest.mark.parametrize(
    "content,env,expected,warning",
    [
        pytest.param(
            {"r_enabled": False}, {"NINI_LOG_LEVEL": "LOUD"}, {"r_enabled": False}, "log_level", id="bad-level"
        ),
        pytest.param(
            {"log_level": "DEBUG"},
            {"NINI_R_ENABLED": "maybe"},
            {"log_level": "DEBUG"},
            "r_enabled",
            id="bad-bool",
        ),
        pytest.param(
            {"r_enabled": False},
            {"NINI_SKILLS__EXTRA_DIRS": "5", "NINI_LOG_LEVEL": "ERROR"},
            {"log_level": "ERROR", "r_enabled": False},
            "skills.extra_dirs",
            id="nested-not-a-list",
        ),
        pytest.param(
            {"r_enabled": False},
            {"NINI_SKILLS__EXTRA_DIRS": "[not json", "NINI_LOG_LEVEL": "ERROR"},
            {"log_level": "ERROR", "r_enabled": False},
            "NINI_SKILLS",
            id="nested-not-json",
        ),
    ],
)
def test_bad_environment_value_falls_back_alone(nini_home: Path, monkeypatch, caplog, content, env, expected, warning):
    path = write_settings(nini_home, content)
    before = (path.read_bytes(), path.stat().st_mtime_ns)
    for key, value in env.items():
        monkeypatch.setenv(key, value)

    settings = load_and_check_warnings(caplog)

    assert values(settings) == defaults(nini_home, **expected)
    assert len(settings.warnings) == 1, settings.warnings
    assert warning in settings.warnings[0] and "environment" in settings.warnings[0]
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before


def test_bad_environment_value_does_not_discard_a_good_file_value(nini_home: Path, monkeypatch, caplog):
    """The bad layer alone is dropped: the field takes the file's value, and only the environment is blamed."""
    path = write_settings(nini_home, {"log_level": "DEBUG"})
    before = (path.read_bytes(), path.stat().st_mtime_ns)
    monkeypatch.setenv("NINI_LOG_LEVEL", "LOUD")
    settings = load_and_check_warnings(caplog)
    assert settings.log_level == "DEBUG"
    assert len(settings.warnings) == 1
    assert "environment" in settings.warnings[0] and "file" not in settings.warnings[0]
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before


def test_bad_file_value_hidden_by_a_good_environment_value(nini_home: Path, monkeypatch, caplog):
    write_settings(nini_home, {"log_level": "LOUD"})
    monkeypatch.setenv("NINI_LOG_LEVEL", "ERROR")
    assert load_and_check_warnings(caplog).log_level == "ERROR"


def test_bad_argument_falls_back(nini_home: Path, caplog):
    path = write_settings(nini_home, {"r_enabled": False})
    before = (path.read_bytes(), path.stat().st_mtime_ns)
    settings = load_and_check_warnings(caplog, log_level="LOUD")
    assert values(settings) == defaults(nini_home, r_enabled=False)
    assert len(settings.warnings) == 1 and "argument" in settings.warnings[0]
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before


# -- paths ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "source",
    ["file", "environment"],
)
def test_relative_extra_dirs_resolve_against_nini_home(nini_home: Path, monkeypatch, caplog, source):
    dirs = ["team-skills", "nested/more", "/abs/skills"]
    if source == "file":
        write_settings(nini_home, {"skills": {"extra_dirs": dirs}})
    else:
        monkeypatch.setenv("NINI_SKILLS__EXTRA_DIRS", json.dumps(dirs))
    settings = load_and_check_warnings(caplog)
    assert settings.skills.extra_dirs == [nini_home / "team-skills", nini_home / "nested" / "more", Path("/abs/skills")]
    assert settings.warnings == []


def test_tilde_expands_in_home_and_extra_dirs(tmp_path: Path, monkeypatch, caplog):
    user_home = tmp_path / "user"
    monkeypatch.setenv("HOME", str(user_home))
    monkeypatch.setenv("NINI_HOME", "~/nini-home")
    write_settings(user_home / "nini-home", {"skills": {"extra_dirs": ["~/my-skills", "rel"]}})
    settings = load_and_check_warnings(caplog)
    assert settings.home == user_home / "nini-home"
    assert settings.skills.extra_dirs == [user_home / "my-skills", user_home / "nini-home" / "rel"]
    assert settings.warnings == []


def test_tilde_expands_in_home_argument(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    assert load_settings(home="~/elsewhere").home == tmp_path / "user" / "elsewhere"


@pytest.mark.parametrize(
    "enhance,expected,bad",
    [
        pytest.param(
            {"max_enhance_context_chars": 0, "auto_enhance": True}, {"auto_enhance": True}, 1, id="zero-chars"
        ),
        pytest.param({"max_enhance_context_chars": "lots", "sub_agent_timeout_ms": -5}, {}, 2, id="junk-and-negative"),
        pytest.param(
            {"max_enhance_context_chars": 1200, "trigger_profile": "bold"},
            {"max_enhance_context_chars": 1200, "trigger_profile": "bold"},
            0,
            id="profile-checked-when-used",
        ),
    ],
)
def test_skill_enhance_values_fall_back_to_their_defaults(nini_home: Path, caplog, enhance, expected, bad):
    write_settings(nini_home, {"skill_enhance": enhance})
    settings = load_and_check_warnings(caplog) if bad else load_settings()
    wanted = {
        "auto_enhance": False,
        "trigger_profile": "conservative",
        "max_enhance_context_chars": 50_000,
        "sub_agent_timeout_ms": 300_000,
        "skills_dir": None,
    } | expected
    assert settings.skill_enhance.model_dump() == wanted
    assert len(settings.warnings) == bad, settings.warnings


def test_the_enhancement_s_skills_dir_is_taken_from_nini_home(tmp_path: Path, monkeypatch, nini_home: Path) -> None:
    write_settings(nini_home, {"skill_enhance": {"skills_dir": "team-skills"}})
    assert load_settings().skill_enhance.skills_dir == nini_home / "team-skills"
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    write_settings(nini_home, {"skill_enhance": {"skills_dir": "~/mine"}})
    assert load_settings().skill_enhance.skills_dir == tmp_path / "user" / "mine"


def test_a_validators_message_is_shown_without_pydantics_prefix(nini_home) -> None:
    """Issue 22: warnings read "provider names must be unique ...", not "Value error, provider names ..."."""
    nini_home.mkdir(parents=True, exist_ok=True)
    providers = [{"name": "a", "model": "m", "base_url": "http://127.0.0.1:1/v1"}] * 2
    (nini_home / "settings.json").write_text(json.dumps({"llm": {"providers": providers}}))
    warnings = load_settings().warnings
    assert any("provider names must be unique; repeated: a" in w for w in warnings), warnings
    assert not any("Value error" in w for w in warnings)


def test_a_replay_provider_needs_no_model_and_a_rejected_one_is_named(nini_home) -> None:
    """Issue 22: a replay provider without `model` was rejected, and then NO_MODEL_AVAILABLE said
    only "llm.providers is empty"."""
    from nini.agent.llm import ModelRouter
    from nini.errors import NiniError

    nini_home.mkdir(parents=True, exist_ok=True)
    (nini_home / "settings.json").write_text(
        json.dumps({"llm": {"providers": [{"name": "demo", "kind": "replay", "script": "s.json"}]}})
    )
    [replay] = load_settings().llm.providers
    assert (replay.name, replay.model) == ("demo", "replay")

    (nini_home / "settings.json").write_text(
        json.dumps({"llm": {"providers": [{"name": "local", "base_url": "http://127.0.0.1:1/v1"}]}})
    )
    settings = load_settings()
    assert settings.llm.providers == []
    try:
        ModelRouter(settings.llm).chain("chat")
    except NiniError as exc:
        assert (
            exc.code == "NO_MODEL_AVAILABLE"
            and "llm.providers.model" in exc.message
            and "Field required" in exc.message
        )
    else:
        raise AssertionError("a router without providers gave a chain")
