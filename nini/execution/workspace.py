"""A session's workspace on disk: the only place agent code may read and write.

``NINI_HOME/sessions/<id>/workspace/`` holds ``artifacts/`` (charts and files), ``datasets/``
(Parquet, one file per dataset name) and ``executions/`` (full outputs too long for the model).
Every path that comes from a user, a model or agent code goes through ``resolve``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from nini.errors import ErrorCode, NiniError

_DATASET_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$")
_SESSION_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def check_session_id(session_id: str) -> str:
    """Session ids become folder names, so only safe characters are allowed."""
    if not isinstance(session_id, str) or not _SESSION_ID.match(session_id):
        raise NiniError(ErrorCode.INVALID_ARGUMENT, f"invalid session id {session_id!r}")
    return session_id


def check_dataset_name(name: str) -> str:
    """Dataset names become file names (``<name>.parquet``) and keys in ``datasets[...]``."""
    if not isinstance(name, str) or not _DATASET_NAME.match(name) or name.endswith(".parquet"):
        raise NiniError(
            ErrorCode.INVALID_ARGUMENT,
            f"invalid dataset name {name!r}: use 1-64 letters, digits, '_', '.' or '-', not starting with '.' or '-'",
        )
    return name


@dataclass(frozen=True)
class Workspace:
    """Paths of one session's workspace. ``root`` is absolute and resolved (no symlinks)."""

    root: Path

    @classmethod
    def for_session(cls, sessions_dir: Path, session_id: str) -> Workspace:
        root = (Path(sessions_dir) / check_session_id(session_id) / "workspace").resolve()
        return cls(root)

    @property
    def artifacts_dir(self) -> Path:
        return self.root / "artifacts"

    @property
    def datasets_dir(self) -> Path:
        return self.root / "datasets"

    @property
    def executions_dir(self) -> Path:
        return self.root / "executions"

    def ensure(self) -> Workspace:
        for folder in (self.artifacts_dir, self.datasets_dir, self.executions_dir):
            folder.mkdir(parents=True, exist_ok=True)
        return self

    def resolve(self, path: str | Path) -> Path:
        """``path`` (relative to the workspace, or absolute inside it) as an absolute path.

        Anything that leaves the workspace, through ``..`` or a symlink, is INVALID_ARGUMENT.
        """
        if not str(path) or "\x00" in str(path):
            raise NiniError(ErrorCode.INVALID_ARGUMENT, "empty or invalid path")
        candidate = Path(path) if Path(path).is_absolute() else self.root / path
        resolved = candidate.resolve()
        if resolved != self.root and self.root not in resolved.parents:
            raise NiniError(
                ErrorCode.INVALID_ARGUMENT,
                f"path {str(path)!r} is outside the session workspace",
                {"path": str(path)},
            )
        return resolved

    def relative(self, path: Path) -> str:
        """``path`` relative to the workspace root, with forward slashes (what records store)."""
        return self.resolve(path).relative_to(self.root).as_posix()

    def dataset_path(self, name: str) -> Path:
        return self.datasets_dir / f"{check_dataset_name(name)}.parquet"

    def existing_dataset(self, name: str) -> Path:
        """The Parquet file of dataset ``name``; NOT_FOUND, listing the session's datasets, when absent."""
        path = self.dataset_path(name)
        if not path.is_file():
            available = ", ".join(self.dataset_names()) or "none"
            raise NiniError(ErrorCode.NOT_FOUND, f"no dataset {name!r} in this session; available: {available}")
        return path

    def dataset_names(self) -> list[str]:
        if not self.datasets_dir.is_dir():
            return []
        return sorted(p.stem for p in self.datasets_dir.glob("*.parquet"))
