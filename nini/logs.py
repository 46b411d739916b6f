"""Structured logging: one JSON object per line in ``NINI_HOME/logs/nini.jsonl``.

Loggers are the stdlib ``nini.*`` hierarchy; pass structured fields with ``extra={"data": {...}}``.
A filter masks anything that looks like an API key before a record is written, so a key that
slips into a message never reaches the disk.
"""

from __future__ import annotations

import json
import logging
import logging.handlers
import re
import sys
from datetime import UTC, datetime
from pathlib import Path

from nini.fsutil import out_of_space

LOG_FILE = "nini.jsonl"
_HANDLER_NAME = "nini-jsonl"
_SECRET = re.compile(r"\b(sk|pk|rk|key|api|tok)[-_][A-Za-z0-9_\-]{12,}|\bBearer\s+[A-Za-z0-9._\-]{12,}", re.I)


def redact(text: str) -> str:
    """Mask API-key-shaped substrings."""
    return _SECRET.sub("[REDACTED]", text)


class JsonLineFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "msg": redact(record.getMessage()),
        }
        data = getattr(record, "data", None)
        if isinstance(data, dict):
            entry["data"] = json.loads(redact(json.dumps(data, default=str, ensure_ascii=False)))
        if record.exc_info:
            entry["exc"] = redact(self.formatException(record.exc_info))
        return json.dumps(entry, ensure_ascii=False, default=str)


class _LogFile(logging.handlers.RotatingFileHandler):
    """The log file. A record that does not fit on a full disk is dropped: logging's own handling
    would print a "--- Logging error ---" traceback on stderr for every record (what failed is said
    as NO_SPACE by nini itself)."""

    def handleError(self, record: logging.LogRecord) -> None:  # noqa: N802 - logging's name
        if not out_of_space(sys.exc_info()[1] or Exception()):
            super().handleError(record)


def configure_logging(logs_dir: Path, level: str = "INFO") -> Path:
    """Send the ``nini`` loggers to ``logs_dir/nini.jsonl`` (rotating); safe to call again."""
    logger = logging.getLogger("nini")
    logger.setLevel(level)
    path = Path(logs_dir) / LOG_FILE
    for handler in list(logger.handlers):
        if handler.get_name() == _HANDLER_NAME:
            if Path(getattr(handler, "baseFilename", "")) == path.resolve():
                return path
            logger.removeHandler(handler)
            handler.close()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handler = _LogFile(path, maxBytes=5_000_000, backupCount=3, encoding="utf-8")
    except OSError:
        return path  # an unwritable log folder must not stop nini; `nini doctor` reports NINI_HOME
    handler.set_name(_HANDLER_NAME)
    handler.setFormatter(JsonLineFormatter())
    logger.addHandler(handler)
    return path
