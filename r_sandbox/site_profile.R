# R's site profile in a nini R worker (R_PROFILE points here): it runs in the base environment
# while R starts, before the default packages are attached.
#
# The worker may not run programs (the sandbox refuses every execve once the worker has
# started). Sys.which() asks `/usr/bin/which` through a shell, and utils' .onLoad calls it
# (for `uname`); without this, the shell's refusal is an error and utils, then stats, fail to
# load. Here Sys.which() answers "" (not found) for what it cannot ask about, as it does for a
# program that is not installed.
local({
    ask <- get("Sys.which", envir = baseenv())
    quiet <- function(names) {
        found <- tryCatch(ask(names), error = function(e) NULL)
        if (is.null(found)) {
            found <- rep("", length(names))
            names(found) <- names
        }
        found
    }
    environment(quiet) <- baseenv()
    for (where in list(baseenv(), .BaseNamespaceEnv)) {
        locked <- bindingIsLocked("Sys.which", where)
        if (locked) unlockBinding("Sys.which", where)
        assign("Sys.which", quiet, envir = where)
        if (locked) lockBinding("Sys.which", where)
    }
})
