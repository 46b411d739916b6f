# The R half of the worker: expression loop, plot capture, result and output_df (the guard is in
# guard.R).
#
# r_sandbox/session.py sources this once into a private environment whose parent is the base
# environment, so nothing the user defines or attaches can mask what these functions call
# (functions of other packages are called with `::`). User code runs in `user env -> guard env ->
# globalenv`; only the guard and the values handed over (datasets, df) are visible to it.

state <- new.env(parent = emptyenv())
state$pages <- list()      # recorded pages of this run, in drawing order
state$devices <- integer() # recording devices opened this run
state$printed <- list()    # ggplot objects printed this run
state$before <- list()     # ggplot bindings of the user env before this run, by name
state$removed <- list()    # R's words for each .Internal taken out of R -> the policy's (guard.R)

PLOT_WIDTH_IN <- 7
PLOT_HEIGHT_IN <- 5
PLOT_DPI <- 120

# --- what user code sees of the worker (guard.R installs these) -----------------------------------

# (sealed by setup(): `state` is all they see of the worker)
track_ggplot <- function(x, ...) {
  state$printed[[length(state$printed) + 1L]] <- x
  get("print.ggplot", envir = asNamespace("ggplot2"))(x, ...)
}

print_datasets <- function(x, ...) {
  names <- sort(ls(x))
  cat("datasets: ", if (length(names)) paste(names, collapse = ", ") else "none",
      " (read one with datasets$name)\n", sep = "")
  invisible(x)
}

# `datasets`: one lazy binding per Parquet file; `reader(name)` (Python) runs on first use only.
make_datasets <- function(names, reader) {
  datasets <- new.env(parent = emptyenv())
  for (name in names) bind_dataset(datasets, name, reader)
  class(datasets) <- "nini_datasets"
  lockEnvironment(datasets, bindings = TRUE)
  datasets
}

bind_dataset <- function(datasets, name, reader) {
  delayedAssign(name, read_dataset(reader, name), eval.env = environment(), assign.env = datasets)
}

# The reader answers with the data.frame, or with why it could not read the file (a string).
read_dataset <- function(reader, name) {
  frame <- reader(name)
  if (is.character(frame)) stop(frame, call. = FALSE)
  frame
}

# A frame rpy2 made from pandas, finished: automatic row names unless the pandas index meant
# something, UTC for columns that had a time zone, NA for pandas' missing floats (NaN).
from_pandas <- function(frame, automatic, utc) {
  if (automatic) attr(frame, "row.names") <- .set_row_names(nrow(frame))
  for (name in utc) attr(frame[[name]], "tzone") <- "UTC"
  for (i in seq_along(frame)) {
    column <- frame[[i]]
    if (is.double(column) && !inherits(column, c("Date", "POSIXct")) && any(nan <- is.nan(column))) {
      column[nan] <- NA
      frame[[i]] <- column
    }
  }
  frame
}

prepare_run <- function(env, datasets, df) {
  rm(list = intersect(c("result", "output_df"), ls(env, all.names = TRUE)), envir = env)
  assign("datasets", datasets, envir = env)
  if (!is.null(df)) assign("df", df, envir = env)
  state$pages <- list()
  state$devices <- integer()
  state$printed <- list()
  state$before <- ggplot_bindings(env)
  options(device = open_device)  # any plot without a device opens a recording one
  invisible()
}

# --- running the code ----------------------------------------------------------------------------

# Top-level expressions one by one, like the console: visible values are printed, the first error
# stops the run. Returns list(status, message, line); status is "ok", "error", "policy" or "syntax".
run_code <- function(code, env) {
  exprs <- tryCatch(parse(text = code, keep.source = TRUE, encoding = "UTF-8"), error = function(e) e)
  if (inherits(exprs, "error")) return(list("syntax", conditionMessage(exprs), NA_integer_))
  srcrefs <- attr(exprs, "srcref")
  for (i in seq_along(exprs)) {
    failure <- run_one(exprs[[i]], env)
    if (!is.null(failure)) {
      line <- if (is.null(srcrefs)) NA_integer_ else srcrefs[[i]][[1L]]
      refused <- policy_message(failure)
      if (!is.null(refused)) return(list("policy", refused, line))
      if (inherits(failure, "packageNotFoundError")) return(list("missing-package", failure$package, line))
      return(list("error", describe(failure, "Error"), line))
    }
  }
  list("ok", NA_character_, NA_integer_)
}

run_one <- function(expr, env) {
  warnings <- list()
  # invokeRestart("abort") would otherwise leave R for rpy2 and skip the clean-up after the run
  aborted <- function() simpleError("the code invoked the \"abort\" restart")
  failure <- withRestarts(abort = aborted, tryCatch(
    withCallingHandlers({
      shown <- withVisible(eval(expr, env))
      if (shown$visible) autoprint(shown$value, env)
      NULL
    }, warning = function(w) {
      warnings[[length(warnings) + 1L]] <<- w
      muffle <- findRestart("muffleWarning")
      if (!is.null(muffle)) invokeRestart(muffle)
    }),
    error = function(e) e
  ))
  write_warnings(warnings)
  failure
}

# print() called from a child of the user env, as the console does from the global env, so S3
# methods the user defined (and the ggplot tracker of the guard) are found.
autoprint <- function(value, env) {
  frame <- new.env(parent = env)
  assign("x", value, envir = frame)
  eval(quote(print(x)), frame)
}

# "Error in f(x) : boom" / "Error: boom", as R prints them. A call that is our own eval() (stop()
# or warning() at the top level of the user's code) is left out, as the console leaves it out.
describe <- function(condition, kind) {
  call <- conditionCall(condition)
  message <- conditionMessage(condition)
  if (is.null(call) || identical(call, quote(eval(expr, env)))) {
    return(if (kind == "Error") paste0("Error: ", message) else message)
  }
  prefix <- if (kind == "Error") "Error in " else "In "
  paste0(prefix, deparse(call, nlines = 1L)[[1L]], " : ", message)
}

write_warnings <- function(warnings) {
  n <- length(warnings)
  if (n == 0L) return(invisible())
  texts <- vapply(warnings, describe, "", kind = "Warning")
  if (n == 1L) {
    text <- paste0("Warning message:\n", texts, "\n")
  } else {
    shown <- texts[seq_len(min(n, 10L))]
    text <- paste0("Warning messages:\n", paste0(seq_along(shown), ": ", shown, "\n", collapse = ""))
    if (n > 10L) text <- paste0(text, "... and ", n - 10L, " more warnings\n")
  }
  cat(text, file = stderr())
}

# --- plots -----------------------------------------------------------------------------------

open_device <- function(...) {
  grDevices::pdf(file = NULL, width = PLOT_WIDTH_IN, height = PLOT_HEIGHT_IN)
  grDevices::dev.control(displaylist = "enable")
  state$devices <- c(state$devices, grDevices::dev.cur())
  invisible()
}

is_recording <- function() grDevices::dev.cur() %in% state$devices

# Keep the current page of a recording device, unless nothing was drawn on it.
snapshot <- function() {
  if (!is_recording()) return(invisible())
  page <- grDevices::recordPlot()
  if (has_drawing(page)) state$pages[[length(state$pages) + 1L]] <- page
  invisible()
}

# Whether a recorded page holds more than settings: `par(mfrow = ...)` before the first plot is
# on the display list too, and must not become a blank page of its own.
has_drawing <- function(page) {
  for (item in page[[1L]]) {
    name <- tryCatch(item[[2L]][[1L]]$name, error = function(e) NULL)
    if (!(is.character(name) && name %in% c("C_par", "C_layout"))) return(TRUE)
  }
  FALSE
}

ggplot_bindings <- function(env) {
  if (!isNamespaceLoaded("ggplot2")) return(list())
  found <- list()
  for (name in ls(env, all.names = TRUE)) {
    if (bindingIsActive(name, env)) next
    value <- get(name, envir = env, inherits = FALSE)
    if (inherits(value, "ggplot")) found[[name]] <- value
  }
  found
}

# ggplot objects assigned this run (new or changed binding) and never printed: each is drawn on a
# recording device of its own, so that one that fails to build leaves no half page behind.
draw_assigned <- function(env) {
  printed <- state$printed
  for (name in names(ggplot_bindings(env))) {
    value <- get(name, envir = env, inherits = FALSE)
    if (identical(value, state$before[[name]])) next
    if (any(vapply(printed, identical, TRUE, y = value))) next
    open_device()
    failure <- tryCatch({ print(value); NULL }, error = function(e) conditionMessage(e))
    if (!is.null(failure)) {
      grDevices::dev.off()
      state$devices <- state$devices[-length(state$devices)]
      cat("nini: the ggplot `", name, "` could not be drawn: ", failure, "\n", sep = "", file = stderr())
    }
  }
}

# After a run: the last page of every recording device, then every device closed and sinks reset,
# so the next run starts clean. Returns the number of pages to render.
finish_plots <- function(env, include_assigned) {
  if (include_assigned) draw_assigned(env)
  for (device in state$devices) {
    if (device %in% grDevices::dev.list()) {
      grDevices::dev.set(device)
      snapshot()
    }
  }
  state$devices <- integer()
  state$printed <- list()
  state$before <- list()
  grDevices::graphics.off()
  for (i in seq_len(sink.number())) sink()
  if (sink.number(type = "message") != 2L) sink(type = "message")
  length(state$pages)
}

# PNG and SVG always; PDF too when the code set options(nini.plot_formats = c(..., "pdf")).
plot_formats <- function() {
  c("png", "svg", if ("pdf" %in% getOption("nini.plot_formats")) "pdf")
}

# Page `i` into `path` (a temp file Python renames); NULL, or why it failed.
render_page <- function(i, format, path) {
  tryCatch({
    switch(format,
      png = grDevices::png(path, width = PLOT_WIDTH_IN, height = PLOT_HEIGHT_IN, units = "in",
                           res = PLOT_DPI, type = "cairo"),
      svg = grDevices::svg(path, width = PLOT_WIDTH_IN, height = PLOT_HEIGHT_IN),
      pdf = grDevices::pdf(path, width = PLOT_WIDTH_IN, height = PLOT_HEIGHT_IN)
    )
    on.exit(grDevices::dev.off())
    grDevices::replayPlot(state$pages[[i]])
    NULL
  }, error = function(e) conditionMessage(e))
}

clear_pages <- function() state$pages <- list()

# --- result and output_df ----------------------------------------------------------------------

# Take `name` out of the user env: list(TRUE, value) or list(FALSE) when it is not there.
take <- function(env, name) {
  if (!exists(name, envir = env, inherits = FALSE)) return(list(FALSE))
  value <- get(name, envir = env, inherits = FALSE)
  rm(list = name, envir = env)
  list(TRUE, value)
}

# `result` as list("json", text), or list("str", str() text, why JSON failed).
result_json <- function(value) {
  text <- tryCatch(
    as.character(jsonlite::toJSON(value, auto_unbox = TRUE, na = "null", null = "null", digits = NA)),
    error = function(e) e
  )
  if (!inherits(text, "error")) return(list("json", text))
  list("str", paste(utils::capture.output(utils::str(value)), collapse = "\n"), conditionMessage(text))
}

# output_df as a plain data.frame (tibble, data.table) with POSIXlt columns made POSIXct: what
# rpy2's pandas converter handles. list(frame, automatic row names?) or list(NULL, class name).
plain_frame <- function(value) {
  if (!is.data.frame(value)) return(list(NULL, class(value)[[1L]]))
  frame <- as.data.frame(value)
  class(frame) <- "data.frame"
  for (i in seq_along(frame)) {
    column <- frame[[i]]
    if (inherits(column, "POSIXlt")) frame[[i]] <- as.POSIXct(column)
    # a list column (tidyr::nest, I(list(...))) as text, one cell per element
    if (is.list(column) && !is.data.frame(column)) {
      frame[[i]] <- vapply(column, function(cell) paste(format(cell), collapse = ", "), "")
    }
  }
  # matrix and data.frame columns (scale(), jsonlite's nested frames) become ordinary columns
  if (any(vapply(frame, function(column) length(dim(column)) > 0L, TRUE))) {
    rows <- if (.row_names_info(frame) > 0L) row.names(frame)
    frame <- do.call(data.frame, c(as.list(frame), check.names = FALSE, stringsAsFactors = FALSE,
                                   list(row.names = rows)))
  }
  # integer row names are what subsetting or ordering leaves behind (3, 1, 2): positions, not
  # names; only character row names (mtcars' models) mean something and become a column
  list(frame, .row_names_info(frame) <= 0L || is.integer(attr(frame, "row.names")))
}
