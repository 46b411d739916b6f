# The worker's guard, in R: the environments user code sees, and what R may not do in this worker,
# whoever calls. r_sandbox/session.py sources this with worker_r.R into one private environment
# (parent: base), calls harden() once, before any user code, then setup().
#
# Masks alone do not hold: they cover the names user code looks up, but a function can be fetched out
# of an environment (.subset2(baseenv(), "Sys.setenv"), eapply, purrr::pluck) and code can run where
# R's own bindings are found (a formula made with env = baseenv() turned into a function by purrr).
# So what agent code must never do is changed in R itself: what harden() installs is what every
# lookup finds. (r_sandbox.internals also takes the matching .Internal()s out of R.)

# --- the environments user code sees -------------------------------------------------------------

# `denied[i]` masked by a function that signals the policy error `messages[i]` (class
# nini_policy_error) without evaluating its arguments. Package code is unaffected: it finds these
# names in its namespace and imports, never in the guard.
setup <- function(denied, messages) {
  guard <- new.env(parent = globalenv())
  for (i in seq_along(denied)) {
    mask <- if (denied[[i]] %in% NATIVE_CALLS) native_mask(denied[[i]], messages[[i]]) else stub(messages[[i]])
    assign(denied[[i]], mask, envir = guard)
  }
  assign("local", sealed(safe_local), envir = guard)
  # S3 dispatch from user code looks in the calling environment first, so these shadow ggplot2's
  # own methods for calls made by user code only (ggsave and friends are not counted as printed).
  tracker <- sealed(track_ggplot, state = state)
  assign("print.ggplot", tracker, envir = guard)
  assign("plot.ggplot", tracker, envir = guard)
  assign("print.nini_datasets", sealed(print_datasets), envir = guard)
  lockEnvironment(guard, bindings = TRUE)  # `system <<- ...` must not replace a mask
  setHook("before.plot.new", function() if (is_recording() && graphics::par("page")) snapshot())
  setHook("before.grid.newpage", function() if (is_recording()) snapshot())
  options(cli.num_colors = 1L, crayon.enabled = FALSE, warn = 0L)
  # hooks and options lead back to the worker's functions: none of them may be changed from there
  lockEnvironment(parent.env(environment()), bindings = TRUE)
  new.env(parent = guard)
}

# Packages evaluate calls they wrote with their own routines where user code's names are found:
# data.table turns `mean(x)` by group into `.External(Cfastmean, x, FALSE)` in an environment
# below the user's. A registered routine (a NativeSymbolInfo, which only a package's namespace
# holds) passes these masks; a routine named by a string, as user code would, does not.
NATIVE_CALLS <- c(".Call", ".External")
native_mask <- function(name, message) sealed(function(.NAME, ...) {
  if (!inherits(.NAME, "NativeSymbolInfo")) stop(condition)
  call_native(.NAME, ...)
}, condition = policy_condition(message), call_native = get(name, envir = baseenv()))

# `local()` for user code: base's own evaluates a call to `eval` in the caller's environment,
# where `eval` is masked; this one calls base's eval itself, on the same environment chain.
safe_local <- function(expr, envir = new.env(parent = parent.frame())) eval(substitute(expr), envir)

# --- what R may not do in this worker, whoever calls ---------------------------------------------

# Installed in R's own namespaces (package code finds them too):
# - `replaced` functions refuse with the policy error `messages[i]`;
# - Sys.setenv/Sys.unsetenv keep loadNamespace's _R_NS_LOAD_ and setwd folders inside the workspace,
#   through `helpers` (Python; their .Internal()s are gone); dyn.load loads only files of R's
#   installed libraries; graphics devices refuse a pipe ("|cmd") as their file;
# - readRDS, unserialize, load, lazyLoadDBfetch (outside R's libraries) and jsonlite's
#   unserializeJSON refuse objects that hold code, environments or promises, and never force one
#   (a promise in hostile data would run its code wherever it was made to, before any check);
# - a formula given as text that R would evaluate (`formula("{ code }")`) refuses.
# `words`: the policy's wording for each check, by name.
harden <- function(replaced, messages, words, helpers) {
  for (i in seq_along(replaced)) replace_everywhere(replaced[[i]], stub(messages[[i]]))
  for (device in c("pdf", "postscript", "xfig", "pictex")) {
    replace_everywhere(device, guarded(device, "grDevices", pipe_check, paste0(words[["pipe"]], device)))
  }
  replace_everywhere("Sys.setenv", env_setter(words[["Sys.setenv"]], helpers[["set_ns_load"]]))
  replace_everywhere("Sys.unsetenv", env_unsetter(words[["Sys.unsetenv"]], helpers[["set_ns_load"]]))
  replace_everywhere("setwd", dir_changer(words[["setwd"]], helpers[["change_dir"]]))
  in_library <- library_test()
  replace_everywhere("dyn.load", guarded("dyn.load", "base", library_check, words[["dyn.load"]], in_library))
  restore <- function(name) paste0(words[["restore"]], name)
  replace_everywhere("readRDS", rds_reader(restore("readRDS")))
  replace_everywhere("unserialize", unserializer(restore("unserialize")))
  replace_everywhere("load", loader(restore("load")))
  replace_everywhere("lazyLoadDBfetch", db_fetcher(restore("lazyLoadDBfetch"), in_library))
  text_check <- guarded("formula.character", "stats", formula_check, words[["code-text"]])
  replace_in("stats", "formula.character", text_check)
  json <- function(...) replace_in("jsonlite", "unserializeJSON", json_reader(restore("unserializeJSON")))
  if (isNamespaceLoaded("jsonlite")) json() else setHook(packageEvent("jsonlite", "onLoad"), json)
  invisible()
}

# After r_sandbox.internals took `symbols` out of .Internal: R's words for each ("there is no
# .Internal function 'system'"), so that a run they stop is a policy refusal, in `messages[i]`.
record_removed <- function(symbols, messages) {
  for (i in seq_along(symbols)) {
    internal <- as.call(list(as.name(".Internal"), as.call(list(as.name(symbols[[i]])))))  # call() refuses .Internal
    said <- tryCatch(eval(internal, baseenv()), error = conditionMessage)
    if (is.character(said)) state$removed[[said]] <- messages[[i]]
  }
  invisible()
}

# The policy message for a run stopped by `failure` (a policy error, or R's words for a removed
# internal), else NULL.
policy_message <- function(failure) {
  if (inherits(failure, "nini_policy_error")) return(conditionMessage(failure))
  state$removed[[conditionMessage(failure)]]
}

# `name` set to `value` in every namespace of base R that defines it and in its attached package.
replace_everywhere <- function(name, value) {
  for (pkg in c("base", "utils", "grDevices", "graphics", "stats", "tools", "methods")) {
    if (exists(name, envir = asNamespace(pkg), inherits = FALSE)) replace_in(pkg, name, value)
  }
}

# `name` set to `value` in namespace `pkg`, its attached package and its S3 methods table.
replace_in <- function(pkg, name, value) {
  ns <- asNamespace(pkg)
  homes <- list(ns, ns[[".__S3MethodsTable__."]],
                if (pkg == "base") baseenv() else if (paste0("package:", pkg) %in% search()) as.environment(paste0("package:", pkg)))
  for (env in Filter(Negate(is.null), homes)) {
    if (!exists(name, envir = env, inherits = FALSE)) next
    locked <- bindingIsLocked(name, env)
    if (locked) unlockBinding(name, env)
    assign(name, value, envir = env)
    if (locked) lockBinding(name, env)
  }
}

# `fun` with a locked environment of its own (parent: base) holding only `...`: what is installed in
# R or handed to user code must not lead back to the worker's own functions.
sealed <- function(fun, ...) {
  home <- list2env(list(...), parent = baseenv())
  lockEnvironment(home, bindings = TRUE)
  environment(fun) <- home
  fun
}

policy_condition <- function(message) {
  structure(class = c("nini_policy_error", "error", "condition"), list(message = message, call = NULL))
}

stub <- function(message) sealed(function(...) stop(condition), condition = policy_condition(message))

# `name` of `pkg` with a check in front of its body: same formals, same environment for the rest.
guarded <- function(name, pkg, check, message, in_library = NULL) {
  original <- get(name, envir = asNamespace(pkg))
  home <- new.env(parent = environment(original))
  home$.nini_condition <- policy_condition(message)
  home$.nini_in_library <- in_library
  lockEnvironment(home, bindings = TRUE)
  wrapped <- original
  body(wrapped) <- call("{", check, body(original))
  environment(wrapped) <- home
  wrapped
}

pipe_check <- quote(
  if (!missing(file) && is.character(file) && length(file) && startsWith(trimws(file[[1L]]), "|"))
    stop(.nini_condition)
)
library_check <- quote(if (!.nini_in_library(x)) stop(.nini_condition))
# formula.character evaluates text that is not a formula but `{ ... }` or `( ... )`.
formula_check <- quote(
  if (is.character(x) && length(x) && is.call(.nini_text <- tryCatch(
    if (length(x) > 1L) str2expression(x)[[1L]] else str2lang(x), error = function(e) NULL
  )) && (identical(.nini_text[[1L]], quote(`{`)) || identical(.nini_text[[1L]], quote(`(`)))) stop(.nini_condition)
)

# Whether a file is in R's installed libraries (read-only in the sandbox): package DLLs and databases.
library_test <- function() {
  roots <- paste0(normalizePath(unique(c(.libPaths(), R.home())), mustWork = FALSE), "/")
  sealed(function(path) {
    is.character(path) && length(path) == 1L && !is.na(path) &&
      any(startsWith(normalizePath(path.expand(path), mustWork = FALSE), roots))
  }, roots = roots)
}

env_setter <- function(message, set) sealed(function(...) {
  values <- list(...)
  if (!identical(names(values), "_R_NS_LOAD_")) stop(condition)
  set(as.character(values[[1L]]))
  invisible(TRUE)
}, condition = policy_condition(message), set = set)

env_unsetter <- function(message, set) sealed(function(x) {
  if (!identical(as.character(x), "_R_NS_LOAD_")) stop(condition)
  set(character())
  invisible(TRUE)
}, condition = policy_condition(message), set = set)

# setwd(dir): R's own words for what is not a folder; the policy's for a folder outside the workspace.
dir_changer <- function(message, change) sealed(function(dir) {
  if (!is.character(dir) || length(dir) != 1L) stop("character argument expected")
  answer <- change(path.expand(dir))
  if (identical(answer[[1L]], "refused")) stop(condition)
  if (!identical(answer[[1L]], "ok")) stop("cannot change working directory")
  invisible(answer[[2L]])
}, condition = policy_condition(message), change = change)

# The readers read into a list, where a promise stays a value (a variable bound to one would force
# it), and look at what they read without evaluating any of it.
rds_reader <- function(message) sealed(function(file, refhook = NULL) {
  if (is.character(file)) {
    con <- gzfile(file, "rb")
    on.exit(close(con))
  } else if (inherits(file, "connection")) {
    con <- if (inherits(file, "url")) gzcon(file) else file
  } else stop("bad 'file' argument")
  read <- list(.Internal(unserializeFromConn(con, refhook)))
  if (holds_code(read)) stop(condition)
  .subset2(read, 1L)
}, condition = policy_condition(message), holds_code = inspector)

unserializer <- function(message) sealed(function(connection, refhook = NULL) {
  if (typeof(connection) != "raw" && !is.character(connection) && !inherits(connection, "connection"))
    stop("'connection' must be a connection")
  read <- list(.Internal(unserialize(connection, refhook)))
  if (holds_code(read)) stop(condition)
  .subset2(read, 1L)
}, condition = policy_condition(message), holds_code = inspector)

# load(): a save file is its magic number, then the bindings as one serialized pairlist, read as
# unserialize reads (R's own load would bind each value, promises included, before any check).
loader <- function(message) sealed(function(file, envir = parent.frame(), verbose = FALSE) {
  if (is.character(file)) {
    con <- gzfile(file, "rb")
    on.exit(close(con))
  } else if (inherits(file, "connection")) {
    con <- if (inherits(file, c("gzfile", "gzcon"))) file else gzcon(file)
    if (!isOpen(con)) {
      open(con, "rb")
      on.exit(close(con))
    }
  } else stop("bad 'file' argument")
  magic <- readChar(con, 5L, useBytes = TRUE)
  if (!length(magic)) stop("empty (zero-byte) input file")
  if (!grepl("^RD[ABX][23]\n$", magic)) stop("bad restore file magic number (file may be corrupted) -- no data loaded")
  read <- list(.Internal(unserializeFromConn(con, NULL)))
  if (holds_code(read)) stop(condition)
  values <- as.list(.subset2(read, 1L))
  if (verbose) cat("Loading objects:\n")
  for (name in names(values)) {
    if (verbose) cat(" ", name, "\n", sep = "")
    assign(name, .subset2(values, name), envir = envir)
  }
  invisible(as.character(names(values)))
}, condition = policy_condition(message), holds_code = inspector)

# Lazy-load databases: R's own (package code and data) as they are; any other file, refused. A
# package's functions are fetched one by one from its database: each file is looked at once.
db_fetcher <- function(message, in_library) sealed(function(key, file, compressed, hook) {
  if (!(is.character(file) && length(file) == 1L && !is.na(file) && nzchar(file) && !is.null(known[[file]]))) {
    if (!in_library(file)) stop(condition)
    assign(file, TRUE, envir = known)
  }
  fetch(key, file, compressed, hook)
}, condition = policy_condition(message), in_library = in_library, fetch = get("lazyLoadDBfetch", baseenv()),
   known = new.env(parent = emptyenv()))

json_reader <- function(message) sealed(function(...) {
  read <- list(unserialize_json(...))
  if (holds_code(read)) stop(condition)
  .subset2(read, 1L)
}, condition = policy_condition(message), holds_code = inspector,
   unserialize_json = get("unserializeJSON", envir = asNamespace("jsonlite")))

# Whether `value` holds a function, an environment or a promise anywhere (attributes included),
# looked at without evaluating it; nesting deeper than any data is taken as a yes.
inspector <- local({
  CODE_TYPES <- c("environment", "closure", "builtin", "special", "promise", "bytecode")
  holds_code <- function(value, depth = 0L) {
    type <- typeof(value)
    if (type %in% CODE_TYPES || depth > 200L) return(TRUE)
    found <- attributes(value)
    if (!is.null(found) && any_holds_code(found, depth)) return(TRUE)
    if (type %in% c("list", "expression")) return(any_holds_code(value, depth))
    if (type %in% c("pairlist", "language")) return(any_holds_code(as.list(value), depth))
    FALSE
  }
  any_holds_code <- function(items, depth) {
    for (i in seq_along(items)) {
      # symbols hold nothing; never bind one: an empty argument of a call (x[, 1]) is the missing one
      if (typeof(.subset2(items, i)) == "symbol") next
      if (holds_code(.subset2(items, i), depth + 1L)) return(TRUE)
    }
    FALSE
  }
  lockEnvironment(environment(), bindings = TRUE)
  holds_code
}, envir = new.env(parent = baseenv()))
