"""Token counting with tiktoken's ``cl100k_base``, fully offline.

tiktoken downloads its encodings on first use, which fails on machines without internet. nini ships
OpenAI's published ``cl100k_base.tiktoken`` file itself (``nini/data/cl100k_base.tiktoken.gz``, 757 KiB,
the same bytes tiktoken would download), so the first use in a process seeds tiktoken's cache with it
(DESIGN.md section 6): the file goes to ``<cache dir>/<sha1 of the encoding URL>``, the name tiktoken
looks for, and tiktoken then loads it and checks its sha256 itself. One tokenizer library (tiktoken,
fast) and one data file, instead of a second pure-Python tokenizer package carried for its data.

The cache dir is ``TIKTOKEN_CACHE_DIR`` when set; otherwise ``NINI_HOME/cache/tiktoken`` and, where
NINI_HOME cannot be written (a read-only home), a per-user folder in the system temp dir. The seeded
file is written atomically, so processes starting together never read half of it.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import os
import tempfile
import threading
from importlib import resources
from pathlib import Path

import tiktoken

from nini.errors import ErrorCode, NiniError
from nini.fsutil import atomic_write_bytes

ENCODING_NAME = "cl100k_base"
_ENCODING_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
# tiktoken's own expected hash for that URL (tiktoken_ext/openai_public.py); checked here too so a
# mismatching file is refused before tiktoken, finding it bad, would try the network instead.
_ENCODING_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
_CACHE_KEY = hashlib.sha1(_ENCODING_URL.encode()).hexdigest()
_CACHE_ENV = "TIKTOKEN_CACHE_DIR"

# The Encoding is immutable and costs ~0.1 s to build: one per process, built under a lock.
_lock = threading.Lock()
_encoding: tiktoken.Encoding | None = None


def encoding() -> tiktoken.Encoding:
    """The process's ``cl100k_base`` Encoding, loaded offline on first use (thread-safe).

    Raises ``NiniError(INTERNAL)`` saying what is wrong when it cannot be loaded; the next call
    tries again.
    """
    global _encoding
    enc = _encoding
    if enc is not None:
        return enc
    with _lock:
        if _encoding is None:
            _encoding = _load()
        return _encoding


def encode(text: str) -> list[int]:
    """Token ids of ``text``; special-token markers such as ``<|endoftext|>`` count as plain text."""
    return encoding().encode_ordinary(text)


def decode(ids: list[int]) -> str:
    """Text of token ids; a UTF-8 character cut in half at either end of a slice is dropped."""
    return encoding().decode_bytes(ids).decode("utf-8", errors="ignore")


def count_tokens(text: str) -> int:
    """How many ``cl100k_base`` tokens ``text`` is."""
    return len(encode(text))


@functools.lru_cache(maxsize=256)
def count_repeated(text: str) -> int:
    """``count_tokens`` of a text counted again and again unchanged (a session's system prompt and
    summary, each turn): remembered for the last 256 such texts instead of encoded each time."""
    return count_tokens(text)


def _load() -> tiktoken.Encoding:
    try:
        _use_seeded_cache()
        return tiktoken.get_encoding(ENCODING_NAME)
    except NiniError:
        raise
    except Exception as exc:  # tiktoken raises ValueError, OSError, requests errors, ...
        raise NiniError(
            ErrorCode.INTERNAL,
            f"cannot load the {ENCODING_NAME} token encoding ({type(exc).__name__}: {exc})",
            {"cache_dir": os.environ.get(_CACHE_ENV)},
        ) from exc


def _use_seeded_cache() -> None:
    """Seed a cache dir and point tiktoken at it."""
    explicit = os.environ.get(_CACHE_ENV)
    if explicit:  # the user's choice wins (an empty value turns tiktoken's cache off: it would download)
        try:
            _seed(Path(explicit))
        except _CacheUnwritable as exc:
            raise NiniError(
                ErrorCode.INTERNAL,
                f"cannot load the {ENCODING_NAME} token encoding: {_CACHE_ENV}={explicit} does not hold it "
                f"and cannot be written ({exc}); unset {_CACHE_ENV} or make it writable",
            ) from exc
        return
    problems = []
    for candidate in _default_cache_dirs():
        try:
            _seed(candidate)
        except _CacheUnwritable as exc:
            problems.append(str(exc))
            continue
        # tiktoken reads its cache location only from the environment.
        os.environ[_CACHE_ENV] = str(candidate)
        return
    raise NiniError(
        ErrorCode.INTERNAL,
        f"cannot load the {ENCODING_NAME} token encoding: no writable cache folder ({'; '.join(problems)}); "
        f"set {_CACHE_ENV} to a writable folder",
    )


def _default_cache_dirs() -> list[Path]:
    from nini.config import resolve_home

    user = os.getuid() if hasattr(os, "getuid") else os.getpid()
    return [resolve_home() / "cache" / "tiktoken", Path(tempfile.gettempdir()) / f"nini-tiktoken-{user}"]


class _CacheUnwritable(Exception):
    """A cache folder that neither holds the encoding nor can be written."""


def _seed(cache_dir: Path) -> None:
    """Put the shipped ``cl100k_base`` at ``cache_dir/<sha1(url)>`` unless a good copy is there."""
    target = cache_dir / _CACHE_KEY
    try:
        if hashlib.sha256(target.read_bytes()).hexdigest() == _ENCODING_SHA256:
            return
    except OSError:
        pass  # missing or unreadable: write it
    data = _bundled_encoding()
    try:
        cache_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        # atomic: processes seeding at the same moment each replace the file with identical bytes
        atomic_write_bytes(target, data)
    except OSError as exc:
        raise _CacheUnwritable(f"cannot create {cache_dir}: {exc.strerror or exc}") from exc
    except NiniError as exc:  # atomic_write_bytes' own error
        raise _CacheUnwritable(exc.message) from exc


def _bundled_encoding() -> bytes:
    try:
        packed = resources.files("nini").joinpath("data", f"{ENCODING_NAME}.tiktoken.gz").read_bytes()
        data = gzip.decompress(packed)
    except (OSError, EOFError) as exc:  # gzip.BadGzipFile is an OSError
        raise NiniError(
            ErrorCode.INTERNAL,
            f"cannot load the {ENCODING_NAME} token encoding: nini's copy (nini/data) is missing or unreadable "
            f"({type(exc).__name__})",
        ) from exc
    if hashlib.sha256(data).hexdigest() != _ENCODING_SHA256:
        raise NiniError(
            ErrorCode.INTERNAL,
            f"cannot load the {ENCODING_NAME} token encoding: nini's copy does not match tiktoken's hash",
        )
    return data
