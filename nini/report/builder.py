"""The layered report: business sections from a ``ReportInput``, observability only in an appendix.

Markdown comes from ``templates/report.md.j2`` (and ``appendix.md.j2``); every value is escaped
(``markdown.py``) before it reaches a template. The HTML page (``page.py``) renders the same
Markdown, except that where the Markdown names a cell ("cell 12") the page links it to that
cell's code in the "Cells referred to" section. Whenever a step failed, timed out or never ran,
the summary says so first and names it (``cells.py``); its findings and charts are left out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import unquote

from nini.errors import ErrorCode, NiniError
from nini.report import cells
from nini.report.appendix import appendix
from nini.report.charts import ChartGroup, chart_title, group_charts, preview_kind
from nini.report.findings import Finding, business_text, key_findings, relevant_steps
from nini.report.markdown import md_inline, md_name, md_prose, md_table
from nini.report.methods import condense_notes, languages_text
from nini.report.model import ChartFile, ReportInput, Step
from nini.report.narrative import Narrative, Refusal
from nini.report.page import chart_link, render_html, templates
from nini.report.values import DEFAULT_DIGITS
from nini.report.wording import TEXT

__all__ = ["TEXT", "RenderedReport", "ReportOptions", "build_report", "chart_link", "md_inline", "md_prose"]

MAX_METHOD_STEPS = 15
MAX_COLUMNS = 12
SUMMARY_HIGHLIGHTS = 3
SUMMARY_CHARTS = 6
_HEADING = re.compile(r"^ {0,3}#{1,6}(?=\s|$)")


@dataclass(frozen=True)
class ReportOptions:
    title: str | None = None
    methods: str | None = None  # Markdown written by the user or the agent; derived from the steps when None
    summary_text: str | None = None  # derived from the findings when None
    conclusions: str | None = None  # the source's own conclusion, else an honest "states no conclusion", when None
    dataset_names: list[str] | None = None  # the datasets the overview describes; all when None
    include_charts: bool = True
    include_key_findings: bool = True
    include_session_stats: bool = False  # the observability appendix
    lang: Literal["zh", "en"] = "zh"
    decimals: int = DEFAULT_DIGITS  # significant digits of numbers in findings (the ``report.decimals`` setting)


@dataclass(frozen=True)
class RenderedReport:
    title: str
    markdown: str  # body_markdown + the appendix (when asked for)
    html: str  # a self-contained page of ``markdown``
    body_markdown: str  # the business sections, identical with or without the appendix
    charts: list[ChartGroup]  # every chart the report shows, even when the charts section is left out
    findings: list[Finding]  # every key finding, even when that section is left out
    link_base: Path | None = None  # the folder chart links are relative to
    model_written: tuple[str, ...] = ()  # the sections ("summary", "conclusions") a model wrote
    model_refused: dict[str, Refusal] = field(default_factory=dict)  # a model's sections not used, and why
    failures: list[cells.Failure] = field(default_factory=list)  # the steps that failed and were not corrected

    def linked_files(self) -> dict[str, ChartFile]:
        """Each chart file by the link the report uses for it (unquoted), for attachments."""
        return {unquote(chart_link(file, self.link_base)): file for group in self.charts for file in group.files}


@dataclass(frozen=True)
class _Parts:
    """What the two renderings of the body (the Markdown, and the page's with cell links) share."""

    data: ReportInput
    options: ReportOptions
    t: dict[str, str]
    title: str
    link_base: Path | None
    steps: list[Step]  # the relevant ones
    findings: list[Finding]
    groups: list[ChartGroup]  # the charts shown: none a failed step drew
    failures: list[cells.Failure]
    left_out: list[str]  # the names of the charts failed steps drew
    model_text: dict[str, str]
    mark: str
    by_id: dict[str, Step] = field(default_factory=dict)

    def step_of(self, step_id: str | None) -> Step | None:
        return self.by_id.get(step_id) if step_id else None


def build_report(
    data: ReportInput,
    options: ReportOptions,
    *,
    embed_images: bool = True,
    link_base: Path | None = None,
    narrative: Narrative | None = None,
) -> RenderedReport:
    """The report of ``data``.

    Chart links are relative to ``link_base`` (the folder the report files go to), or bare file
    names when it is None. With ``embed_images`` the HTML carries image previews as data: URIs
    (SVG too, never inline markup: an ``<img>`` does not run an SVG's scripts); other formats are links.
    A ``narrative`` (``narrative.narrate``) writes the summary and conclusions the caller gave no
    text for, marked as a model's; the conclusion a notebook's author wrote stays theirs.
    """
    if options.lang not in TEXT:
        raise NiniError(ErrorCode.INVALID_ARGUMENT, f"lang must be one of {', '.join(TEXT)}, not {options.lang!r}")
    t = TEXT[options.lang]
    failed_ids = {step.id for step in data.steps if step.status != "succeeded"}
    shown: list[ChartGroup] = []
    dropped: list[ChartGroup] = []
    for group in group_charts(data.charts):
        (dropped if group.files[0].step_id in failed_ids else shown).append(group)
    title = " ".join(business_text(options.title or data.title or t["title"]).split()) or t["title"]
    open_sections = [
        section
        for section, given in (
            ("summary", options.summary_text),
            ("conclusions", options.conclusions or data.conclusion),
        )
        if not given
    ]
    model_text = {s: text for s, text in (narrative.sections if narrative else {}).items() if s in open_sections}
    model_refused = {s: why for s, why in (narrative.refused if narrative else {}).items() if s in open_sections}
    parts = _Parts(
        data=data,
        options=options,
        t=t,
        title=title,
        link_base=link_base,
        steps=relevant_steps(data.steps),
        findings=key_findings(data.steps, digits=options.decimals, notes=data.notes),
        groups=shown,
        failures=cells.failures(data),
        left_out=[group.base for group in dropped],
        model_text=model_text,
        mark=t["model_wrote"].format(model=_model_name(narrative, t)) if model_text else "",
        by_id={step.id: step for step in data.steps},
    )
    referred = _referred(parts)
    shared = _shared_sections(parts, referred)
    body = _body(parts, shared, linked=False)
    narrated = _narrative_lines(narrative, list(model_text), model_refused, t)
    extra = appendix(data, parts.steps, t, narrated) if options.include_session_stats else ""
    anchors = (_referred_heading(parts), {entry["heading"]: entry["anchor"] for entry in referred})
    page = render_html(
        _body(parts, shared, linked=True) + extra,
        title,
        options.lang,
        shown if embed_images else [],
        link_base,
        anchors if referred else None,
    )
    return RenderedReport(
        title=title,
        markdown=body + extra,
        html=page,
        body_markdown=body,
        charts=shown,
        findings=parts.findings,
        link_base=link_base,
        model_written=tuple(model_text),
        model_refused=model_refused,
        failures=parts.failures,
    )


def _shared_sections(parts: _Parts, referred: list[dict[str, str]]) -> dict[str, Any]:
    """The template's values that name no cell by link: the same in the Markdown and on the page,
    so made once (a notebook of 1,000 cells and 300 charts has a long methods list and manifest)."""
    t, options, data = parts.t, parts.options, parts.data
    summary = (
        md_prose(options.summary_text)
        if options.summary_text
        else _model_section(parts.model_text["summary"], parts.mark)
        if "summary" in parts.model_text
        else _summary(parts)
    )
    conclusions = (
        _model_section(parts.model_text["conclusions"], parts.mark)
        if "conclusions" in parts.model_text
        else _conclusions(options.conclusions, data, t)
    )
    return {
        "t": t,
        "title": md_inline(parts.title),
        "datasets": _datasets(data, options, t),
        "methods": _methods(options.methods, parts.steps, _method_notes(data, parts.title, t), t),
        "summary": summary,
        "charts": _charts(parts) if options.include_charts else None,
        "conclusions": conclusions,
        "referred": referred,
        "referred_heading": _referred_heading(parts),
    }


def _body(parts: _Parts, shared: dict[str, Any], *, linked: bool) -> str:
    """The business sections' Markdown; ``linked``: each cell named links to its code (the page's)."""
    findings = [_finding(f, parts, linked) for f in parts.findings] if parts.options.include_key_findings else None
    return (
        templates()
        .get_template("report.md.j2")
        .render(
            {**shared, "summary": "\n\n".join([*_standing(parts, linked), shared["summary"]]), "findings": findings}
        )
    )


def _standing(parts: _Parts, linked: bool) -> list[str]:
    """What the reader must know before any result: the notebook was not run by its own kernel,
    and which cells failed, timed out or never ran (their results are missing)."""
    t, run, out = parts.t, parts.data.execution, []
    if run is not None and run.missing_kernel:
        out.append(
            (t["ran_saved"] if run.kernel is None else t["ran_with"]).format(
                missing=md_name(run.missing_kernel), kernel=md_name(run.kernel or "")
            )
            + t["stop"]
        )
    if parts.failures:
        out.append(cells.failure_paragraph(parts.failures, parts.data.steps, parts.left_out, t, linked=linked))
    return out


def _referred(parts: _Parts) -> list[dict[str, str]]:
    """The "Cells referred to" entries: the cells of the findings shown and of the failures named."""
    steps = (
        [step for f in parts.findings if (step := parts.step_of(f.step_id))]
        if parts.options.include_key_findings
        else []
    )
    steps += [failure.step for failure in parts.failures[: cells.MAX_NAMED_FAILURES]]
    return cells.referred_section(steps, parts.t)


def _referred_heading(parts: _Parts) -> str:
    notebook = any(cells.kind(step) == "cell" for step in parts.data.steps)
    return parts.t["refs_cells" if notebook else "refs_steps"]


def _model_name(narrative: Narrative | None, t: dict[str, str]) -> str:
    """The model's name as the wording places it: " gpt-4o " in Chinese, " gpt-4o" in English."""
    name = md_name(narrative.model) if narrative and narrative.model else ""
    return (f" {name} " if t is TEXT["zh"] else f" {name}") if name else ""


def _model_section(text: str, mark: str) -> str:
    """A section a model wrote: its Markdown (made safe like any prose), then the mark saying so."""
    return md_prose(text) + "\n\n*" + mark + "*"


def _narrative_lines(
    narrative: Narrative | None, written: list[str], refused: dict[str, Refusal], t: dict[str, str]
) -> list[str]:
    """The appendix's account of the model's sections: which it wrote, which were refused and why."""
    if narrative is None:
        return []
    model = _model_name(narrative, t)
    lines = [t["model_used"].format(section=t[section], model=model) for section in written]
    for section, why in refused.items():
        reason = t["refused_" + why.kind].format(detail=md_name(why.detail))
        lines.append(t["model_refused"].format(section=t[section], model=model, why=reason))
    return lines


def _method_notes(data: ReportInput, title: str, t: dict[str, str]) -> list[str]:
    """The notes (notebook Markdown cells) the methods digest: all but the concluding section's,
    each without an opening heading the report already says (the title, a section's name)."""
    repeated = {_plain(text) for text in (title, t["methods"], t["conclusions"], t["summary"], t["datasets"])}
    concluding = " ".join((data.conclusion or "").split())[:60]
    kept = []
    for note in data.notes:
        lines = note.strip("\n").splitlines()
        first = next((line for line in lines if line.strip()), "")
        if not first or (concluding and concluding in " ".join(note.split())):
            continue
        heading = _HEADING.match(first)
        if heading and _plain(first[heading.end() :]) in repeated:
            note = "\n".join(lines[lines.index(first) + 1 :]).strip("\n")
        if note.strip():
            kept.append(note)
    return kept


def _plain(text: str) -> str:
    return " ".join(text.strip().strip("#").split()).casefold()


def _datasets(data: ReportInput, options: ReportOptions, t: dict[str, str]) -> str:
    known = {dataset.name: dataset for dataset in data.datasets}
    names = options.dataset_names if options.dataset_names is not None else list(known)
    lines = []
    for name in dict.fromkeys(names):
        dataset = known.get(name)
        details = []
        if dataset and dataset.rows is not None:
            details.append(t["rows"].format(n=f"{dataset.rows:,}"))
        if dataset and dataset.columns:
            details.append(t["columns"].format(n=len(dataset.columns)))
            shown = t["sep"].join(md_name(column) for column in dataset.columns[:MAX_COLUMNS])
            more = t["more"] if len(dataset.columns) > MAX_COLUMNS else ""
            details.append(t["fields"].format(names=shown + more))
        line = f"- **{md_name(name)}**"
        lines.append(line + t["colon"] + t["clause"].join(details) if details else line)
    return "\n".join(lines) if lines else t["no_datasets"]


def _methods(methods: str | None, steps: list[Step], notes: list[str], t: dict[str, str]) -> str:
    if methods:
        return md_prose(methods)
    parts = [md_prose(section) for section in condense_notes(notes)]  # headings and first sentences, bounded
    if not steps:
        return "\n\n".join(parts + [t["no_steps"]])
    described: dict[str, str] = {}
    for step in steps:
        purpose = t.get(step.purpose or "", step.purpose)  # the step kinds run_code knows, in the report's language
        texts = [" ".join(business_text(text).split()) for text in (step.label, purpose) if text]
        texts = list(dict.fromkeys(text for text in texts if text))
        if texts:
            described.setdefault(" ".join(texts).casefold(), t["colon"].join(texts))
    langs = md_name(languages_text(steps, t))
    if not described:
        return "\n\n".join(parts + [t["methods_plain"].format(langs=langs)])
    items = [f"{number}. {md_name(text)}" for number, text in enumerate(list(described.values())[:MAX_METHOD_STEPS], 1)]
    more = [t["methods_more"]] if len(described) > MAX_METHOD_STEPS else []
    return "\n\n".join(parts + [t["methods_steps"].format(langs=langs), "\n".join(items), *more])


def _summary(parts: _Parts) -> str:
    """The datasets, the first findings, and the charts by name: a notebook whose work is charts
    has a summary too, not "nothing to summarise"."""
    t, options, data, findings = parts.t, parts.options, parts.data, parts.findings
    names = options.dataset_names if options.dataset_names is not None else [d.name for d in data.datasets]
    lines = [t["summary_datasets"].format(names=t["sep"].join(md_name(name) for name in names))] if names else []
    charts = [chart_title(group, data.steps) for group in parts.groups]
    if charts:
        shown = t["sep"].join(md_name(name) for name in dict.fromkeys(charts[:SUMMARY_CHARTS]))
        charted = t["summary_charts"].format(
            n=len(charts), names=shown + (t["more"] if len(charts) > SUMMARY_CHARTS else "")
        )
    if not findings:
        return "\n\n".join(lines + [charted if charts else t["summary_none"]])
    highlights = []
    # a table under a bare name ("df") says nothing in one line: the highlights are statements
    stated = [f for f in findings if not (f.table and ": " not in f.text.splitlines()[0])] or findings
    for finding in sorted(stated, key=lambda f: f.rank)[:SUMMARY_HIGHLIGHTS]:  # the ones that matter most first
        first = finding.text.splitlines()[0]
        highlights.append("- " + md_inline(first if len(first) <= 120 else first[:119].rstrip() + "…"))
    said = t["summary_finding"] if len(findings) == 1 else t["summary_findings"].format(n=len(findings))
    return "\n\n".join(lines + [said, "\n".join(highlights)] + ([charted] if charts else []))


def _finding(finding: Finding, parts: _Parts, linked: bool) -> str:
    """One finding as a list item's Markdown: its text and the cell it comes from, then its table
    (indented into the item)."""
    step = parts.step_of(finding.step_id)
    text = md_inline(finding.text) + (
        parts.t["cited"].format(ref=cells.reference(step, parts.t, linked=linked)) if step is not None else ""
    )
    if not finding.table:
        return text
    return text + "\n\n" + "\n".join("  " + line for line in md_table(finding.table).splitlines())


def _conclusions(conclusions: str | None, data: ReportInput, t: dict[str, str]) -> str:
    """The conclusions given, else the source's own concluding section, else an honest line
    saying it states none: never a sentence picked from elsewhere by its words."""
    if conclusions:
        return md_prose(conclusions)
    if data.conclusion:
        return md_prose(data.conclusion)
    return t["no_conclusion_session" if data.source.startswith("session ") else "no_conclusion_notebook"]


def _charts(parts: _Parts) -> list[dict[str, str]]:
    """Each chart as "Figure N: caption (cell M)", its preview, and its files for the manifest."""
    t, entries = parts.t, []
    for number, group in enumerate(parts.groups, 1):
        name = md_name(group.base)
        preview = group.preview or group.files[0]
        link = chart_link(preview, parts.link_base)
        kind = preview_kind(preview)
        if kind == "image":
            shown = f"![{name}]({link})"
        else:
            # open_html, open_interactive (charts.preview_kind)
            shown = f"[{t.get(f'open_{kind}', t['open_file'])}]({link})"
        downloads = t["sep"].join(
            f"[{md_name(file.name)}]({chart_link(file, parts.link_base)})" for file in group.files
        )
        step = parts.step_of(group.files[0].step_id)
        cited = t["cited"].format(ref=cells.reference(step, t)) if step is not None else ""
        heading = t["figure"].format(n=number, name=md_name(chart_title(group, parts.data.steps))) + cited
        entries.append({"heading": heading, "preview": shown, "downloads": name + t["colon"] + downloads})
    return entries
