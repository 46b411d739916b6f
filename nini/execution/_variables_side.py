"""Runs inside kernels: copies of a notebook's variables, for agent code in the sandbox.

Sandbox first: the agent's code runs in nini's sandboxed kernel, and the notebook's variables it
asks for are copied there. ``export`` runs in the user's own kernel (nini's code, not the agent's):
each variable is pickled into the session workspace through ``RootedDir`` (no link followed: the
sandbox writes that folder), and one larger than the limit is only described. ``load`` runs in
the sandboxed kernel and binds the copies by name, removing their files. The user's objects never
change: the sandbox holds copies, and nothing travels back.

Both are reached with ``__import__("nini.execution._variables_side", ...)`` in a silent request's
``user_expressions``; their value's repr is JSON (``_kernel_side._Json``).
"""

from __future__ import annotations

import pickle
import time
from pathlib import Path
from typing import Any, BinaryIO

from nini.errors import NiniError
from nini.execution._kernel_side import _Json, _user_ns
from nini.execution.namespace import HIDDEN, _kind
from nini.rooted import RootedDir

FOLDER = "variables"


class _TooLarge(Exception):
    pass


class _Bounded:
    """A binary file that refuses to grow past ``limit`` bytes (pickle writes through it)."""

    def __init__(self, handle: BinaryIO, limit: int) -> None:
        self._handle, self._limit, self.written = handle, limit, 0

    def write(self, data: Any) -> int:
        self.written += memoryview(data).nbytes
        if self.written > self._limit:
            raise _TooLarge
        return self._handle.write(data)


def export(root: str, names: list[str] | None, limit: int, token: str, deadline: float, budget: int = 0) -> _Json:
    """Pickle each of ``names`` into ``variables/<token>-<name>.pkl``; what was copied and what not.

    ``{"copied": {name: {file, bytes, type}}, "refused": {name: {reason, detail, description}}}``,
    reason one of missing, too_large, unpicklable, refused (the workspace refused the file).
    ``names`` None is a prefetch: the data variables (DataFrames, arrays, scalars, ...) smallest
    first, while their sizes add up to at most ``budget``; what cannot be copied is left out
    silently. Nothing is done past ``deadline`` (wall-clock seconds): a request that waited behind
    the user's own long cell must not write files nobody will read.
    """
    copied: dict[str, Any] = {}
    refused: dict[str, Any] = {}
    if time.time() > deadline:
        return _Json({"copied": {}, "refused": {}, "late": True})
    namespace = _user_ns()
    fs = RootedDir(Path(root))
    prefetch = names is None
    if names is None:  # a prefetch: no one variable may take more than the whole budget either
        limit = min(limit, budget)
        names = _small_data(namespace, limit)
    for name in names:
        if name not in namespace:
            refused[name] = {"reason": "missing", "detail": f"the notebook has no variable {name!r}"}
            continue
        value = namespace[name]
        estimate = _estimate(value)
        if estimate is not None and estimate > limit:
            refused[name] = {
                "reason": "too_large",
                "detail": f"about {estimate:,} bytes",
                "description": _describe(name, value),
            }
            continue
        relative = f"{FOLDER}/{token}-{name}.pkl"
        bounded: list[_Bounded] = []

        def write(handle: BinaryIO, value: Any = value, bounded: list[_Bounded] = bounded) -> None:
            bounded.append(_Bounded(handle, limit))
            pickle.dump(value, bounded[-1], protocol=pickle.HIGHEST_PROTOCOL)

        try:
            fs.write_with(relative, write, durable=False)  # a copy for this run: worthless after a crash
        except _TooLarge:
            refused[name] = {
                "reason": "too_large",
                "detail": f"more than {limit:,} bytes pickled",
                "description": _describe(name, value),
            }
        except NiniError as exc:
            refused[name] = {"reason": "refused", "detail": exc.message}
        except Exception as exc:  # a lambda, an open file, a connection: not data that can be copied
            refused[name] = {
                "reason": "unpicklable",
                "detail": f"{type(exc).__name__}: {str(exc)[:200]}",
                "description": _describe(name, value),
            }
        else:
            copied[name] = {"file": relative, "bytes": bounded[-1].written, "type": type(value).__name__}
    return _Json({"copied": copied, "refused": {} if prefetch else refused})


def load(root: str, files: dict[str, str]) -> _Json:
    """Bind each ``name`` to the object unpickled from its file, and remove the file: ``{loaded: [...],
    failed: {name: why}}``."""
    namespace = _user_ns()
    fs = RootedDir(Path(root))
    loaded, failed = [], {}
    for name, relative in files.items():
        try:
            with fs.reader(relative) as handle:
                namespace[name] = pickle.load(handle)
            loaded.append(name)
        except NiniError as exc:
            failed[name] = exc.message
        except Exception as exc:  # a class the sandbox's interpreter lacks, say
            failed[name] = f"{type(exc).__name__}: {str(exc)[:200]}"
        finally:
            try:
                fs.unlink(relative)
            except NiniError:
                pass
    return _Json({"loaded": loaded, "failed": failed})


def _small_data(namespace: dict[str, Any], budget: int) -> list[str]:
    """The names of the namespace's data variables, smallest first, whose sizes add up to at most
    ``budget`` bytes (modules, functions, classes and private names are not data)."""
    sized = []
    for name, value in list(namespace.items()):
        if name.startswith("_") or name in HIDDEN:
            continue
        try:
            found = _kind(value)
        except Exception:  # a hostile or broken object: not copied
            continue
        if found is not None:
            sized.append((found[0], name))
    chosen, used = [], 0
    for size, name in sorted(sized):
        if used + size > budget:
            break
        chosen.append(name)
        used += size
    return chosen


def _estimate(value: Any) -> int | None:
    """Bytes ``value`` holds, from its shape and dtypes (no scan), for the data types that can be
    big; None for anything else (the bounded pickle decides then)."""
    try:
        found = _kind(value)
    except Exception:
        return None
    return found[0] if found is not None and found[0] > 8 else None


def _describe(name: str, value: Any) -> str:
    """One line saying what ``value`` is, as the agent's prompt describes variables."""
    try:
        found = _kind(value)
        if found is not None:
            return found[1](name, value).removeprefix("- ")
    except Exception:
        pass
    return f"`{name}`: {type(value).__name__}"
