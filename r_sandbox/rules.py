"""What agent R code may not touch: one list, used by the static policy and by the run-time guard.

The static check (``r_sandbox.policy``) refuses code that reaches these before it runs; the worker
evaluates code where each denied name is masked by a stub raising the same policy error, so a name
reached in a way no parser sees still fails. Masks only cover names looked up from the user's code:
a function fetched out of an environment (``.subset2(baseenv(), "Sys.setenv")``) or code that runs
in R's own environments (a formula made with ``env = baseenv()`` turned into a function) finds R's
own bindings. So what agent code must never do is taken out of R itself, whoever calls:
``REPLACED`` functions become the refusing stub in R's namespaces, ``CHECKED`` ones keep only the
narrow use R's own code makes of them, and ``REMOVED_INTERNALS`` are gone from ``.Internal``.
"""

from __future__ import annotations

# Shell, programs and editors (utils' editors and help.start start programs too).
PROCESS = (
    "system",
    "system2",
    "shell",
    "shell.exec",
    "pipe",
    "browseURL",
    "edit",
    "fix",
    "file.edit",
    "vi",
    "emacs",
    "pico",
    "xemacs",
    "xedit",
    "help.start",
    "bitmap",
    "dev2bitmap",
)
NETWORK = (
    "download.file",
    "url",
    "curl",
    "socketConnection",
    "socketAccept",
    "serverSocket",
    "make.socket",
    "read.socket",
    "write.socket",
    "curlGetHeaders",
    "nsl",
)
FILES = (
    "file.remove",
    "file.rename",
    "file.copy",
    "unlink",
    "setwd",
    "file.symlink",
    "file.link",
    "Sys.chmod",
    "Sys.umask",
    "Sys.setFileTime",
)
# Running code a static check cannot see: from text, or with an environment it chooses. (A
# function's body or formals may be replaced: it still runs in the user's environment, masked.)
DYNAMIC = (
    "eval",
    "evalq",
    "eval.parent",
    "parse",
    "str2lang",
    "str2expression",
    "source",
    "sys.source",
    "as.function",
    "dget",
)
ENVIRONMENT = (
    "Sys.getenv",
    "Sys.setenv",
    "Sys.unsetenv",
    "Sys.setlocale",
    "environment<-",
    "parent.env<-",
    "unlockBinding",
    "assignInNamespace",
    "assignInMyNamespace",
    "fixInNamespace",
    "getFromNamespace",
)
NATIVE = (
    ".Internal",
    ".Primitive",
    ".Call",
    ".External",
    ".External2",
    ".C",
    ".Fortran",
    ".Call.graphics",
    ".External.graphics",
    "dyn.load",
    "dyn.unload",
    "library.dynam",
    "library.dynam.unload",
    "getNativeSymbolInfo",
)
SESSION = ("quit", "q", "install.packages", "remove.packages", "update.packages")
PARALLEL = (
    "mclapply",
    "mcmapply",
    "mcMap",
    "mcparallel",
    "mccollect",
    "mcfork",
    "pvec",
    "makeCluster",
    "makeForkCluster",
    "makePSOCKcluster",
    "stopCluster",
    "clusterEvalQ",
    "clusterApply",
    "clusterCall",
    "clusterMap",
    "clusterExport",
    "parLapply",
    "parSapply",
    "parApply",
)

DENIED_GROUPS: dict[str, tuple[str, ...]] = {
    "process": PROCESS,
    "network": NETWORK,
    "files": FILES,
    "dynamic-code": DYNAMIC,
    "environment": ENVIRONMENT,
    "native-code": NATIVE,
    "session": SESSION,
    "parallel": PARALLEL,
}
DENIED_FUNCTIONS: frozenset[str] = frozenset(name for group in DENIED_GROUPS.values() for name in group)
# Replaced in R's namespaces by a refusing stub, whoever calls them (package code too): nothing
# legitimate in the sandbox runs a program, opens a connection, ends the session, makes links, sets
# the umask, rewrites a namespace or runs a file's text as code.
REPLACED: frozenset[str] = frozenset(
    PROCESS
    + NETWORK
    + SESSION
    + (
        "Sys.umask",
        "file.symlink",
        "file.link",
        "assignInNamespace",
        "assignInMyNamespace",
        "fixInNamespace",
        "dget",
    )
)
# Replaced by a version that allows only what R's own code needs, whoever calls: loadNamespace sets
# and unsets _R_NS_LOAD_ (nothing else), setwd stays inside the workspace (withr::with_dir, srcfiles),
# dyn.load loads only files of R's installed libraries (packages' own DLLs, library.dynam's too).
CHECKED = ("Sys.setenv", "Sys.unsetenv", "setwd", "dyn.load")
# R's internal functions taken out of `.Internal` in the worker (symbol -> the function named in the
# refusal): code running in R's own environments, which finds R's own bindings, cannot reach them
# either. What R's code still needs of them (setenv for _R_NS_LOAD_, chdir) the worker does itself.
REMOVED_INTERNALS: dict[str, str] = {
    "system": "system",
    "pipe": "pipe",
    "quit": "quit",
    "url": "url",
    "socketConnection": "socketConnection",
    "socketAccept": "socketAccept",
    "serverSocket": "serverSocket",
    "curlGetHeaders": "curlGetHeaders",
    "curlDownload": "download.file",
    "Sys.setenv": "Sys.setenv",
    "Sys.unsetenv": "Sys.unsetenv",
    "setwd": "setwd",
    "Sys.umask": "Sys.umask",
    "file.symlink": "file.symlink",
    "file.link": "file.link",
}

# Functions that fetch an object by name: (formals in order, the formals that carry names). A
# literal name is checked like any name; anything computed is refused. For ``match.fun``,
# ``do.call`` and ``exec`` a bare symbol is a function object, which is fine unless denied.
LOOKUPS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "get": (("x", "pos", "envir", "mode", "inherits"), ("x",)),
    "get0": (("x", "envir", "mode", "inherits", "ifnotfound"), ("x",)),
    "mget": (("x", "envir", "mode", "ifnotfound", "inherits"), ("x",)),
    "dynGet": (("x", "ifnotfound", "minframe", "inherits"), ("x",)),
    "getAnywhere": (("x",), ("x",)),
    "getFunction": (("name", "generic", "mustFind", "where"), ("name",)),
    "getS3method": (("f", "class", "optional", "envir"), ("f", "class")),
    "match.fun": (("FUN", "descend"), ("FUN",)),
    "do.call": (("what", "args", "quote", "envir"), ("what",)),
    "exec": ((".fn", "...", ".env"), (".fn",)),
}
FUNCTION_VALUE_LOOKUPS = frozenset({"match.fun", "do.call", "exec"})
# Functions that take a member out of their first argument by name, as ``[[`` does: on an
# environment (or its members as a list) each is a lookup of the name that follows (their formals).
ENV_ACCESSORS: dict[str, tuple[str, ...]] = {
    ".subset2": ("x", "..."),
    ".subset": ("x", "..."),
    "getElement": ("object", "name"),
    "pluck": (".x", "..."),
    "chuck": (".x", "..."),
    "extract2": ("x", "..."),
    "extract": ("x", "..."),
}
# Functions that make a formula or a function around an environment they are given: handed R's own
# (baseenv(), a namespace, globalenv), the code in it finds R's own bindings, past the masks.
ENVIRONMENT_TAKERS: dict[str, tuple[tuple[str, ...], str]] = {
    "as.formula": (("object", "env"), "env"),
    "formula": (("x", "env", "..."), "env"),
    "reformulate": (("termlabels", "response", "intercept", "env"), "env"),
    "body<-": (("fun", "envir", "value"), "envir"),
    "formals<-": (("fun", "envir", "value"), "envir"),
    "body": (("fun", "envir"), "envir"),
    "formals": (("fun", "envir"), "envir"),  # body(f, envir = e) <- x
    "local": (("expr", "envir"), "envir"),
    "new_function": (("args", "body", "env"), "env"),
    "new_formula": (("lhs", "rhs", "env"), "env"),
    "as_function": ((".x", ".env"), ".env"),
    "structure": ((".Data", "..."), ".Environment"),
}
# Functions that call the functions they are given: a function named as a value is handed on there,
# and an environment handed to them has its members called.
HIGHER_ORDER = frozenset(
    {
        "lapply",
        "sapply",
        "vapply",
        "mapply",
        "Map",
        "Reduce",
        "Filter",
        "Position",
        "Find",
        "do.call",
        "outer",
        "apply",
        "tapply",
        "rapply",
        "eapply",
        "Vectorize",
        "map",
        "map2",
        "pmap",
        "imap",
        "walk",
        "walk2",
        "exec",
        "invoke",
        "reduce",
        "keep",
        "discard",
        "compose",
        "partial",
        "match.fun",
    }
)

# Arguments that name a program or a pipe: the function would run it.
PROGRAM_ARGUMENTS: dict[str, tuple[str, ...]] = {
    "tar": ("tar", "extra_flags"),
    "untar": ("tar", "extras"),
    "zip": ("zip", "flags", "extras"),
    "unzip": ("unzip",),
    "file.show": ("pager",),
    "fread": ("cmd",),
    "options": ("editor", "pager", "browser", "unzip", "pdfviewer", "printcmd", "texi2dvi", "mailer"),
}
# Graphics devices whose file may be "|command": a pipe to a program.
PIPE_DEVICES: dict[str, tuple[str, ...]] = {
    "pdf": ("file", "width", "height"),
    "postscript": ("file", "onefile", "family"),
    "xfig": ("file", "onefile", "encoding"),
    "pictex": ("file", "width", "height"),
}
# Definitions that change what R's own functions do for the whole session.
OVERRIDES = (
    "setMethod",
    "setGeneric",
    "setReplaceMethod",
    "removeMethod",
    "registerS3method",
    ".S3method",
    "setValidity",
)

# Environments agent code may not assign into (assign(..., envir = <these>), `<<-` aside).
PROTECTED_ENVIRONMENTS = ("baseenv", "globalenv", ".GlobalEnv", ".BaseNamespaceEnv", "emptyenv")

# Packages agent code may load (library, require, requireNamespace, loadNamespace, pkg::name)
# unless settings add more: base R, what `make test` installs from Debian, and the analysis
# packages of the spec (a missing one is reported as not installed, not as a policy violation).
DEFAULT_PACKAGES: frozenset[str] = frozenset(
    {
        "base",
        "stats",
        "utils",
        "graphics",
        "grDevices",
        "methods",
        "datasets",
        "grid",
        "splines",
        "stats4",
        "MASS",
        "Matrix",
        "lattice",
        "mgcv",
        "nlme",
        "jsonlite",
        "ggplot2",
        "dplyr",
        "tidyr",
        "readr",
        "data.table",
        "tibble",
        "magrittr",
        "scales",
        "stringr",
        "purrr",
        "forcats",
        "lubridate",
        "RColorBrewer",
        "viridisLite",
        "lme4",
        "survival",
        "broom",
        "car",
        "emmeans",
        "forecast",
        "zoo",
        "janitor",
        "patchwork",
        "cowplot",
        "ggpubr",
        "viridis",
    }
)


def rule_of(name: str) -> str:
    """The group a denied name belongs to, for messages (``denied-<group>``)."""
    for group, names in DENIED_GROUPS.items():
        if name in names:
            return f"denied-{group}"
    raise KeyError(name)


def debian_package(package: str) -> str:
    """The Debian package of an R package (``r-cran-lme4``), for "not installed" messages."""
    return f"r-cran-{package.lower().replace('.', '')}"
