"""The cells (a session's steps) a report names: the ones that failed, and the ones its findings
and figures come from, each under one number and one anchor.

A notebook step is named by its cell (``cell 12``: its 1-based position among all the notebook's
cells, ``Step.cell``), a session step by its position in the session (``step 3``). The failure
sentence, the findings, the figure headings and the "Cells referred to" section all name a step
through ``reference`` here, so they never disagree about which cell is which.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from nini.errors import ErrorCode
from nini.report.markdown import md_code, md_name
from nini.report.model import KERNEL_DIED, NOT_RUN, TIMED_OUT, ReportInput, Step

MAX_NAMED_FAILURES = 10  # the summary names this many failed cells, then "and N more"
_EXCEPTION = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Interrupt|Exit|Warning))\b")
_TIMEOUT_NAMES = frozenset({"CellTimeoutError", "TimeoutError"})
RUN_REASONS = {TIMED_OUT: "timeout", NOT_RUN: "not_run", KERNEL_DIED: "kernel_died"}  # -> their words' keys


@dataclass(frozen=True)
class Failure:
    step: Step
    why: str  # "timeout", "not_run", "kernel_died", or what failed (an exception name, else an error code)


def kind(step: Step) -> str:
    """ "cell" for a notebook's step, "step" for a session's."""
    return "cell" if step.cell is not None else "step"


def number(step: Step) -> int:
    return step.cell if step.cell is not None else step.order + 1


def anchor(step: Step) -> str:
    """The step's anchor in the HTML report (``cell-12``, ``step-3``): the same in both languages."""
    return f"{kind(step)}-{number(step)}"


def reference(step: Step, t: dict[str, str], *, linked: bool = False) -> str:
    """``cell 12`` (``单元格 12``) as Markdown; ``linked``: a link to its code in "Cells referred to"."""
    name = t[kind(step)].format(n=number(step))
    return f"[{name}](#{anchor(step)})" if linked else name


def failures(data: ReportInput) -> list[Failure]:
    """The steps that failed, timed out or never ran and were not corrected later, in order.

    A failed step a later successful one corrects (its ``retry_of``, or the same label) is not a
    failure of the report's results (in a notebook, only a later cell with its ``# label:`` does).
    Counted from the steps themselves, so a report from saved outputs says the same as one run
    with ``--execute`` (whose ``ExecutionSummary`` adds why a cell stopped: a timeout, a dead kernel).
    """
    ordered = sorted(data.steps, key=lambda step: step.order)
    run = {
        cell: RUN_REASONS[why] for cell, why in (data.execution.failed if data.execution else []) if why in RUN_REASONS
    }
    retried: dict[str, int] = {}  # a failed step's id -> the order of the last step that retried it
    labelled: dict[str, int] = {}  # a label -> the order of the last step under it that stands
    for step in ordered:
        if step.status == "succeeded" and not step.rolled_back:
            if step.retry_of:
                retried[step.retry_of] = step.order
            if label := (step.label or "").strip():
                labelled[label] = step.order
    found = []
    for step in ordered:
        if step.status == "succeeded" or step.rolled_back:
            continue
        label = (step.label or "").strip()
        if retried.get(step.id, -1) > step.order or (label and labelled.get(label, -1) > step.order):
            continue  # corrected later
        found.append(Failure(step, run[step.cell] if step.cell in run else _why(step)))
    return found


def _why(step: Step) -> str:
    error = step.error or {}
    code = str(error.get("code") or "")
    name = str(error.get("ename") or "")
    if code == ErrorCode.CANCELED and kind(step) == "cell":  # a notebook's cell never run (sources._cell_step)
        return "not_run"
    if code == ErrorCode.KERNEL_DIED:
        return "kernel_died"
    if code == ErrorCode.TIMEOUT or name in _TIMEOUT_NAMES:
        return "timeout"
    if name:
        return name
    found = _EXCEPTION.match(str(error.get("message") or ""))
    return found.group(1) if found else code or "error"


def failure_paragraph(
    found: list[Failure], steps: list[Step], left_out: list[str], t: dict[str, str], *, linked: bool = False
) -> str:
    """The summary's account of failures: "72 of 121 cells failed; results are partial", the
    first failed cells by name ("cell 4 (NameError)"), and what the report leaves out for them."""
    unit = "cells" if any(kind(f.step) == "cell" for f in found) else "steps"
    named = [
        t["why"].format(ref=reference(f.step, t, linked=linked), why=_why_words(f.why, t))
        for f in found[:MAX_NAMED_FAILURES]
    ]
    more = t["and_more"].format(n=len(found) - MAX_NAMED_FAILURES) if len(found) > MAX_NAMED_FAILURES else ""
    sentences = [
        t[f"failed_{unit}_summary"].format(n=len(found), total=len(steps)) + t["stop"],
        t[f"failed_{unit}_list"].format(names=t["sep"].join(named) + more) + t["stop"],
        t["left_out"],
    ]
    if left_out:
        sentences.append(
            t["left_out_charts"].format(names=t["sep"].join(md_name(name) for name in left_out)) + t["stop"]
        )
    return t["space"].join(sentences)


def _why_words(why: str, t: dict[str, str]) -> str:
    return t[why] if why in RUN_REASONS.values() else md_name(why)


def referred_section(steps: list[Step], t: dict[str, str]) -> list[dict[str, str]]:
    """One entry per step the report refers to, in the notebook's order: its heading (``cell
    12``, which the HTML gives the anchor ``cell-12``) and its code, bounded and fenced."""
    unique = {step.id: step for step in steps}
    ordered = sorted(unique.values(), key=lambda step: (number(step), step.order))
    return [{"heading": reference(step, t), "anchor": anchor(step), "code": md_code(step.code)} for step in ordered]
