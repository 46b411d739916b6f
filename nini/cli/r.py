"""``nini r ...``: R helpers; ``nini r check`` shows what run_r_code's policy would say about a script.

The check is the same ``r_sandbox.policy.check_r_code`` the R worker runs before any code, with the
same package allowances (nini's defaults plus ``r.extra_packages``), so a user can see ahead of time
why agent code would be refused.
"""

import sys
from pathlib import Path
from typing import Annotated

import typer

from nini.cli._common import handles_errors, print_json, state
from nini.cli._help import examples, group
from nini.errors import ErrorCode, NiniError
from r_sandbox.errors import RSandboxError
from r_sandbox.policy import check_r_code, violations_message

app = group("R code: check scripts against the R sandbox policy.", ["nini r check model.R"])


@app.command("check", epilog=examples("nini r check model.R", "cat model.R | nini r check - --allow-package lme4"))
@handles_errors
def check(
    ctx: typer.Context,
    file: Annotated[str, typer.Argument(metavar="FILE|-", help="An R script, or - to read the code from stdin.")],
    allow_package: Annotated[
        list[str] | None,
        typer.Option("--allow-package", metavar="NAME", help="Also allow this package (repeatable)."),
    ] = None,
) -> None:
    """Check R code against the policy and print the report as JSON.

    Exit 0 when the code is allowed, 2 when the policy denies it, 1 on an R syntax error.
    """
    code = _read(file)
    settings = state(ctx).settings
    packages = [*settings.r.extra_packages, *(allow_package or [])]
    try:
        report = check_r_code(code, packages, settings.ui.current_language)
    except RSandboxError as exc:
        hint = ". Install R and rpy2 (pip install 'nini[r]'); `nini doctor` shows what is missing"
        hint = hint if exc.code == ErrorCode.R_UNAVAILABLE else ""
        raise NiniError(ErrorCode(exc.code), f"cannot check R code: {exc.message}{hint}") from None
    print_json(report.to_dict())
    if report.allowed:
        return
    code_of_error = ErrorCode.INVALID_ARGUMENT if report.syntax_error else ErrorCode.POLICY_VIOLATION
    raise NiniError(code_of_error, violations_message(report, settings.ui.current_language) or "refused")


def _read(file: str) -> str:
    """The code in FILE (UTF-8, a BOM tolerated) or on stdin for ``-``; unreadable is a user error."""
    if file == "-":
        data = sys.stdin.buffer.read() if hasattr(sys.stdin, "buffer") else sys.stdin.read().encode("utf-8")
        where = "stdin"
    else:
        path = Path(file)
        if not path.exists():
            raise NiniError(ErrorCode.NOT_FOUND, f"no such file: {file}")
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise NiniError(ErrorCode.INVALID_ARGUMENT, f"cannot read {file}: {exc.strerror or exc}") from None
        where = file
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise NiniError(ErrorCode.INVALID_ARGUMENT, f"{where} is not UTF-8 text") from None
