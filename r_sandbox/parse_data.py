"""R's own parse of agent code, as a token tree the policy can walk.

The policy must see code exactly as R will run it, so it asks R itself: ``parse(keep.source=TRUE)``
and ``utils::getParseData()``, fetched as columns in one call. R's lexer also decodes every string
and backquoted name (``"\\x73ystem"`` is ``system``): the policy sees names as R will, not as typed.

R starts lazily, on the first parse, through ``rpy2.rinterface`` only: the R worker installs rpy2's
console callbacks before anything imports ``rpy2.robjects``, and importing this module must not start R.
R is single-threaded: parse from the thread that owns R in this process.
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
from array import array
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any

from r_sandbox.errors import RSandboxError
from r_sandbox.protocol import ErrorCode

# One R closure, defined in a private environment whose parent is base: code evaluated later in the
# same R process (the worker's user code) cannot shadow parse or getParseData for it, and the two are
# captured now, so a later assignInNamespace() cannot swap them either.
_R_SOURCE = r"""
local({
  parse <- base::parse
  getParseData <- utils::getParseData
  value_of <- function(text) tryCatch(as.character(str2lang(text)), error = function(e) NA_character_)
  # A message without "<text>:line:col:" (a bad escape in a string): the shortest prefix of
  # lines that fails with the same message ends on the offending line.
  error_line <- function(lines, message) {
    lo <- 1L
    hi <- length(lines)
    while (lo < hi) {
      mid <- (lo + hi) %/% 2L
      same <- tryCatch({ parse(text = lines[seq_len(mid)], keep.source = FALSE); FALSE },
                       error = function(e) identical(conditionMessage(e), message))
      if (same) hi <- mid else lo <- mid + 1L
    }
    lo
  }
  failure <- function(code, e) {
    message <- conditionMessage(e)
    line <- if (grepl("^<text>:[0-9]+:", message)) NA_integer_
            else error_line(strsplit(code, "\n", fixed = TRUE)[[1]], message)
    list(FALSE, message, line)
  }
  # getParseData()'s columns as a list, comments left out, siblings in source order. Read off the
  # srcfile's parse data matrix, as getParseData() reads it (its data.frame costs ~0.5 ms a parse);
  # through getParseData() itself where a terminal's text is to be fetched from the source.
  columns <- function(exprs) {
    m <- attr(exprs, "srcfile")$parseData
    if (is.null(m)) return(columns_of_frame(exprs))
    terminal <- as.logical(m[5L, ])
    if (any(terminal & !nzchar(attr(m, "text")))) return(columns_of_frame(exprs))
    d <- list(line1 = m[1L, ], col1 = m[2L, ], line2 = m[3L, ], col2 = m[4L, ], id = m[7L, ],
              parent = m[8L, ], token = attr(m, "tokens"), terminal = terminal, text = attr(m, "text"))
    o <- order(d$line1, d$col1, -d$line2, -d$col2, d$terminal)
    o <- o[d$token[o] != "COMMENT"]
    lapply(d, function(column) column[o])
  }
  columns_of_frame <- function(exprs) {
    d <- getParseData(exprs, includeText = NA)
    if (is.null(d)) return(list(id = integer()))
    d <- d[d$token != "COMMENT", ]
    as.list(d[order(d$line1, d$col1, -d$line2, -d$col2, d$terminal), ])
  }
  tokens <- function(exprs) {
    d <- columns(exprs)
    if (!length(d$id)) return(list(TRUE))
    quoted <- d$terminal & (d$token == "STR_CONST" | startsWith(d$text, "`"))
    value <- d$text
    value[quoted] <- vapply(d$text[quoted], value_of, "", USE.NAMES = FALSE)
    # Few, large objects: rpy2 is slow element by element. Tokens as codes into their levels;
    # values joined into one string, cut by lengths (-1 for NA: a string R shows abbreviated).
    # A string with byte escapes ("\xff") decodes to bytes that are no text: keep it as typed
    # (R names are never such bytes, so nothing the policy looks for is lost).
    bad <- !is.na(value) & !validUTF8(value)
    value[bad] <- d$text[bad]
    value <- enc2utf8(value)
    lengths <- nchar(value, type = "chars", allowNA = TRUE)
    lengths[is.na(lengths)] <- -1L
    value[is.na(value)] <- ""
    token <- factor(d$token)
    numbers <- c(d$id, d$parent, d$line1, d$col1, d$line2, d$col2, as.integer(token), lengths)
    list(TRUE, as.integer(numbers), levels(token), paste(value, collapse = ""))
  }
  # Every condition is caught here: nothing may reach R's console. NA first: a bug of ours.
  function(code) withCallingHandlers({
    exprs <- tryCatch(parse(text = code, keep.source = TRUE, encoding = "UTF-8"), error = function(e) e)
    if (inherits(exprs, "error")) failure(code, exprs)
    else tryCatch(tokens(exprs), error = function(e) list(NA, conditionMessage(e)))
  }, warning = function(w) invokeRestart("muffleWarning"))
}, envir = new.env(parent = baseenv()))
"""
_LOCATED = re.compile(r"^<text>:(\d+):(\d+): ?")
_lock = threading.Lock()
_parser: list[Any] = []  # the R closure, once R is up (a cache, not state)


@dataclass(eq=False, slots=True)
class Node:
    """One row of R's parse data: a terminal token or an ``expr`` grouping others."""

    id: int
    token: str
    line: int
    col: int
    end: tuple[int, int]
    value: str | None  # the token's text, strings and backquoted names decoded; None: a string R abbreviates
    parent: Node | None = None
    children: list[Node] = field(default_factory=list)

    @property
    def start(self) -> tuple[int, int]:
        return (self.line, self.col)

    def contains(self, other: Node) -> bool:
        return self.start <= other.start and other.end <= self.end

    def walk(self) -> list[Node]:
        """This node and every node below it, in source order."""
        found: list[Node] = []
        stack = [self]  # iterative: a long pipe chain nests deeper than Python's recursion limit
        while stack:
            node = stack.pop()
            found.append(node)
            stack.extend(reversed(node.children))
        return found


@dataclass(frozen=True)
class ParseFailure:
    """R refused the code: its message (location prefix removed) and the line it points at."""

    line: int | None
    message: str


def _r_parser() -> Any:
    with _lock:
        if not _parser:
            try:
                with _environment_kept():  # importing rpy2 sets R_HOME and LD_LIBRARY_PATH too
                    import rpy2.rinterface as ri
                    from rpy2.rinterface_lib import embedded, openrlib

                    if not embedded.isinitialized():
                        # R exits the whole process when it cannot find its base package: look first.
                        if not os.path.isdir(os.path.join(str(openrlib.R_HOME), "library", "base")):
                            raise RuntimeError(f"no R installation at R_HOME={openrlib.R_HOME}")
                        ri.initr_simple()
                _parser.append(ri.evalr(_R_SOURCE))
            except Exception as exc:  # ImportError, libR not found, R failing to start
                raise RSandboxError(
                    ErrorCode.R_UNAVAILABLE, f"R is not available: {type(exc).__name__}: {exc}"
                ) from exc
        return _parser[0]


@contextlib.contextmanager
def _environment_kept() -> Iterator[None]:
    """Undo what starting R does to the process environment (C level, inherited by children).

    R's start-up exports R_HOME, LD_LIBRARY_PATH (with /usr/lib/x86_64-linux-gnu first) and some
    twenty R_* variables. Parsing needs none of them afterwards, but every program this process
    starts later would inherit them, and that LD_LIBRARY_PATH makes another Python load the
    system's libpython. (The R worker starts R itself and keeps them.)
    """
    before = dict(os.environ)
    try:
        yield
    finally:
        for key in [k for k in os.environ if k not in before]:  # rpy2 sets Python's copy...
            del os.environ[key]
        os.environ.update(before)
        for key, value in _c_environment().items():  # ...R's start-up only the C one
            if key not in before:
                os.unsetenv(key)
            elif before[key] != value:
                os.putenv(key, before[key])


def _c_environment() -> dict[str, str]:
    import ctypes

    entries = ctypes.POINTER(ctypes.c_char_p).in_dll(ctypes.CDLL(None), "environ")
    found: dict[str, str] = {}
    index = 0
    while entries[index]:
        key, _, value = os.fsdecode(entries[index]).partition("=")
        found[key] = value
        index += 1
    return found


def parse_r(code: str) -> list[Node] | ParseFailure:
    """The top-level nodes of ``code`` (comments included) in source order, or why R cannot parse it."""
    import rpy2.rinterface as ri

    code = code.replace("\r\n", "\n").encode("utf-8", "replace").decode("utf-8")  # lone surrogates
    if "\x00" in code:  # R strings end at NUL: R would see less code than was checked
        return ParseFailure(code.count("\n", 0, code.index("\x00")) + 1, "embedded NUL character")
    result = _r_parser()(ri.StrSexpVector([code]))
    if result[0][0] is ri.NA_Logical:
        raise RuntimeError(f"reading R's parse data failed: {result[1][0]}")
    if not result[0][0]:
        return _failure(code, str(result[1][0]), result[2][0], ri.NA_Integer)
    if len(result) == 1:
        return []
    numbers, levels = _integers(result[1]), list(result[2])
    n = len(numbers) // 8
    ids, parents, line1, col1, line2, col2, tokens, lengths = (numbers[i * n : (i + 1) * n] for i in range(8))
    joined, ends = result[3][0], accumulate(max(length, 0) for length in lengths)
    values = [None if length < 0 else joined[end - length : end] for length, end in zip(lengths, ends, strict=True)]
    nodes = {
        i: Node(i, levels[t - 1], l1, c1, (l2, c2), v)
        for i, t, l1, c1, l2, c2, v in zip(ids, tokens, line1, col1, line2, col2, values, strict=True)
    }
    roots: list[Node] = []
    for node, parent_id in zip(nodes.values(), parents, strict=True):
        parent = nodes.get(parent_id)  # 0: the top level
        node.parent = parent
        (parent.children if parent is not None else roots).append(node)
    return roots


def _failure(code: str, message: str, fallback_line: Any, na: Any) -> ParseFailure:
    match = _LOCATED.match(message)
    line: int | None
    if match:
        line = int(match.group(1))
        message = message[match.end() :]
    else:
        line = None if fallback_line is na else int(fallback_line)
    lines = code.split("\n")
    if line is not None and line > len(lines):  # "unexpected end of input" points past the end
        line = max((n for n, text in enumerate(lines, 1) if text.strip()), default=1)
    return ParseFailure(line, message.strip())


def _integers(vector: Any) -> list[int]:
    """An R integer vector as a list in one copy (rpy2 3.5.17's own memoryview() corrupts refcounts)."""
    from rpy2.rinterface_lib import openrlib

    try:
        pointer = vector._R_GET_PTR(vector.__sexp__._cdata)
    except AttributeError:  # another rpy2 than the pinned one: slow but right
        return [int(x) for x in vector]
    data = array("i")
    data.frombytes(openrlib.ffi.buffer(pointer, data.itemsize * len(vector))[:])
    return data.tolist()
