# The help-page examples of the R packages named in the first argument (comma-separated), as JSON
# [{package, topic, code}]: the real-code corpus of the R policy's test and benchmark.
out <- list()
for (pkg in strsplit(commandArgs(trailingOnly = TRUE)[1], ",")[[1]]) {
  if (!nzchar(system.file(package = pkg))) next
  db <- tryCatch(tools::Rd_db(pkg), error = function(e) list())
  for (name in names(db)) {
    path <- tempfile(fileext = ".R")
    made <- tryCatch({ tools::Rd2ex(db[[name]], path, commentDontrun = TRUE); file.exists(path) },
                     error = function(e) FALSE)
    if (made) {
      code <- paste(readLines(path, warn = FALSE, encoding = "UTF-8"), collapse = "\n")
      out[[length(out) + 1L]] <- list(package = pkg, topic = sub("[.]Rd$", "", name), code = code)
      unlink(path)
    }
  }
}
cat(jsonlite::toJSON(out, auto_unbox = TRUE))
