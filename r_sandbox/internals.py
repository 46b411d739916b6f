"""R's internal functions taken out of the worker's R, and the narrow uses of two of them R keeps.

guard.R replaces what agent code may not call in R's namespaces, but code can run where R's own
bindings are found (a function made around ``baseenv()``), and there ``.Internal(Sys.setenv(...))``
needs no binding at all. ``.Internal`` and R's compiled code find an internal function in its
symbol, so clearing it there (``SET_INTERNAL``, exported by libR) leaves no route: R then says
"there is no .Internal function 'Sys.setenv'", which the worker reports as the policy's refusal.

What R's own code needs of two of them is done here, checked, for guard.R's replacements:
loadNamespace sets and unsets ``_R_NS_LOAD_`` (nothing else may be set), and ``setwd`` moves only
within the workspace (``withr::with_dir``, a srcfile's folder).
"""

from __future__ import annotations

import ctypes
import os
import platform
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import rpy2.rinterface as ri
import rpy2.situation
from rpy2.rinterface_lib import openrlib

NS_LOAD = "_R_NS_LOAD_"


def remove_internals(symbols: Iterable[str]) -> None:
    """Clear the internal function of each symbol in this process's R (call from R's thread)."""
    lib = ctypes.CDLL(rpy2.situation.get_rlib_path(openrlib.R_HOME, platform.system()))
    install = lib.Rf_install
    install.restype, install.argtypes = ctypes.c_void_p, [ctypes.c_char_p]
    internal = lib.INTERNAL
    internal.restype, internal.argtypes = ctypes.c_void_p, [ctypes.c_void_p]
    set_internal = lib.SET_INTERNAL
    set_internal.restype, set_internal.argtypes = None, [ctypes.c_void_p, ctypes.c_void_p]
    nil = ctypes.c_void_p.in_dll(lib, "R_NilValue").value
    for name in symbols:
        symbol = install(name.encode())
        set_internal(symbol, nil)
        if internal(symbol) != nil:
            raise RuntimeError(f"R's internal function {name!r} could not be removed")


def helpers(workspace: Path) -> dict[str, Any]:
    """guard.R's ``helpers``: R functions (rternalized; keep a reference) that do the checked work."""
    root = Path(os.path.realpath(workspace))

    def set_ns_load(value: Any) -> Any:
        """Set (one string) or unset (none) _R_NS_LOAD_, the only variable R's own code sets."""
        if len(value):
            os.environ[NS_LOAD] = str(value[0])
        else:
            os.environ.pop(NS_LOAD, None)
        return ri.BoolSexpVector([True])

    def change_dir(value: Any) -> Any:
        """chdir within the workspace: c("ok", old folder), c("refused") or c("error")."""
        target = Path(os.path.realpath(os.path.join(os.getcwd(), str(value[0]))))
        if target != root and root not in target.parents:
            return ri.StrSexpVector(["refused"])
        old = os.getcwd()
        try:
            os.chdir(target)
        except OSError:
            return ri.StrSexpVector(["error"])
        return ri.StrSexpVector(["ok", old])

    functions: dict[str, Callable[[Any], Any]] = {"set_ns_load": set_ns_load, "change_dir": change_dir}
    return {name: ri.rternalize(function) for name, function in functions.items()}
