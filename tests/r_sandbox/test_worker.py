"""Running R through RWorkerPool: state, the result contract, output, errors, the policy and the guard."""

from __future__ import annotations

import pytest

from nini.execution.outcome import CONTRACT_KEYS
from r_sandbox import protocol
from r_sandbox.errors import RSandboxError
from r_sandbox.policy import check_r_code
from tests.r_sandbox.conftest import Workers, needs_r, new_session

pytestmark = needs_r


def test_state_persists_between_calls(workers: Workers) -> None:
    session = new_session()
    assert workers.run("x <- 40; f <- function(v) v + 2", session)["success"]
    out = workers.run("f(x)", session)
    assert out["success"], out["error"]
    assert out["stdout"] == "[1] 42\n"


def test_result_has_exactly_the_contract_keys_of_python(workers: Workers) -> None:
    assert protocol.CONTRACT_KEYS == CONTRACT_KEYS
    ok = workers.run("mean(1:10)")
    failed = workers.run("stop('no')")
    refused = workers.run("system('ls')")
    for out in (ok, failed, refused):
        assert tuple(out) == CONTRACT_KEYS
    assert ok["error"] is None and ok["duration_ms"] >= 0
    assert set(failed["error"]) <= {"code", "message", "line"}


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("result <- 42", 42),
        ("result <- 2.5", 2.5),
        ("result <- 'text'", "text"),
        ("result <- c(1, NA, 3)", [1, None, 3]),
        ("result <- 1:3", [1, 2, 3]),
        ("result <- NA", None),
        ("result <- NULL", None),
        ("result <- c(NaN, Inf)", [None, None]),
        (
            "result <- list(a = 1, b = 'x', c = list(d = TRUE, e = NA_character_))",
            {"a": 1, "b": "x", "c": {"d": True, "e": None}},
        ),
        ("result <- data.frame(a = 1:2, b = c('x', NA))", [{"a": 1, "b": "x"}, {"a": 2, "b": None}]),
        ("result <- as.Date('2024-03-01')", "2024-03-01"),
        ("result <- factor('level')", "level"),
        ("result <- 0.1 + 0.2", 0.3),
    ],
)
def test_result_goes_through_jsonlite(workers: Workers, code: str, expected: object) -> None:
    out = workers.run(code)
    assert out["success"], out["error"]
    assert out["result"] == expected
    assert out["stderr"] == ""


def test_result_without_a_json_form_is_returned_as_str_text(workers: Workers) -> None:
    out = workers.run("result <- summary(lm(mpg ~ wt, data = mtcars))")
    assert out["success"], out["error"]
    assert out["result"].startswith("List of 11\n $ call")
    assert "nini: result is not JSON-serialisable (No method asJSON S3 class: summary.lm)" in out["stderr"]


def test_result_and_output_df_never_outlive_their_run(workers: Workers) -> None:
    session = new_session()
    assert workers.run("result <- 1; output_df <- data.frame(a = 1)", session)["has_dataframe"]
    out = workers.run("exists('result') || exists('output_df')", session)
    assert out["result"] is None and not out["has_dataframe"]
    assert out["stdout"] == "[1] FALSE\n"
    # a failed run drops them too
    workers.run("result <- 2; stop('late')", session)
    assert workers.run("exists('result')", session)["stdout"] == "[1] FALSE\n"


def test_print_and_cat_go_to_stdout_message_and_warning_to_stderr(workers: Workers) -> None:
    code = "print(1:3)\ncat('plain\\n')\nmessage('note')\nwarning('careful')\nf <- function() warning('inner')\nf()"
    out = workers.run(code)
    assert out["success"], out["error"]
    assert out["stdout"] == "[1] 1 2 3\nplain\n"
    assert out["stderr"] == "note\nWarning message:\ncareful\nWarning message:\nIn f() : inner\n"


def test_text_in_any_language(workers: Workers) -> None:
    code = (
        'cat("你好\\n")\nmessage("注意")\nresult <- list(城市 = "北京")\noutput_df <- '
        'data.frame(城市 = c("北京", "上海"))'
    )
    out = workers.run(code)
    assert out["success"], out["error"]
    assert (out["stdout"], out["stderr"], out["result"]) == ("你好\n", "注意\n", {"城市": "北京"})
    assert out["dataframe_preview"]["columns"] == ["城市"]
    assert out["dataframe_preview"]["rows"] == [["北京"], ["上海"]]
    assert workers.run('stop("错误")')["error"]["message"] == "Error: 错误"


def test_visible_values_are_printed_like_the_console(workers: Workers) -> None:
    out = workers.run("x <- 5\ninvisible(7)\nx * 2\n(y <- 3)\nlibrary(tibble)\ntibble(a = 1:2)")
    assert out["success"], out["error"]
    assert out["stdout"].startswith("[1] 10\n[1] 3\n# A tibble: 2 x 1") or "# A tibble: 2 × 1" in out["stdout"]
    assert "\x1b" not in out["stdout"]


def test_r_error_message_and_line_of_the_failing_expression(workers: Workers) -> None:
    code = "cat('before\\n')\nf <- function(x) stop('boom')\nf(1)\ncat('after\\n')"
    out = workers.run(code)
    assert not out["success"]
    assert out["error"] == {"code": "CODE_ERROR", "message": "Error in f(1) : boom", "line": 3}
    assert out["stdout"] == "before\n"  # output before the error is kept, nothing after it ran
    assert out["stderr"] == "Error in f(1) : boom\n"  # where R's console prints it


def test_top_level_stop_has_no_call_and_multiline_expressions_report_their_first_line(workers: Workers) -> None:
    out = workers.run("x <- 1\nif (x > 0) {\n  stop('top')\n}")
    assert out["error"] == {"code": "CODE_ERROR", "message": "Error: top", "line": 2}


def test_errors_of_packages_are_plain_text(workers: Workers) -> None:
    out = workers.run("library(dplyr)\nmtcars |> mutate(z = no_such_column + 1)")
    assert out["error"]["code"] == "CODE_ERROR" and out["error"]["line"] == 2
    assert "no_such_column" in out["error"]["message"] and "\x1b" not in out["error"]["message"]


def test_syntax_error_names_its_line(workers: Workers) -> None:
    out = workers.run("x <- 1\ny <- (2 +\nz z")
    assert not out["success"]
    assert out["error"] == {"code": "CODE_ERROR", "message": "R syntax error: unexpected symbol", "line": 3}
    assert "3: z z" in out["stderr"]  # R's own text, with the caret, as Python puts its traceback there
    unchecked = workers.run_unchecked("x <- 1\ny <- (2 +\nz z")  # R's parser in the worker says the same
    assert unchecked["error"] == out["error"]


def test_an_abort_restart_ends_the_run_cleanly(workers: Workers) -> None:
    session = new_session()
    out = workers.run("cat('a\\n')\nplot(1:3)\ninvokeRestart('abort')\ncat('b\\n')", session)
    assert out["error"] == {"code": "CODE_ERROR", "message": 'Error: the code invoked the "abort" restart', "line": 3}
    assert out["stdout"] == "a\n" and len(out["artifacts"]) == 2
    assert workers.run("dev.cur()", session)["stdout"] == "null device \n          1 \n"


def test_policy_violation_refuses_before_anything_runs(workers: Workers) -> None:
    session = new_session()
    out = workers.run("writeLines('ran', 'marker.txt')\nsystem('echo hi')", session)
    assert not out["success"]
    assert out["error"]["code"] == "POLICY_VIOLATION"
    assert out["error"]["line"] == 2 and out["error"]["message"] == "不允许调用函数: system (第 2 行)"
    assert out["error"]["violations"] == [
        {
            "rule": "denied-process",
            "name": "system",
            "line": 2,
            "column": 1,
            "message": "不允许调用函数: system (第 2 行)",
        }
    ]
    assert not (workers.workspace(session) / "marker.txt").exists()
    assert out["stdout"] == ""


@pytest.mark.parametrize(
    "code",
    [
        # a name handed over at run time, looked up through the user's frames
        "f <- function() dynGet('system', inherits = TRUE)\ncat('first\\n')\nf()('touch ran.txt')",
        "cat('first\\n')\nfetch <- dynGet\nx <- 1\nfetch('system', inherits = TRUE)('touch ran.txt')",
    ],
)
def test_denied_functions_reached_in_ways_a_parser_cannot_follow_never_run(workers: Workers, code: str) -> None:
    session = new_session()
    out = workers.run(code, session)
    assert out["error"]["code"] == "POLICY_VIOLATION", out
    assert not (workers.workspace(session) / "ran.txt").exists()
    # past the static check, in the same worker (the refused run ran nothing): the guard stops it
    unchecked = workers.run_unchecked(code, session)
    assert unchecked["error"]["code"] == "POLICY_VIOLATION" and "system" in unchecked["error"]["message"]
    assert unchecked["stdout"] == "first\n"


@pytest.mark.parametrize(
    ("code", "name"),
    [
        ("system('echo hi')", "system"),
        ("x <- eval(quote(1))", "eval"),
        ("Sys.getenv('HOME')", "Sys.getenv"),
        ("q('no')", "q"),
        ("x <- 1\nf <- function() unlink('a')\nf()", "unlink"),
    ],
)
def test_guard_masks_denied_functions_without_the_static_check(workers: Workers, code: str, name: str) -> None:
    # One worker for all cases (a start is most of a case's time): each checks that it is still
    # fine afterwards, which the next case then proves again on the same worker.
    session = "guard-masks"
    out = workers.run_unchecked(code, session)
    line = code.count("\n") + 1
    assert out["error"] == {
        "code": "POLICY_VIOLATION",
        "message": f"不允许调用函数: {name} (第 {line} 行)",
        "line": line,
    }
    assert workers.run("1 + 1", session)["stdout"] == "[1] 2\n"  # the worker is fine


@pytest.mark.parametrize(
    "code",
    [
        "result <- local({ a <- 2; a * 3 })",
        "result <- do.call(rbind, list(1:2, 3:4))",
        "result <- do.call('sum', list(1, 2))",
        "e <- parent.env(environment()); result <- is.environment(e)",
        "x <- 5; result <- globalenv()$x",
        "f <- function(v, FUN) match.fun(FUN)(v); result <- f(1:3, 'sum')",
        "result <- with(mtcars, round(mean(mpg), 1))",
        "result <- sapply(1:3, 'sqrt')",
        "g <- function(type = c('a', 'b')) match.arg(type); result <- g()",
        "result <- Reduce(`+`, 1:4, accumulate = TRUE)",
        "fo <- y ~ x; result <- is.environment(environment(fo))",
        "saveRDS(data.frame(a = 1:2), 'd.rds'); result <- nrow(readRDS('d.rds'))",
        "x <- 1:3; save(x, file = 'x.rda'); rm(x); load('x.rda'); result <- sum(x)",
    ],
)
def test_what_the_static_check_allows_runs_without_a_policy_error(workers: Workers, code: str) -> None:
    assert check_r_code(code).allowed
    out = workers.run(code, "statically-allowed")  # one worker for all: each case makes what it reads
    assert out["success"], out["error"]


@pytest.mark.parametrize(
    ("code", "reader"),
    [
        ("saveRDS(function() 1, 'f.rds'); x <- readRDS('f.rds')", "readRDS"),
        ("saveRDS(list(a = 1, f = mean), 'm.rds'); x <- base::readRDS('m.rds')", "readRDS"),
        ("saveRDS(new.env(), 'e.rds'); x <- readRDS('e.rds')", "readRDS"),
        ("saveRDS(y ~ x, 'fo.rds'); x <- readRDS('fo.rds')", "readRDS"),
        ("x <- unserialize(serialize(sum, NULL))", "unserialize"),
        ("f <- function() 1; save(f, file = 'f.rda'); rm(f); load('f.rda')", "load"),
    ],
)
def test_restoring_code_or_environments_is_refused(workers: Workers, code: str, reader: str) -> None:
    session = "restoring"  # one worker for all cases: none binds f but the load case, which is refused
    out = workers.run(code, session)
    assert out["error"]["code"] == "POLICY_VIOLATION"
    assert out["error"]["message"] == f"不允许还原含有代码或环境的对象: {reader} (第 1 行)"
    assert "f" not in workers.run("result <- ls()", session)["result"] or reader != "load"


def test_a_pipe_as_a_device_file_is_refused_at_run_time(workers: Workers) -> None:
    session = new_session()
    out = workers.run('p <- "|touch piped.txt"\npdf(file = p)\nplot(1)\ndev.off()', session)
    assert out["error"]["code"] == "POLICY_VIOLATION" and out["error"]["line"] == 2
    assert out["error"]["message"] == "不允许让函数运行外部程序或管道: pdf (第 2 行)"
    assert not (workers.workspace(session) / "piped.txt").exists()
    assert workers.run("pdf('ok.pdf'); plot(1); invisible(dev.off())", session)["success"]


def test_a_package_that_is_not_installed_says_how_to_install_it(workers: Workers) -> None:
    out = workers.run("x <- 1\nlibrary(lme4)")
    assert out["error"]["code"] == "CODE_ERROR" and out["error"]["line"] == 2
    assert out["error"]["message"] == (
        'R 包 lme4 没有安装：用 apt-get install r-cran-lme4 安装，或在 R 中运行 install.packages("lme4") (第 2 行)'
    )


def test_guard_leaves_package_internals_alone(workers: Workers) -> None:
    code = (
        "library(dplyr)\n"
        "n <- mtcars |> filter(cyl == 4) |> summarise(n = n(), mpg = mean(mpg))\n"
        "fit <- lm(mpg ~ wt, data = mtcars)\n"
        "result <- list(n = n$n, slope = round(unname(coef(fit)[2]), 3), s = sapply(1:3, function(i) i * 2))"
    )
    out = workers.run(code)
    assert out["success"], out["error"]
    assert out["result"] == {"n": 11, "slope": -5.344, "s": [2, 4, 6]}


def test_guard_masks_cannot_be_replaced_by_user_code(workers: Workers) -> None:
    session = new_session()
    out = workers.run_unchecked("system <<- function(...) 'replaced'", session)
    assert out["error"]["code"] == "CODE_ERROR"
    assert "cannot change value of locked binding for 'system'" in out["error"]["message"]
    assert workers.run_unchecked("system('echo hi')", session)["error"]["code"] == "POLICY_VIOLATION"


def test_console_input_and_stray_fd_writes_do_not_touch_the_protocol(workers: Workers) -> None:
    session = new_session()
    out = workers.run(
        "a <- readline('say: ')\nb <- readLines(file('stdin'))\ncat('junk on fd 1\\n', file = '/dev/stdout')\n"
        "result <- list(a = a, b = length(b))",
        session,
    )
    assert out["success"], out["error"]
    assert out["result"] == {"a": "", "b": 0}
    assert workers.run("1", session)["stdout"] == "[1] 1\n"


def test_a_reply_far_larger_than_a_default_line_buffer(workers: Workers) -> None:
    out = workers.run("cat(strrep('x', 3e6))\nresult <- rep(1.5, 2e5)")
    assert out["success"], out["error"]
    assert len(out["stdout"]) == 3_000_000 and len(out["result"]) == 200_000


@pytest.mark.slow
def test_output_beyond_what_a_reply_may_carry(workers: Workers) -> None:
    session = new_session()
    chatty = workers.run("for (i in 1:20) cat(strrep('x', 1e6))", session)
    assert chatty["success"] and len(chatty["stdout"]) < 4 * 2**20 + 200  # the default output cap, 4 MiB
    assert chatty["stdout"].endswith("个字符未保留]\n") and "execution.output_max_mb" in chatty["stdout"][-200:]
    huge = workers.run("result <- rep('xxxxxxxxxxxxxxxx', 5e6)", session)
    assert huge["error"]["code"] == "CODE_ERROR" and "too large to return" in huge["error"]["message"]
    assert workers.run("1", session)["stdout"] == "[1] 1\n"


def test_sinks_and_devices_are_reset_after_each_run(workers: Workers) -> None:
    session = new_session()
    workers.run("sink('captured.txt')\nplot(1:3)\npng('own.png')", session)
    out = workers.run("print(sink.number())\nprint(dev.cur())", session)
    assert out["stdout"] == "[1] 0\nnull device \n          1 \n"


def test_unknown_request_keys_are_refused(workers: Workers) -> None:
    with pytest.raises(RSandboxError) as caught:
        workers.run("1", skip_policy=True)
    assert caught.value.code == "INVALID_ARGUMENT"


def test_missing_dataset_and_bad_save_as_are_invalid_arguments(workers: Workers) -> None:
    missing = workers.run("1", dataset_name="nope")
    assert missing["error"]["code"] == "INVALID_ARGUMENT" and "no dataset 'nope'" in missing["error"]["message"]
    bad = workers.run("output_df <- data.frame(a = 1)", save_as="../escape")
    assert bad["error"]["code"] == "INVALID_ARGUMENT"
