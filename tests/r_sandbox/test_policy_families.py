"""The families of issue 32 that reached R's real denied functions, and hostile R data files.

Each family fetches a denied function out of an environment in a way the masks never see
(``.subset2(baseenv(), ...)``, ``eapply``, ``Reduce``, ...) or runs text as code where R's own bindings
are found (a formula made with ``env = baseenv()`` turned into a function by purrr). The worker
cases run past the static check (``run_unchecked``): what stops them is the run-time containment
(guard.R, r_sandbox.internals), and a probe run afterwards shows the denied function's effect did
not happen. The static check refuses each of them too (a clear early error). Through the real CLI,
``nini r check`` refuses every family aimed at ``file.link`` (whose link would be the marker) and
``nini run-r`` runs the cases that need running. A promise serialized into an RDS or .RData file is
never forced: reading it is refused.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from nini.execution.sandbox import probe_bwrap
from r_sandbox.policy import check_r_code
from tests.r_sandbox.conftest import Workers, needs_r, new_session
from tests.timeouts import timeout

pytestmark = needs_r

SESSION = "families"  # one worker for the run-time cases: each leaves R as it found it, or the probe says so
PLANT = 'writeLines("x", "a.txt")\n'
# (family, code, the denied function, the static rule that refuses it first); the last line is the attack
FAMILIES = [
    (
        "as.list-filtered",
        'l <- as.list(baseenv())\nf <- l[names(l) == "Sys.setenv"][[1]]\nf(NINI_FAMILY = "ran")',
        "Sys.setenv",
        "computed-name",
    ),
    (
        ".subset2",
        PLANT + 'f <- .subset2(baseenv(), "file.link")\nf("a.txt", "marker.txt")',
        "file.link",
        "denied-files",
    ),
    ("getElement", 'f <- getElement(baseenv(), "setwd")\nf("/tmp")', "setwd", "denied-files"),
    ("purrr::pluck", 'f <- purrr::pluck(baseenv(), "Sys.unsetenv")\nf("HOME")', "Sys.unsetenv", "denied-environment"),
    (
        "magrittr::extract2",
        'f <- magrittr::extract2(asNamespace("utils"), "assignInNamespace")\n'
        'f("head", function(...) "replaced", "utils")',
        "assignInNamespace",
        "denied-environment",
    ),
    (
        "eapply",
        PLANT + 'f <- eapply(baseenv(), identity)[["file.symlink"]]\nf("a.txt", "marker.txt")',
        "file.symlink",
        "computed-name",
    ),
    (
        "Reduce",
        'f <- Reduce(function(e, n) e[[n]], ".Internal", baseenv())\nf(Sys.setenv("NINI_FAMILY", "ran"))',
        "Sys.setenv",
        "computed-name",
    ),
    (
        "Map",
        'writeBin(as.raw(1:64), "evil.so")\nf <- Map(function(e, n) e[[n]], list(baseenv()), "dyn.load")[[1]]\n'
        'f("evil.so")',
        "dyn.load",
        "computed-name",
    ),
    (
        "formula-as_mapper",
        'fo <- as.formula(paste0("~ Sys.", "setenv(NINI_FAMILY = \'ran\')"), env = baseenv())\npurrr::as_mapper(fo)()',
        "Sys.setenv",
        "foreign-environment",
    ),
    (
        "formula-as_mapper-.Internal",
        "fo <- as.formula(\"~ .Internal(Sys.setenv('NINI_FAMILY', 'ran'))\", env = baseenv())\npurrr::as_mapper(fo)()",
        "Sys.setenv",
        "foreign-environment",
    ),
    (".Internal-quit", 'f <- .subset2(baseenv(), ".Internal")\nf(quit("no", 0L, FALSE))', "quit", "denied-native-code"),
]
# R's state as the worker starts (HOME is its runtime folder), read past the masks.
PROBE = (
    'result <- list(env = base::Sys.getenv("NINI_FAMILY"), home = nzchar(base::Sys.getenv("HOME")),\n'
    "  wd = identical(getwd(), normalizePath(.nini_wd)), head = utils::head(1:5, 2),\n"
    '  dlls = "evil" %in% names(getLoadedDLLs()), files = sort(list.files(pattern = "^(marker|forced)")))\n'
)
UNTOUCHED = {"env": "", "home": True, "wd": True, "head": [1, 2], "dlls": False, "files": []}
# Hostile data: a promise whose code writes forced.txt, made with eval.promises = FALSE, as the
# bindings of a save file and as an RDS file's object (R's own serialize writes a promise unforced).
HOSTILE_DATA = r"""
e <- new.env()
delayedAssign("x", writeLines("forced", "forced.txt"), eval.env = baseenv(), assign.env = e)
save(list = "x", envir = e, file = "promise.RData", eval.promises = FALSE)
con <- gzfile("promise.RData", "rb")
invisible(readChar(con, 5L, useBytes = TRUE))
bindings <- unserialize(con)
close(con)
writeBin(.Internal(serialize(.subset2(bindings, 1L), NULL, FALSE, 3L, NULL)), "promise.rds")
writeBin(.Internal(serialize(bindings, NULL, FALSE, 3L, NULL)), "bindings.rds")
"""


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """The hostile files, made by a plain Rscript (which must not force the promise either)."""
    rscript = shutil.which("Rscript")
    if rscript is None:
        pytest.skip("Rscript is not installed")
    folder = tmp_path_factory.mktemp("hostile")
    made = subprocess.run(
        [rscript, "-e", HOSTILE_DATA], cwd=folder, capture_output=True, text=True, timeout=timeout(120)
    )
    assert made.returncode == 0, made.stderr
    assert not (folder / "forced.txt").exists()
    return {name: (folder / name).read_bytes() for name in ("promise.RData", "promise.rds", "bindings.rds")}


def plant(name: str, data: bytes) -> str:
    """R code that writes ``data`` to ``name`` in the workspace (agent code can write any file)."""
    return f'writeBin(as.raw(c({", ".join(f"0x{b:02x}" for b in data)})), "{name}")\n'


@pytest.fixture(scope="module")
def probe(workers: Workers) -> Any:
    """A function that reads R's state in the shared session past every mask."""
    start = workers.run_unchecked(".nini_wd <- getwd()", SESSION)
    assert start["success"], start["error"]

    def read() -> dict[str, Any]:
        out = workers.run_unchecked(PROBE, SESSION)
        assert out["success"], out["error"]
        return out["result"]

    assert read() == UNTOUCHED
    return read


@pytest.mark.parametrize(("family", "code", "name", "rule"), FAMILIES, ids=[f[0] for f in FAMILIES])
def test_a_family_reaching_a_denied_function_is_refused_at_run_time(
    workers: Workers, probe: Any, family: str, code: str, name: str, rule: str
) -> None:
    out = workers.run_unchecked(code, SESSION)
    line = code.count("\n") + 1
    assert out["error"] == {
        "code": "POLICY_VIOLATION",
        "message": f"不允许调用函数: {name} (第 {line} 行)",
        "line": line,
    }
    assert probe() == UNTOUCHED  # the denied function's effect did not happen; the worker lives on
    report = check_r_code(code)  # and the static check says so before anything runs
    assert rule in {v.rule for v in report.violations}, report.to_dict()


def test_text_a_formula_would_run_as_code_is_refused(workers: Workers, probe: Any) -> None:
    code = "fo <- as.formula(\"{ writeLines('ran', 'marker.txt') }\")"
    assert check_r_code(code).allowed  # only text to the static check
    out = workers.run(code, SESSION)
    assert out["error"]["code"] == "POLICY_VIOLATION"
    assert out["error"]["message"] == '不允许把文本当作代码运行: formula("{…}") (第 1 行)'
    assert probe() == UNTOUCHED
    assert workers.run('fo <- as.formula(paste("mpg ~", "wt")); result <- class(fo)', SESSION)["result"] == "formula"


@pytest.mark.parametrize(
    ("name", "code", "reader"),
    [
        ("promise.rds", 'x <- readRDS("promise.rds")', "readRDS"),
        ("bindings.rds", 'x <- readRDS("bindings.rds")', "readRDS"),
        ("promise.rds", 'x <- unserialize(readBin("promise.rds", "raw", 1e5))', "unserialize"),
        ("promise.RData", 'load("promise.RData")', "load"),
        ("promise.RData", 'e <- new.env()\nx <- load("promise.RData", envir = e)', "load"),
    ],
)
def test_a_promise_in_r_data_is_refused_never_forced(
    workers: Workers, hostile: dict[str, bytes], probe: Any, name: str, code: str, reader: str
) -> None:
    assert check_r_code(code).allowed  # reading data is what analysis does
    out = workers.run(plant(name, hostile[name]) + code, SESSION)
    line = code.count("\n") + 2
    assert out["error"] == {
        "code": "POLICY_VIOLATION",
        "line": line,
        "message": f"不允许还原含有代码或环境的对象: {reader} (第 {line} 行)",
    }
    assert probe() == UNTOUCHED  # no forced.txt: the promise's code never ran
    assert workers.run('result <- exists("x", inherits = FALSE)', SESSION)["result"] is False


def test_other_restorers_refuse_code_and_r_data_still_loads(workers: Workers) -> None:
    session = new_session()
    refused = {
        "json": "x <- jsonlite::unserializeJSON(jsonlite::serializeJSON(function(x) x))",
        "lazy-load": 'writeLines("x", "evil.rdb")\nsaveRDS(list(variables = list(a = c(0L, 9L)), references = list(),\n'
        '  compressed = TRUE), "evil.rdx")\nf <- .subset2(baseenv(), "lazyLoad")\ne <- '
        'new.env()\nf("evil", e)\nx <- e$a',
    }
    for kind, code in refused.items():
        out = workers.run_unchecked(code, session)
        assert out["error"]["code"] == "POLICY_VIOLATION", (kind, out["error"])
        assert out["error"]["message"].startswith("不允许还原含有代码或环境的对象: "), kind
    loads = (
        "d <- data.frame(a = 1:3, b = letters[1:3])\nsave(d, file = 'd.RData', ascii = TRUE)\nsaveRDS(d, 'd.rds')\n"
        "rm(d)\nnames <- load('d.RData')\nj <- jsonlite::unserializeJSON(jsonlite::serializeJSON(list(a = 1:2)))\n"
        "data(iris)\nresult <- list(names = names, same = identical(d, readRDS('d.rds')), j = j$a,\n"
        "  iris = nrow(iris), cars = nrow(mtcars))"
    )
    out = workers.run(loads, session)
    assert out["success"], out["error"]
    assert out["result"] == {"names": "d", "same": True, "j": [1, 2], "iris": 150, "cars": 32}


def test_what_r_code_still_needs_of_the_checked_functions_works(workers: Workers) -> None:
    session = new_session()
    code = (
        "library(dplyr)\n"  # loadNamespace sets and unsets _R_NS_LOAD_ through the checked Sys.setenv
        "dir.create('sub')\nold <- base::setwd('sub')\nthere <- basename(getwd())\nbase::setwd(old)\n"
        "library(data.table)\nDT <- data.table(b = c(1, 3, 5, 7), g = c(1, 1, 2, 2))\n"
        "DT[, `:=`(lo = min(b), m = mean(b)), by = g]\n"  # data.table's own .External(Cfastmean, b)
        "result <- list(there = there, back = identical(getwd(), old), n = nrow(filter(mtcars, cyl == 4)),\n"
        "  loading = base::Sys.getenv('_R_NS_LOAD_', 'unset'), m = DT$m)"
    )
    out = workers.run_unchecked(code, session)
    assert out["success"], out["error"]
    assert out["result"] == {"there": "sub", "back": True, "n": 11, "loading": "unset", "m": [2, 2, 6, 6]}
    named = workers.run_unchecked('.External("R_dummy", 1)', session)  # a routine by name, as user code has it
    assert named["error"]["message"] == "不允许调用函数: .External (第 1 行)"


def test_what_the_worker_installs_leads_back_to_nothing_of_it(workers: Workers) -> None:
    code = (
        "homes <- list(environment(readRDS), environment(Sys.setenv), environment(load),\n"
        "  environment(get('print.nini_datasets')), environment(get('local')))\n"
        "worker <- parent.env(environment(getHook('before.plot.new')[[1]]))\n"
        "changed <- tryCatch({ assign('run_code', function(...) NULL, envir = worker); 'changed' },\n"
        "  error = function(e) 'locked')\n"
        "result <- list(base = vapply(homes, function(h) identical(parent.env(h), baseenv()), TRUE), worker = changed)"
    )
    out = workers.run_unchecked(code, new_session())
    assert out["success"], out["error"]
    assert out["result"] == {"base": [True] * 5, "worker": "locked"}


# --- through the real CLI -----------------------------------------------------------------------

NINI = Path(sys.executable).with_name("nini")
# The families aimed at file.link, whose link would be the marker. `nini r check` (the policy nini's
# worker applies first) refuses each, at its line, naming what it saw; `nini run-r` runs one of them
# (refused before anything runs), the formula one that hides from the static check (an environment
# it cannot tell, the name inside text: refused at run time) and the hostile data files (refused
# when read). family -> (code, what the refusal says)
CHECKED_FAMILIES = {
    "as.list-filtered": (
        'l <- as.list(baseenv()); f <- l[names(l) == "file.link"][[1]]',
        "不允许用计算出的名字取函数: [",
    ),
    ".subset2": ('f <- .subset2(baseenv(), "file.link")', "不允许调用函数: file.link"),
    "getElement": ('f <- getElement(baseenv(), "file.link")', "不允许调用函数: file.link"),
    "purrr::pluck": ('f <- purrr::pluck(baseenv(), "file.link")', "不允许调用函数: file.link"),
    "magrittr::extract2": ('f <- magrittr::extract2(baseenv(), "file.link")', "不允许调用函数: file.link"),
    "eapply": ('f <- eapply(baseenv(), identity)[["file.link"]]', "不允许用计算出的名字取函数: eapply"),
    "Reduce": ('f <- Reduce(function(e, n) e[[n]], "file.link", baseenv())', "不允许用计算出的名字取函数: Reduce"),
    "Map": ('f <- Map(function(e, n) e[[n]], list(baseenv()), "file.link")[[1]]', "不允许用计算出的名字取函数: Map"),
    "formula-as_mapper": (
        'f <- purrr::as_mapper(as.formula("~ file.link(.x, .y)", env = baseenv()))',
        "不允许让代码在 R 自身或 R 包的环境中运行: as.formula(env = …)",
    ),
}
RUN_FAMILIES = {
    ".subset2": (
        PLANT + CHECKED_FAMILIES[".subset2"][0] + '\nf("a.txt", "marker.txt")',
        "不允许调用函数: file.link (第 2 行)",
    ),
    "formula-as_mapper": (
        PLANT + "e <- (function() parent.env(globalenv()))()\n"
        'f <- purrr::as_mapper(as.formula(paste0("~ file.", "link(.x, .y)"), env = e))\n'
        'f("a.txt", "marker.txt")',
        "不允许调用函数: file.link (第 4 行)",
    ),
    "promise.rds": ('x <- readRDS("promise.rds")', "不允许还原含有代码或环境的对象: readRDS"),
    "promise.RData": ('load("promise.RData")', "不允许还原含有代码或环境的对象: load"),
}


def nini(*args: str, code: str, home: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NINI_")}
    # a Chinese locale: the families' expected refusals are the spec's Chinese words
    env.update(NINI_HOME=str(home), NINI_EXECUTION__SANDBOX="bwrap", LANG="zh_CN.UTF-8", LC_ALL="", LC_MESSAGES="")
    return subprocess.run([str(NINI), *args], input=code, capture_output=True, text=True, timeout=timeout(300), env=env)


@pytest.fixture(scope="module")
def cli_runs(hostile: dict[str, bytes], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """``nini r check`` of every family, and each ``nini run-r`` case in a session of its own, all at once:
    {"check": report, family: (reply, workspace)}."""
    if not probe_bwrap()[0]:
        pytest.skip(f"no working bubblewrap: {probe_bwrap()[1]}")
    home = tmp_path_factory.mktemp("nini-home")
    cases = {
        f: (code if f in CHECKED_FAMILIES else plant(f, hostile[f]) + code) for f, (code, _) in RUN_FAMILIES.items()
    }

    def run(family: str) -> tuple[str, Any]:
        if family == "check":
            done = nini("r", "check", "-", code="\n".join(code for code, _ in CHECKED_FAMILIES.values()), home=home)
            assert done.returncode == 2, done.stderr
            return family, json.loads(done.stdout)
        session = "cli-" + "".join(c if c.isalnum() else "-" for c in family)
        done = nini("run-r", "-", "--session", session, "--new", "--json", code=cases[family], home=home)
        assert done.returncode == 2, done.stderr
        return family, (json.loads(done.stdout), home / "sessions" / session / "workspace")

    with ThreadPoolExecutor(max_workers=len(cases) + 1) as pool:
        return dict(pool.map(run, ["check", *cases]))


@pytest.mark.slow
@pytest.mark.parametrize("family", CHECKED_FAMILIES)
def test_each_family_is_refused_by_the_clis_check(cli_runs: dict[str, Any], family: str) -> None:
    line = list(CHECKED_FAMILIES).index(family) + 1
    said = [v["message"] for v in cli_runs["check"]["violations"] if v["line"] == line]
    assert any(m.startswith(CHECKED_FAMILIES[family][1]) for m in said), said


@pytest.mark.slow
@pytest.mark.parametrize("family", RUN_FAMILIES)
def test_each_family_run_through_the_cli_is_refused_and_leaves_no_marker(cli_runs: dict[str, Any], family: str) -> None:
    reply, workspace = cli_runs[family]
    assert not reply["success"] and reply["error"]["code"] == "POLICY_VIOLATION", reply["error"]
    assert reply["error"]["message"].startswith(RUN_FAMILIES[family][1])
    assert not list(workspace.glob("marker*")) and not list(workspace.glob("forced*"))
    assert (workspace / "a.txt").exists() == (family == "formula-as_mapper")  # it ran up to the refusal
