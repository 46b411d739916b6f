"""What agent R code may not touch: one list, used by the static policy and by the run-time guard.

The static check (``r_sandbox.policy``) refuses code that refers to these names before it runs;
the worker also evaluates code in an environment where each of them is masked by a stub raising
the same policy error, so a name reached in a way no parser sees still fails.
"""

from __future__ import annotations

# Shell, processes and the outside world.
PROCESS = ("system", "system2", "shell", "shell.exec", "pipe", "browseURL")
NETWORK = ("download.file", "url", "curl", "socketConnection")
FILES = ("file.remove", "file.rename", "file.copy", "unlink", "setwd")
# Running code that a static check cannot see, or reaching functions by a computed name.
DYNAMIC = (
    "eval", "evalq", "parse", "str2lang", "str2expression", "source", "sys.source", "do.call",
    "get", "get0", "mget", "match.fun", "getFunction",
)  # fmt: skip
ENVIRONMENT = ("Sys.getenv", "Sys.setenv", "Sys.setlocale", "environment<-")
NATIVE = (".Internal", ".Primitive", ".Call", ".External", ".C", ".Fortran", "dyn.load", "library.dynam")
SESSION = ("quit", "q", "install.packages", "remove.packages")
# Handles on environments outside the user's own: through them a function is reached whose lookups
# bypass the run-time guard (``e <- baseenv(); e$system``, ``environment(mean)$system``).
ENVIRONMENT_ACCESS = (
    "globalenv", ".GlobalEnv", "baseenv", ".BaseNamespaceEnv", "asNamespace", "getNamespace",
    ".getNamespace", "as.environment", "pos.to.env", "topenv", "parent.env", "parent.env<-",
    "parent.frame", "sys.frame", "sys.frames", "environment", "getAnywhere", "getFromNamespace",
    "assignInNamespace", "fixInNamespace", "getS3method", "unlockBinding", "trace",
)  # fmt: skip
PARALLEL = (
    "mclapply", "mcparallel", "mcfork", "makeCluster", "makeForkCluster", "stopCluster", "clusterEvalQ",
    "clusterApply", "clusterCall", "clusterMap", "parLapply", "parSapply",
)  # fmt: skip

DENIED_GROUPS: dict[str, tuple[str, ...]] = {
    "process": PROCESS,
    "network": NETWORK,
    "files": FILES,
    "dynamic-code": DYNAMIC,
    "environment": ENVIRONMENT,
    "native-code": NATIVE,
    "session": SESSION,
    "environment-access": ENVIRONMENT_ACCESS,
    "parallel": PARALLEL,
}
DENIED_FUNCTIONS: frozenset[str] = frozenset(name for group in DENIED_GROUPS.values() for name in group)

# Environments agent code may not assign into (assign(..., envir = <these>), `<<-` aside).
PROTECTED_ENVIRONMENTS = ("baseenv", "globalenv", ".GlobalEnv", ".BaseNamespaceEnv", "emptyenv")

# Packages agent code may load (library, require, requireNamespace, loadNamespace, pkg::name)
# unless settings add more: base R and what `make test` installs from Debian.
DEFAULT_PACKAGES: frozenset[str] = frozenset({
    "base", "stats", "utils", "graphics", "grDevices", "methods", "datasets", "grid", "splines", "stats4",
    "MASS", "Matrix", "lattice", "mgcv", "nlme",
    "jsonlite", "ggplot2", "dplyr", "tidyr", "readr", "data.table", "tibble", "magrittr", "scales",
    "stringr", "purrr", "forcats", "lubridate", "RColorBrewer", "viridisLite",
})  # fmt: skip


def rule_of(name: str) -> str:
    """The group a denied name belongs to, for messages (``denied-<group>``)."""
    for group, names in DENIED_GROUPS.items():
        if name in names:
            return f"denied-{group}"
    raise KeyError(name)
