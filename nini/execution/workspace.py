"""A session's workspace on disk: the only place agent code may read and write.

``NINI_HOME/sessions/<id>/workspace/`` holds ``artifacts/`` (charts and files), ``datasets/``
(Parquet, one file per dataset name) and ``executions/`` (full outputs too long for the model).
Every path that comes from a user, a model or agent code is made relative by ``relative`` and
opened through ``fs``, which never follows a link (agent code may have planted one).
"""

from __future__ import annotations

import errno
import json
import re
import secrets
from dataclasses import dataclass
from pathlib import Path, PurePath, PurePosixPath

from nini.errors import ErrorCode, NiniError
from nini.rooted import RootedDir

_DATASET_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$")
_SESSION_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
SUBFOLDERS = ("artifacts", "datasets", "executions")
# Which file holds each dataset, as the record says: written by nini before each run, read by the
# kernel's ``datasets`` (which cannot ask the record). Not in datasets/, whose temp files are swept.
DATASET_INDEX = ".nini-datasets.json"
INDEX_LIMIT = 8 * 1024 * 1024  # bytes of the index a reader parses: agent code may have replaced it
# A saved version of a dataset: datasets/NAME@PID-START-RANDOM.parquet ("@" is in no dataset name;
# PID-START names the nini process that is to record it, see runtime_dirs.owner_token).
DATASET_VERSION = re.compile(r"^(?P<name>[A-Za-z0-9_][A-Za-z0-9_.-]{0,63})@(?P<owner>\d+-\d+)-[0-9a-f]{8}\.parquet$")


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
    """Paths of one session's workspace. ``root`` is absolute and resolved (no symlinks).

    ``fs`` is how nini's own process reads and writes here (``rooted.RootedDir``: no link
    followed in any component); ``owner`` is the (uid, gid) nini gives the files it creates, set
    when nini runs as root and the sandbox writes as another user.
    """

    root: Path
    owner: tuple[int, int] | None = None

    @classmethod
    def for_session(cls, sessions_dir: Path, session_id: str, owner: tuple[int, int] | None = None) -> Workspace:
        root = (Path(sessions_dir) / check_session_id(session_id) / "workspace").resolve()
        return cls(root, owner)

    @property
    def fs(self) -> RootedDir:
        return RootedDir(self.root, owner=self.owner)

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
        """Make the workspace and its missing standard folders. What agent code put in their
        place (a link, a file) is left alone here and refused by ``fs`` when it is used."""
        self.root.mkdir(parents=True, exist_ok=True)
        for folder in SUBFOLDERS:
            try:
                self.fs.makedirs(folder)
            except NiniError:
                pass
        return self

    def relative(self, path: str | PurePath) -> str:
        """``path`` (relative to the workspace, or absolute inside it) as a normalised relative path
        with forward slashes, worked out from the text alone (the file system is not consulted).

        Anything that leaves the workspace (``..``, an absolute path elsewhere) is INVALID_ARGUMENT.
        """
        text = str(path)
        if not text or "\x00" in text:
            raise NiniError(ErrorCode.INVALID_ARGUMENT, "empty or invalid path")
        candidate = PurePosixPath(text)
        if candidate.is_absolute():
            if not candidate.is_relative_to(PurePosixPath(self.root)):
                raise NiniError(ErrorCode.INVALID_ARGUMENT, "the path is outside the session workspace", {"path": text})
            candidate = candidate.relative_to(PurePosixPath(self.root))
        parts = [part for part in candidate.parts if part not in ("", ".")]
        if ".." in parts:
            raise NiniError(
                ErrorCode.INVALID_ARGUMENT, f"path {text!r} leaves the session workspace ('..')", {"path": text}
            )
        return "/".join(parts) or "."

    def dataset_path(self, name: str) -> Path:
        return self.datasets_dir / f"{check_dataset_name(name)}.parquet"

    def dataset_file(self, name: str) -> str:
        """Dataset ``name``'s file, relative to the workspace."""
        return f"datasets/{check_dataset_name(name)}.parquet"

    def new_dataset_file(self, name: str, owner: str) -> str:
        """A file for a new save of dataset ``name``, relative: ``datasets/NAME@OWNER-RANDOM.parquet``.

        Every save writes a file of its own, so no save ever changes a file a record names; the
        record's commit is what makes a version current, and readers open the file the record names.
        """
        return f"datasets/{check_dataset_name(name)}@{owner}-{secrets.token_hex(4)}.parquet"

    def recorded_dataset(self, files: dict[str, str], name: str) -> str:
        """The file of dataset ``name`` in ``files`` (the record's view: name -> file); NOT_FOUND,
        listing the session's datasets, when it has no such dataset or its file is gone."""
        relative = files.get(check_dataset_name(name))
        if relative is None or not self.fs.is_file(relative):
            available = ", ".join(sorted(n for n in files if n != name)) or "none"
            raise NiniError(ErrorCode.NOT_FOUND, f"no dataset {name!r} in this session; available: {available}")
        return relative

    def write_dataset_index(self, files: dict[str, str]) -> None:
        """Tell the kernel which file holds each dataset (``DATASET_INDEX``): the record's view."""
        self.fs.write_bytes(DATASET_INDEX, json.dumps({"files": files}, sort_keys=True).encode())

    def indexed_dataset(self, name: str) -> str:
        """The file of dataset ``name`` as the last index says (kernel side), workspace-relative;
        its legacy place ``datasets/NAME.parquet`` when there is no index (a workspace of an older
        nini). Read through ``fs`` like everything else here: the kernel may be the user's own."""
        files = self._index()
        if files is None:
            return self.dataset_file(name)
        relative = files.get(check_dataset_name(name))
        if relative is None or not relative.startswith("datasets/") or ".." in relative:
            raise NiniError(
                ErrorCode.NOT_FOUND, f"no dataset {name!r}; available: {', '.join(sorted(files)) or 'none'}"
            )
        return relative

    def indexed_names(self) -> list[str]:
        """The dataset names of the last index (kernel side), else the legacy files' names."""
        files = self._index()
        return self.dataset_names() if files is None else sorted(files)

    def _index(self) -> dict[str, str] | None:
        try:
            files = json.loads(self.fs.read_bytes(DATASET_INDEX, limit=INDEX_LIMIT))["files"]
        except (NiniError, ValueError, KeyError, TypeError):
            return None
        return {str(k): str(v) for k, v in files.items()} if isinstance(files, dict) else {}

    def existing_dataset(self, name: str) -> str:
        """The relative path of dataset ``name``'s Parquet file; NOT_FOUND, listing the session's
        datasets, when there is no such regular file."""
        relative = self.dataset_file(name)
        if not self.fs.is_file(relative):
            available = ", ".join(self.dataset_names()) or "none"
            raise NiniError(ErrorCode.NOT_FOUND, f"no dataset {name!r} in this session; available: {available}")
        return relative

    def dataset_names(self) -> list[str]:
        names = [entry[: -len(".parquet")] for entry in self.fs.listdir("datasets") if entry.endswith(".parquet")]
        return sorted(name for name in names if _DATASET_NAME.match(name))


def unreadable_dataset(name: str, exc: BaseException, *paths: str) -> str:
    """What to tell the user about dataset ``name`` whose file ``exc`` could not read; the file's
    ``paths`` (host paths among them) are replaced by the dataset's name."""
    detail = str(exc)
    for path in paths:
        detail = detail.replace(path, name)
    return (
        f"dataset {name!r} cannot be read: its file is damaged or not Parquet ({type(exc).__name__}: "
        f"{detail[:300]}); save it again from its source"
    )


def out_of_memory(exc: BaseException) -> bool:
    """Whether a reader's error is really memory running out, whatever its type: pandas' C parser
    raises OSError ENOMEM or a ParserError saying "out of memory", Arrow an ArrowMemoryError or an
    error saying "malloc of size" or, when no thread stack fits in the address space left,
    "Failed to launch worker thread". Such a file is too large for the limit, not damaged."""
    if isinstance(exc, MemoryError) or (isinstance(exc, OSError) and exc.errno == errno.ENOMEM):
        return True
    text = str(exc).lower()
    return any(
        words in text
        for words in ("out of memory", "cannot allocate memory", "malloc of size", "failed to launch worker thread")
    )


def dataset_too_large(name: str, limit_bytes: int | None, setting: str = "execution.memory_limit_mb") -> str:
    """What to tell the user about dataset ``name`` that ran out of memory while being read under
    an address-space limit of ``limit_bytes`` (None: no limit known): too large, never "damaged"."""
    if limit_bytes is None:
        return f"dataset {name!r} cannot be read: it needs more memory than this kernel has"
    return (
        f"dataset {name!r} cannot be read: it needs more memory than the limit of {limit_bytes // 2**20:,} MiB "
        f"({setting}); work on a part of it, or raise the limit"
    )
