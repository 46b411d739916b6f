"""JSON-lines logging to NINI_HOME/logs: one parseable object per line, secrets masked, no duplicates."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from nini.logs import LOG_FILE, configure_logging, redact

OPENAI_KEY = "sk-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5"  # "sk-" then 30 letters and digits
PROJECT_KEY = "sk-proj-" + "Zz9Yy8Xx7Ww6Vv5Uu4Tt3"
BEARER = "Bearer " + "abcDEF123ghiJKL456mno.pqr-stu"


def _flush(logger: logging.Logger) -> None:
    for handler in logger.handlers:
        handler.flush()


def _lines(path: Path) -> list[dict]:
    text = path.read_text(encoding="utf-8")
    assert text.endswith("\n")
    return [json.loads(line) for line in text.splitlines()]


def test_writes_one_json_object_per_line(tmp_path: Path, nini_logger):
    path = configure_logging(tmp_path / "logs", "DEBUG")
    assert path == tmp_path / "logs" / LOG_FILE

    logging.getLogger("nini.test").info("first %s", "message")
    logging.getLogger("nini.skills").warning("skipped", extra={"data": {"file": "a/SKILL.md", "size": 3, "ok": False}})
    logging.getLogger("nini").debug("multi\nline ünicode")
    _flush(nini_logger)

    entries = _lines(path)
    assert [e["msg"] for e in entries] == ["first message", "skipped", "multi\nline ünicode"]
    assert [e["level"] for e in entries] == ["INFO", "WARNING", "DEBUG"]
    assert [e["logger"] for e in entries] == ["nini.test", "nini.skills", "nini"]
    assert all({"ts", "level", "logger", "msg"} <= e.keys() for e in entries)
    assert all(e["ts"].endswith("+00:00") and "T" in e["ts"] for e in entries)
    assert entries[1]["data"] == {"file": "a/SKILL.md", "size": 3, "ok": False}
    assert "data" not in entries[0]


def test_level_threshold_is_applied(tmp_path: Path, nini_logger):
    path = configure_logging(tmp_path / "logs", "WARNING")
    logging.getLogger("nini.test").info("too quiet")
    logging.getLogger("nini.test").error("loud enough")
    _flush(nini_logger)
    assert [e["msg"] for e in _lines(path)] == ["loud enough"]


def test_exception_is_logged_in_the_line(tmp_path: Path, nini_logger):
    path = configure_logging(tmp_path / "logs")
    try:
        raise ValueError(f"bad key {OPENAI_KEY}")
    except ValueError:
        logging.getLogger("nini.test").exception("failed")
    _flush(nini_logger)
    (entry,) = _lines(path)
    assert entry["msg"] == "failed"
    assert "ValueError" in entry["exc"] and "Traceback" in entry["exc"]
    assert OPENAI_KEY not in entry["exc"]


@pytest.mark.parametrize(
    "text,secret",
    [
        (f"using key {OPENAI_KEY} now", OPENAI_KEY),
        (f"key={PROJECT_KEY}", PROJECT_KEY),
        (f"Authorization: {BEARER}", BEARER.split()[1]),
        (f"OPENAI_API_KEY='{OPENAI_KEY}'", OPENAI_KEY),
    ],
)
def test_redact_masks_key_shaped_text(text, secret):
    masked = redact(text)
    assert secret not in masked
    assert "[REDACTED]" in masked


@pytest.mark.parametrize("text", ["sk-learn is a library", "ask-for-help", "the token count is 12", "Bearer of news"])
def test_redact_leaves_ordinary_text_alone(text):
    assert redact(text) == text


def test_secrets_are_redacted_in_msg_and_data(tmp_path: Path, nini_logger):
    path = configure_logging(tmp_path / "logs")
    logging.getLogger("nini.agent").warning(
        "calling with %s and %s",
        OPENAI_KEY,
        BEARER,
        extra={"data": {"headers": {"Authorization": BEARER}, "keys": [OPENAI_KEY, "plain"], "model": "gpt-x"}},
    )
    _flush(nini_logger)
    raw = path.read_text(encoding="utf-8")
    for secret in (OPENAI_KEY, BEARER, BEARER.split()[1], OPENAI_KEY[3:]):
        assert secret not in raw
    (entry,) = _lines(path)
    assert entry["msg"] == "calling with [REDACTED] and [REDACTED]"
    assert entry["data"] == {
        "headers": {"Authorization": "[REDACTED]"},
        "keys": ["[REDACTED]", "plain"],
        "model": "gpt-x",
    }


def test_configuring_twice_does_not_duplicate_lines(tmp_path: Path, nini_logger):
    first = configure_logging(tmp_path / "logs")
    second = configure_logging(tmp_path / "logs")
    assert first == second
    logging.getLogger("nini.test").info("once")
    _flush(nini_logger)
    assert [e["msg"] for e in _lines(first)] == ["once"]
    assert sum(1 for h in nini_logger.handlers if h.get_name() == "nini-jsonl") == 1


def test_configuring_another_folder_moves_the_log(tmp_path: Path, nini_logger):
    old = configure_logging(tmp_path / "old")
    logging.getLogger("nini.test").info("to old")
    new = configure_logging(tmp_path / "new")
    logging.getLogger("nini.test").info("to new")
    _flush(nini_logger)
    assert [e["msg"] for e in _lines(old)] == ["to old"]
    assert [e["msg"] for e in _lines(new)] == ["to new"]


def test_unwritable_log_folder_does_not_raise(tmp_path: Path, nini_logger):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    configure_logging(blocker / "logs")  # must not raise: logging must never stop nini
    logging.getLogger("nini.test").warning("still fine")
    assert not any(h.get_name() == "nini-jsonl" for h in nini_logger.handlers)
