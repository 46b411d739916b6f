"""The layered report: business sections from a ``ReportInput``, observability only in an appendix.

Markdown comes from ``templates/report.md.j2`` (and ``appendix.md.j2``); every value is escaped
here before it reaches a template. HTML is that Markdown rendered by markdown-it with raw HTML off,
passed through nini.safe_html (model text is in it: summary, conclusions, findings from outputs),
inside ``templates/page.html.j2`` (autoescaped), images embedded as data: URIs.
"""

from __future__ import annotations

import base64
import html
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal
from urllib.parse import quote, unquote

import jinja2
from markdown_it import MarkdownIt
from markupsafe import Markup

from nini.errors import ErrorCode, NiniError
from nini.report.charts import ChartGroup, chart_title, group_charts, preview_kind, split_name
from nini.report.findings import Finding, business_text, key_findings, relevant_steps
from nini.report.methods import condense_notes, libraries
from nini.report.model import ChartFile, ReportInput, Step, ToolCallInfo
from nini.report.narrative import Narrative, Refusal
from nini.report.values import DEFAULT_DIGITS, Table
from nini.report.wording import TEXT
from nini.safe_html import clean_html

TEMPLATES = Path(__file__).parent / "templates"
MAX_METHOD_STEPS = 15
MAX_COLUMNS = 12
SUMMARY_HIGHLIGHTS = 3
SUMMARY_CHARTS = 6
IMAGE_TYPES = {"png": "image/png", "jpg": "image/jpeg", "jpeg": "image/jpeg", "webp": "image/webp",
               "gif": "image/gif", "svg": "image/svg+xml"}

LANGUAGES = {"python": "Python", "r": "R"}
_IMG_SRC = re.compile(r'(<img src=")([^"]*)(")')
_IMG_TAG = re.compile(r'<img src="([^"]*)" alt="([^"]*)"[^>]*>')  # as markdown-it writes them, attributes escaped
_CONTENT_SLOT = "<!-- nini report content -->"
_CONCLUSION_NOTE = re.compile(r"结论|建议|总结|小结|讨论|conclusion|recommend|takeaway|summary|discussion", re.I)


@dataclass(frozen=True)
class ReportOptions:
    title: str | None = None
    methods: str | None = None  # Markdown written by the user or the agent; derived from the steps when None
    summary_text: str | None = None  # derived from the findings when None
    conclusions: str | None = None  # conclusion-like notes, else a neutral line, when None
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
    charts: list[ChartGroup]  # every chart, even when the charts section is left out
    findings: list[Finding]  # every key finding, even when that section is left out
    link_base: Path | None = None  # the folder chart links are relative to
    model_written: tuple[str, ...] = ()  # the sections ("summary", "conclusions") a model wrote
    model_refused: dict[str, Refusal] = field(default_factory=dict)  # a model's sections not used, and why

    def linked_files(self) -> dict[str, ChartFile]:
        """Each chart file by the link the report uses for it (unquoted), for attachments."""
        return {unquote(chart_link(file, self.link_base)): file for group in self.charts for file in group.files}


def build_report(
    data: ReportInput, options: ReportOptions, *, embed_images: bool = True, link_base: Path | None = None,
    narrative: Narrative | None = None,
) -> RenderedReport:
    """The report of ``data``.

    Chart links are relative to ``link_base`` (the folder the report files go to), or bare file
    names when it is None. With ``embed_images`` the HTML carries image previews as data: URIs
    (SVG too, never inline markup: an ``<img>`` does not run an SVG's scripts); other formats are links.
    A ``narrative`` (``narrative.narrate``) writes the summary and conclusions the caller gave no
    text for, marked as a model's; the conclusions a notebook's author wrote stay theirs.
    """
    if options.lang not in TEXT:
        raise NiniError(ErrorCode.INVALID_ARGUMENT, f"lang must be one of {', '.join(TEXT)}, not {options.lang!r}")
    t = TEXT[options.lang]
    steps = relevant_steps(data.steps)
    findings = key_findings(data.steps, digits=options.decimals)
    groups = group_charts(data.charts)
    title = " ".join(business_text(options.title or data.title or t["title"]).split()) or t["title"]
    method_notes, conclusion_notes = _split_notes(data.notes, title, t)
    open_sections = [section for section, given in (("summary", options.summary_text),
                                                    ("conclusions", options.conclusions or conclusion_notes)) if not given]
    model_text = {s: text for s, text in (narrative.sections if narrative else {}).items() if s in open_sections}
    model_refused = {s: why for s, why in (narrative.refused if narrative else {}).items() if s in open_sections}
    mark = t["model_wrote"].format(model=_model_name(narrative, t)) if model_text else ""
    body = _templates().get_template("report.md.j2").render(
        t=t,
        title=md_inline(title),
        datasets=_datasets(data, options, t),
        methods=_methods(options.methods, steps, method_notes, t),
        summary=md_prose(options.summary_text) if options.summary_text
        else _model_section(model_text["summary"], mark) if "summary" in model_text
        else _summary(findings, data, groups, options, t),
        charts=_charts(groups, link_base, t) if options.include_charts else None,
        findings=[_finding(finding) for finding in findings] if options.include_key_findings else None,
        conclusions=_model_section(model_text["conclusions"], mark) if "conclusions" in model_text
        else _conclusions(options.conclusions, conclusion_notes, t),
    )
    narrated = _narrative_lines(narrative, list(model_text), model_refused, t)
    appendix = _appendix(data, steps, t, narrated) if options.include_session_stats else ""
    markdown = body + appendix
    page = _html(markdown, title, options.lang, groups if embed_images else [], link_base)
    return RenderedReport(title=title, markdown=markdown, html=page, body_markdown=body, charts=groups,
                          findings=findings, link_base=link_base, model_written=tuple(model_text),
                          model_refused=model_refused)


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


@lru_cache(maxsize=1)
def _templates() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=jinja2.select_autoescape(enabled_extensions=("html.j2",), default_for_string=False),
        trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True, undefined=jinja2.StrictUndefined,
    )


# Markdown escaping. Names and values get every character that could start markup escaped;
# prose (methods, summary, conclusions) stays Markdown but cannot break the report's structure.
_MD_SPECIAL = re.compile(r"([\\`*\[\]<>|~#$])")
_MD_UNDERSCORE = re.compile(r"(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")  # intraword _ is never emphasis
_MD_ENTITY = re.compile(r"&(?=#?\w+;)")
_MD_LINE_START = re.compile(r"^([-+=]|\d+(?=[.)]))")


def md_inline(text: Any, *, indent: str = "  ") -> str:
    """``text`` as literal Markdown; lines become hard breaks continued at ``indent`` (a list item's)."""
    lines = []
    for line in str(text).splitlines():
        line = " ".join(line.split())
        if line:
            line = _MD_ENTITY.sub(r"\\&", _MD_UNDERSCORE.sub(r"\\_", _MD_SPECIAL.sub(r"\\\1", line)))
            lines.append(_MD_LINE_START.sub(lambda m: "\\" + m.group(1) if not m.group(1)[0].isdigit()
                                            else m.group(1) + "\\", line))
    return f"\\\n{indent}".join(lines)


def md_name(text: Any) -> str:
    """A one-line name (title, chart, dataset, column) as literal Markdown."""
    return md_inline(" ".join(str(text).split()))


_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_HEADING = re.compile(r"^ {0,3}(#{1,6})(?=\s|$)")
_SETEXT = re.compile(r"^ {0,3}(?:=+|-+)\s*$")
_CODE_SPAN = re.compile(r"(`+[^`]*`+)")
# an inline image (alt, url, title), or else any other image's opening (reference style)
_IMAGE = re.compile(r'!\[(?P<alt>[^\]\n]*)\]\((?P<url>[^)\s]*)(?P<title>\s+"[^"\n]*")?\)|!\[')
_TAG_START = re.compile(r"<(?=[A-Za-z/!?])")


def _inert(text: str) -> str:
    """Markdown outside code with its HTML tags written out as text, and its images (but embedded
    ``data:image/`` ones, which load nothing) as links to them."""
    return _IMAGE.sub(_image_as_link, _TAG_START.sub(r"\\<", text))


def _image_as_link(found: re.Match[str]) -> str:
    url = found.group("url")
    if url is None:  # ![alt][ref] and the like: the "!" as text, the rest a link
        return "\\!["
    if url.startswith("data:image/"):
        return found.group(0)
    return f"[{found.group('alt') or url}]({url}{found.group('title') or ''})"


def md_prose(text: str) -> str:
    """Markdown written by a person, fit to sit inside one section of the report.

    Headings are demoted to level 4 (no new sections), an unclosed code fence is closed (it would
    swallow the rest of the report), a setext underline cannot turn a line into a heading, HTML
    tags outside code are escaped, an image (``![alt](url)``) becomes a link to it (a Markdown
    viewer would fetch a remote one: JupyterLab's sanitizer lets remote images through), and
    absolute paths and tool names are removed (``business_text``).
    """
    out: list[str] = []
    fence = ""
    for line in business_text(text).replace("\r\n", "\n").replace("\r", "\n").strip("\n").split("\n"):
        if fence:
            out.append(line)
            stripped = line.strip()
            if stripped and set(stripped) == {fence[0]} and len(stripped) >= len(fence):
                fence = ""
            continue
        opening = _FENCE.match(line)
        if opening:
            fence = opening.group(1)
            out.append(line)
            continue
        heading = _HEADING.match(line)
        if heading:
            line = "#" * max(4, len(heading.group(1))) + line[heading.end():]
        elif _SETEXT.match(line) and out and out[-1].strip():
            out.append("")
        parts = _CODE_SPAN.split(line)
        out.append("".join(part if i % 2 else _inert(part) for i, part in enumerate(parts)))
    if fence:
        out.append(fence)
    return "\n".join(out)


def _split_notes(notes: list[str], title: str, t: dict[str, str]) -> tuple[list[str], list[str]]:
    """Notes (notebook Markdown cells) for the methods and for the conclusions, by their first line.

    A note's opening heading goes when the report already says it: a conclusions note sits under
    the conclusions heading, and a heading repeating the title or a section name adds nothing.
    """
    repeated = {_plain(text) for text in (title, t["methods"], t["conclusions"], t["summary"], t["datasets"])}
    methods, conclusions = [], []
    for note in notes:
        lines = note.strip("\n").splitlines()
        first = next((line for line in lines if line.strip()), "")
        if not first:
            continue
        is_conclusion = bool(_CONCLUSION_NOTE.search(first))
        heading = _HEADING.match(first)
        if heading and (is_conclusion or _plain(first[heading.end():]) in repeated):
            note = "\n".join(lines[lines.index(first) + 1:]).strip("\n")
        if note.strip():
            (conclusions if is_conclusion else methods).append(note)
    return methods, conclusions


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


def _languages(steps: list[Step], t: dict[str, str]) -> str:
    """The languages used, each with the main libraries its code imported: "Python（pandas、scipy）"."""
    used = libraries(steps)
    names = [t["libs"].format(lang=name, names=t["sep"].join(used[language])) if used.get(language) else name
             for language, name in {step.language: LANGUAGES.get(step.language, step.language.capitalize())
                                    for step in steps}.items()]  # fmt: skip
    return t["sep"].join(names[:-1]) + t["and"] + names[-1] if len(names) > 1 else names[0]


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
    langs = md_name(_languages(steps, t))
    if not described:
        return "\n\n".join(parts + [t["methods_plain"].format(langs=langs)])
    items = [f"{number}. {md_name(text)}" for number, text in enumerate(list(described.values())[:MAX_METHOD_STEPS], 1)]
    more = [t["methods_more"]] if len(described) > MAX_METHOD_STEPS else []
    return "\n\n".join(parts + [t["methods_steps"].format(langs=langs), "\n".join(items), *more])


def _summary(
    findings: list[Finding], data: ReportInput, groups: list[ChartGroup], options: ReportOptions, t: dict[str, str]
) -> str:
    """The datasets, the first findings, and the charts by name: a notebook whose work is charts
    has a summary too, not "nothing to summarise"."""
    names = options.dataset_names if options.dataset_names is not None else [d.name for d in data.datasets]
    parts = [t["summary_datasets"].format(names=t["sep"].join(md_name(name) for name in names))] if names else []
    charts = [chart_title(group, data.steps) for group in groups]
    if charts:
        shown = t["sep"].join(md_name(name) for name in dict.fromkeys(charts[:SUMMARY_CHARTS]))
        charted = t["summary_charts"].format(n=len(charts), names=shown + (t["more"] if len(charts) > SUMMARY_CHARTS else ""))
    if not findings:
        return "\n\n".join(parts + [charted if charts else t["summary_none"]])
    highlights = []
    # a table under a bare name ("df") says nothing in one line: the highlights are statements
    stated = [f for f in findings if not (f.table and ": " not in f.text.splitlines()[0])] or findings
    for finding in stated[:SUMMARY_HIGHLIGHTS]:
        first = finding.text.splitlines()[0]
        highlights.append("- " + md_inline(first if len(first) <= 120 else first[:119].rstrip() + "…"))
    return "\n\n".join(parts + [t["summary_findings"].format(n=len(findings)), "\n".join(highlights)]
                       + ([charted] if charts else []))


def _finding(finding: Finding) -> str:
    """One finding as a list item's Markdown: its text, then its table (indented into the item)."""
    text = md_inline(finding.text)
    if not finding.table:
        return text
    return text + "\n\n" + "\n".join("  " + line for line in md_table(finding.table).splitlines())


def md_table(table: Table) -> str:
    """A table as a Markdown (GFM) table, every cell escaped; the first row is the header."""

    def cell(text: str) -> str:  # inside a table a leading "1." or "-" starts no list: no line-start escape
        text = " ".join(text.split())
        return _MD_ENTITY.sub(r"\\&", _MD_UNDERSCORE.sub(r"\\_", _MD_SPECIAL.sub(r"\\\1", text))) or " "

    def row(cells: tuple[str, ...]) -> str:
        return "| " + " | ".join(cell(text) for text in cells) + " |"

    header, *rows = table
    return "\n".join([row(header), "|" + "|".join(" --- " for _ in header) + "|", *(row(r) for r in rows)])


def _conclusions(conclusions: str | None, notes: list[str], t: dict[str, str]) -> str:
    if conclusions:
        return md_prose(conclusions)
    return "\n\n".join(md_prose(note) for note in notes) if notes else t["conclusions_default"]


def chart_link(file: ChartFile, link_base: Path | None) -> str:
    """The URL of ``file`` from the report's folder: relative, percent-encoded, never absolute."""
    if link_base is None:
        return quote(file.name)
    try:
        relative = os.path.relpath(file.path, link_base)
    except ValueError:  # another drive on Windows: no relative path exists
        relative = file.name
    return quote(Path(relative).as_posix(), safe="/")


def _charts(groups: list[ChartGroup], link_base: Path | None, t: dict[str, str]) -> list[dict[str, str]]:
    entries = []
    for number, group in enumerate(groups, 1):
        name = md_name(group.base)
        preview = group.preview or group.files[0]
        link = chart_link(preview, link_base)
        kind = preview_kind(preview)
        if kind == "image":
            shown = f"![{name}]({link})"
        else:
            shown = f"[{t['open_html'] if kind == 'html' else t['open_file']}]({link})"
        downloads = t["sep"].join(f"[{md_name(file.name)}]({chart_link(file, link_base)})" for file in group.files)
        entries.append({"heading": t["figure"].format(n=number, name=name), "preview": shown,
                        "downloads": name + t["colon"] + downloads})
    return entries


def _duration(ms: float | None) -> str:
    if ms is None:
        return "—"
    return f"{ms:.0f} ms" if ms < 1000 else f"{ms / 1000:.1f} s"


def _total(values: list[int | None]) -> float | None:
    known = [value for value in values if value is not None]
    return sum(known) if known else None


def _appendix(data: ReportInput, relevant: list[Step], t: dict[str, str], narrated: list[str]) -> str:
    def usage(name: str, statuses: list[str], durations: list[int | None]) -> str:
        failed = sum(status in ("failed", "interrupted") for status in statuses)
        return t["calls"].format(name=md_name(name), count=len(statuses), failed=failed, duration=_duration(_total(durations)))

    calls: dict[str, list[ToolCallInfo]] = {}
    for call in data.tool_calls:
        calls.setdefault(call.name, []).append(call)
    languages: dict[str, list[Step]] = {}
    for step in data.steps:
        languages.setdefault(step.language, []).append(step)
    failed = [step for step in data.steps if step.status == "failed"]
    kinds = Counter(str((step.error or {}).get("code") or t["unknown"]) for step in failed)
    standing = sum(step.status == "succeeded" and not step.rolled_back for step in data.steps)
    durations = [step.duration_ms for step in data.steps if step.duration_ms is not None]
    sections = {
        "tool_calls": [usage(name, [c.status for c in group], [c.duration_ms for c in group]) for name, group in calls.items()],
        "executions": [usage(LANGUAGES.get(language, language), [s.status for s in group], [s.duration_ms for s in group])
                       for language, group in languages.items()],
        "failures": [
            t["failed_steps"].format(n=len(failed))
            + (t["error_kinds"].format(kinds=t["sep"].join(f"{md_name(k)} {n}" for k, n in kinds.most_common())) if kinds else ""),
            t["superseded"].format(n=standing - len(relevant)),
            t["rolled_back"].format(n=sum(step.rolled_back for step in data.steps)),
            t["failed_calls"].format(n=sum(call.status in ("failed", "interrupted") for call in data.tool_calls)),
            *_failed_cells(data, t),
        ],
        "durations": [
            t["execution_time"].format(total=_duration(_total(durations)), longest=_duration(max(durations, default=None))),
            t["tool_time"].format(total=_duration(_total([call.duration_ms for call in data.tool_calls]))),
        ],
        "dataset_rows": [t["dataset_line"].format(name=md_name(d.name), rows=t["unknown"] if d.rows is None
                                                  else t["rows"].format(n=f"{d.rows:,}")) for d in data.datasets],
        "source": [md_name(data.source)],
    }  # fmt: skip
    if narrated:
        sections["narrative"] = narrated
    return _templates().get_template("appendix.md.j2").render(
        t=t, sections=[{"heading": t[key], "lines": lines} for key, lines in sections.items()])


def _failed_cells(data: ReportInput, t: dict[str, str]) -> list[str]:
    """The line saying which cells of a notebook run for the report failed (``--execute``), if any."""
    run = data.execution
    if run is None or not run.failed:
        return []
    cells = t["sep"].join(f"cell {n} ({t['timeout'] if why == 'timeout' else md_name(why)})" for n, why in run.failed)
    return [t["failed_cells"].format(n=len(run.failed), total=run.cells, cells=cells)]


def _html(markdown: str, title: str, lang: str, embedded: list[ChartGroup], link_base: Path | None) -> str:
    md = MarkdownIt("commonmark", {"html": False}).enable("table")
    previews = {md.normalizeLink(chart_link(group.preview, link_base)): group.preview
                for group in embedded if group.preview and preview_kind(group.preview) == "image"}
    uris: dict[str, str | None] = {}  # a preview's link -> its data: URI (None: gone or refused), read once

    def image_or_link(match: re.Match[str]) -> str:
        """An image the page can show (embedded as data:, or a preview of the report's that is
        embedded below), or else a plain link to it: the report loads nothing from anywhere (its
        CSP allows data: images only), so a remote image is never fetched."""
        source, alt = match.group(1), match.group(2)
        link = html.unescape(source)
        if link in previews and link not in uris:
            uris[link] = _data_uri(previews[link])
        if source.startswith("data:") or uris.get(link):
            return match.group(0)
        return f'<a href="{source}">{alt or source}</a>'

    content = _IMG_TAG.sub(image_or_link, md.render(markdown))
    # The one guard on model text (nini.safe_html) over all the page shows, whoever wrote it; the
    # report's own previews are the only images it keeps by link, and they are embedded next.
    embeddable = {link: uri for link, uri in uris.items() if uri}
    content = clean_html(content, images=embeddable)
    if embeddable:
        # Previews become data: URIs in the cleaned HTML, in one pass: megabytes of base64 never go
        # through the Markdown parser (whose link check refuses data:image/svg+xml), its renderer
        # or the sanitizer.
        def embed(match: re.Match[str]) -> str:
            uri = embeddable.get(html.unescape(match.group(2)))
            return match.group(1) + uri + match.group(3) if uri else match.group(0)

        content = _IMG_SRC.sub(embed, content)
    page = _templates().get_template("page.html.j2").render(
        lang="zh-CN" if lang == "zh" else lang, title=title, content=Markup(_CONTENT_SLOT))
    # The content joins the page after rendering: passed through jinja, a 20 MB page of embedded
    # images is copied several times over (escape checks, Markup, concatenation) for nothing.
    head, _, tail = page.partition(_CONTENT_SLOT)
    return "".join((head, content, tail))


def _data_uri(file: ChartFile) -> str | None:
    try:
        data = file.read_bytes()
    except (OSError, NiniError):
        return None  # gone since it was recorded, or refused (a link): the relative link stays
    return f"data:{IMAGE_TYPES[split_name(file.name)[1]]};base64,{base64.b64encode(data).decode('ascii')}"
