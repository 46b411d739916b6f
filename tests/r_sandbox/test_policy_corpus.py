"""The R policy on real code nobody here wrote: every help-page example of the installed base,
recommended and tidyverse packages, extracted at test time with R's ``tools::Rd_db``.

An example that names nothing a policy should name (no denied function, no lookup function, no
``:::``, no package outside the allowed list, no program argument) must be allowed; no example may
crash the checker. Which examples name something is judged here from R's parse tokens, apart from
the policy's own reasoning.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest

from r_sandbox import rules
from r_sandbox.calls import call_args, callee, is_call, single_token
from r_sandbox.parse_data import ParseFailure, parse_r
from r_sandbox.policy import PACKAGE_LOADERS, check_r_code
from tests.r_sandbox.test_policy import needs_r
from tests.timeouts import timeout

PACKAGES = (
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
    "dplyr",
    "tidyr",
    "ggplot2",
    "readr",
    "data.table",
    "tibble",
    "stringr",
    "purrr",
    "jsonlite",
    "magrittr",
    "scales",
)
EXTRACT = Path(__file__).with_name("extract_examples.R")  # benchmarks/bench_r.py reads it too
NAMED = rules.DENIED_FUNCTIONS | set(rules.LOOKUPS) | set(rules.OVERRIDES)
CACHE = Path(tempfile.gettempdir()) / f"nini-test-cache-{os.getuid()}"
PROGRAM_ARGUMENT_NAMES = {name for names in rules.PROGRAM_ARGUMENTS.values() for name in names}


@functools.cache
def examples() -> list[dict[str, Any]]:
    """The corpus, from a file of an earlier run when nothing it depends on changed (extracting costs
    some 16 s of CPU; the examples are the same while R, the packages and the script are)."""
    rscript = shutil.which("Rscript")
    if rscript is None:
        pytest.skip("Rscript is not installed")
    saved = CACHE / f"r-examples-{_corpus_key(rscript)}.json"
    if saved.is_file():
        return json.loads(saved.read_text(encoding="utf-8"))
    found = _extract(rscript)
    partial = saved.with_name(f"{saved.name}.{os.getpid()}.tmp")
    try:
        CACHE.mkdir(exist_ok=True)
        partial.write_text(json.dumps(found), encoding="utf-8")
        os.replace(partial, saved)  # whole or absent, whichever xdist worker writes it
    except OSError:  # a full or read-only temp dir: the next run extracts again
        partial.unlink(missing_ok=True)
    return found


def _corpus_key(rscript: str) -> str:
    """A digest of what the corpus depends on: the extraction script, R's version, and each package's
    installed DESCRIPTION (whose Version and Built lines change with every install)."""
    where = subprocess.run(
        [
            rscript,
            "-e",
            f"cat(R.version.string, find.package(c({', '.join(map(repr, PACKAGES))}), quiet = TRUE), sep = '\\n')",
        ],
        capture_output=True,
        text=True,
        timeout=timeout(60),
        check=True,
    ).stdout.split("\n")
    digest = hashlib.sha256(EXTRACT.read_bytes())
    digest.update(where[0].encode())
    for folder in filter(None, where[1:]):
        digest.update(folder.encode() + (Path(folder) / "DESCRIPTION").read_bytes())
    return digest.hexdigest()[:24]


def _extract(rscript: str) -> list[dict[str, Any]]:
    # Two Rscripts, each on every other package, at once: extraction is most of this test's time
    # and pytest leaves the second core idle. The result is the same list, in PACKAGES' order.
    groups = [PACKAGES[0::2], PACKAGES[1::2]]
    running = [
        subprocess.Popen(
            [rscript, str(EXTRACT), ",".join(group)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for group in groups
    ]
    by_package: dict[str, list[dict[str, Any]]] = {}
    try:
        for process in running:
            out, err = process.communicate(timeout=timeout(600))
            assert process.returncode == 0, err[-2000:]
            for example in json.loads(out):
                by_package.setdefault(example["package"], []).append(example)
    finally:
        for process in running:
            process.kill()
            process.wait()
    return [example for package in PACKAGES for example in by_package.get(package, [])]


def names_something(code: str) -> str | None:
    """What in ``code`` a policy should name (None: nothing), read off R's parse tokens."""
    parsed = parse_r(code)
    if isinstance(parsed, ParseFailure):
        return "a syntax error"
    for node in (n for root in parsed for n in root.walk()):
        if node.token in ("SYMBOL_FUNCTION_CALL", "SYMBOL", "STR_CONST") and node.value in NAMED:
            return node.value
        if node.token == "NS_GET_INT":
            return ":::"
        if node.token == "SYMBOL_PACKAGE" and node.value not in rules.DEFAULT_PACKAGES:
            return f"package {node.value}"
        if node.token == "expr" and is_call(node) and (name := callee(node)) is not None:
            args = call_args(node)
            if name.value in PACKAGE_LOADERS and args:
                first = single_token(args[0][1]) if args[0][1] is not None else None
                if (
                    first is None
                    or first.value not in rules.DEFAULT_PACKAGES
                    or any(a == "character.only" for a, _ in args)
                ):
                    return f"{name.value}({first.value if first else '...'})"
            if name.value in rules.PROGRAM_ARGUMENTS and any(a in PROGRAM_ARGUMENT_NAMES for a, _ in args):
                return f"{name.value} with a program argument"
    return None


@needs_r
@pytest.mark.slow
def test_help_page_examples_give_no_false_alarm_and_no_crash() -> None:
    found = examples()
    assert len(found) > 1500  # base R alone has hundreds; a broken extraction must not pass quietly
    crashes, false_alarms, named = [], [], 0
    for example in found:
        where = f"{example['package']}::{example['topic']}"
        try:
            report = check_r_code(example["code"])
        except Exception as exc:  # noqa: BLE001 - every crash is listed, not only the first
            crashes.append(f"{where}: {type(exc).__name__}: {exc}")
            continue
        if names_something(example["code"]) is not None:
            named += 1
        elif not report.allowed:
            false_alarms.append(f"{where}: {[v.message for v in report.violations][:3]}")
    assert crashes == []
    assert false_alarms == []
    assert 0 < named < len(found) / 4  # the oracle is not vacuous either way


@needs_r
@pytest.mark.parametrize(
    "code",
    [
        'x <- "fa\\xE7ile"\nEncoding(x) <- "latin1"\nx',  # base's utf8Conversion and validUTF8 use such bytes
        'validUTF8(c("a", "\\xff", "\\xfe\\xfd"))',
        "x <- " + " + ".join(["1"] * 20000),  # a very long line
        "x <- " + "(" * 3000 + "1" + ")" * 3000,  # deep nesting
        "f <- function() " + "{ " * 500 + "system('ls')" + " }" * 500,
        "`" + "a" * 5000 + "` <- 1",
    ],
    ids=["latin1-bytes", "invalid-utf8", "long-line", "deep-nesting", "deep-body", "long-name"],
)
def test_the_checker_never_crashes_on_code_r_can_parse(code: str) -> None:
    report = check_r_code(code)
    assert report.syntax_error is None or report.syntax_error.message  # an answer, whatever it is
    if "system" in code:
        assert not report.allowed
