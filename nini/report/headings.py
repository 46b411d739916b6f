"""What a notebook's Markdown says about its structure: its headings (a step's section), its title
and its own concluding section.

Authors write headings as Markdown (``## Results``), setext underlines or HTML (``<h1>``), often
with badges, links and emphasis in them; a report needs their words only. A title is chosen by
where it stands (before any code), never by being the first level-1 heading anywhere ("Get the
Data", "Setup" are chapters); a conclusion is the section the notebook heads as one, never a
sentence picked by keyword.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MAX_HEADING_CHARS = 120
MAX_CONCLUSION_CHARS = 1_500
MAX_LINE_CHARS = 2_000  # of a Markdown line looked at: a longer one is cut first
MAX_CELL_LINES = 20_000  # of a Markdown cell looked at for headings

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")  # a fenced code block's opening (or closing) line
_MARKS = frozenset("`~#=-")  # what a fence, an ATX heading or a setext underline starts with
_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
# Each pattern stops at the next opening of its kind or after a bounded run, so that hostile text
# (a line of 20,000 "<h1 ") costs linear time, not quadratic.
_HTML_HEADING = re.compile(r"<h([1-6])\b[^<>]*>(.{0,300}?)</h\1\s*>", re.IGNORECASE | re.DOTALL)
_IMAGE = re.compile(r"!\[[^\[\]]*\]\([^()]*\)")
_LINK = re.compile(r"\[([^\[\]]*)\]\([^()]*\)|\[([^\[\]]*)\]\[[^\[\]]*\]")
_TAG = re.compile(r"<!--.{0,2000}?-->|<[^<>]*>", re.DOTALL)
_EMPHASIS = re.compile(r"(\*{1,3}|_{1,3}|~~|`{1,3})(\S(?:[^\n]{0,300}?\S)?)\1")
_BEFORE_PUNCTUATION = re.compile(r"\s+([.,;:!?。，、；：！？)])")
_ANCHOR = re.compile(r"\s*\{#[^}]*\}\s*$")  # ``## Results {#results}``
_RULE = re.compile(r"^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$")
_BOLD_LINE = re.compile(r"^\s*(\*\*|__)(?!\s)(.+?)(?<!\s)\1\s*$")
# Level-1 headings that open a notebook's chores, not its subject: never its title.
_SET_UP = re.compile(
    r"^(?:setup|set[ -]up|imports?|installation|install|requirements|prerequisites|dependencies"
    r"|environment|configuration|table of contents|contents|环境|准备|安装|目录)\W*$",
    re.IGNORECASE,
)
_FRONT_MATTER_TITLE = re.compile(r"^title\s*:\s*(.+?)\s*$", re.MULTILINE)
# Headings a notebook closes with. The conclusion kind ranks above a summary, which ranks above
# a discussion or results section; within one kind the last such heading wins.
_NUMBERING = re.compile(
    r"^(?:(?:step|part|section|chapter)\s*[\dIVX]+[.:)]?\s*|[\dIVX]+(?:\.\d+)*[.:)]?\s+"
    r"|第?[\d一二三四五六七八九十]+[章节部分]?[、.．:：)）]?\s*)",
    re.IGNORECASE,
)
_JOINED = r"(?:\s*(?:and|&|与|和|及|、|/)\s*.*)?"
_CONCLUSION_KINDS = (
    re.compile(
        rf"^(?:final |main |key |overall )?(?:conclusions?|takeaways?|key findings|wrap[- ]?up){_JOINED}[.:!]?$"
        r"|^(?:结论|总结)",
        re.IGNORECASE,
    ),
    re.compile(rf"^(?:summary|in summary|小结|summing up){_JOINED}[.:!]?$|^小结", re.IGNORECASE),
    re.compile(rf"^(?:discussion|results?|findings|结果与讨论|讨论){_JOINED}[.:!]?$", re.IGNORECASE),
)


@dataclass(frozen=True)
class Heading:
    level: int  # 1-6
    text: str  # its words, without Markdown or HTML
    first: int  # the line of the cell's source it starts on
    line: int  # the line it ends on (a setext heading is two lines)


def plain(text: str) -> str:
    """Markdown or HTML text as its words: images and badges dropped, links as their text,
    tags, emphasis and entities removed, whitespace collapsed."""
    text = _IMAGE.sub("", text[:MAX_LINE_CHARS])
    text = _LINK.sub(lambda m: m.group(1) if m.group(1) is not None else m.group(2), text)
    text = _TAG.sub(" ", text)
    for _ in range(3):  # nested emphasis: ***a*** or **_a_**
        text = _EMPHASIS.sub(r"\2", text)
    text = _BEFORE_PUNCTUATION.sub(r"\1", " ".join(html.unescape(text).split()))  # "works ." of "<b>works</b>."
    return _ANCHOR.sub("", text).strip()


def headings(source: str) -> list[Heading]:
    """The headings of one Markdown cell, in order: ATX (``## x``), setext (``x`` over ``===``)
    and HTML ``<h1>``-``<h6>``; lines in fenced code are not headings (a Python comment there)."""
    found: list[Heading] = []
    lines = source.splitlines()[:MAX_CELL_LINES]
    # most lines are prose: only those a fence, a heading or its underline can start on are looked at
    marked = [n for n, line in enumerate(lines) if line[:4].lstrip()[:1] in _MARKS or "<h" in line or "<H" in line]
    fence = ""
    for number in marked:
        line = lines[number][:MAX_LINE_CHARS]
        if fence:
            fence = "" if line.strip().startswith(fence) else fence
            continue
        if opened := FENCE.match(line):
            fence = opened.group(1)
            continue
        if atx := _ATX.match(line):
            found.append(Heading(len(atx.group(1)), _bounded(plain(atx.group(2) or "")), number, number))
        elif (
            (under := _SETEXT.match(line))
            and number
            and lines[number - 1].strip()
            and not _ATX.match(lines[number - 1][:MAX_LINE_CHARS])
        ):
            found.append(
                Heading(1 if under.group(1)[0] == "=" else 2, _bounded(plain(lines[number - 1])), number - 1, number)
            )
        else:
            for tag in _HTML_HEADING.finditer(line):
                found.append(Heading(int(tag.group(1)), _bounded(plain(tag.group(2))), number, number))
    return [heading for heading in found if heading.text]


def _bounded(text: str) -> str:
    return text if len(text) <= MAX_HEADING_CHARS else text[: MAX_HEADING_CHARS - 1].rstrip() + "…"


def notebook_title(notebook: Any, path: Path, first_code: int) -> str:
    """The notebook's title: its metadata title (nbconvert's ``metadata.title``, or the
    ``title:`` of a Quarto/jupytext YAML front matter cell), else its first level-1 heading before
    any code (``first_code``: the index of the first code cell; "Setup" and such are chores, not
    titles) or a line of bold text opening it (``**Chapter 2 – ...**``, as handson-ml3 does),
    whichever comes first, else its file name made readable."""
    given = notebook.metadata.get("title")
    if isinstance(given, str) and plain(given):
        return plain(given)
    opening = notebook.cells[:first_code]
    for cell in opening:
        source = cell_text(cell.get("source"))
        if cell.cell_type in ("raw", "markdown") and source.lstrip().startswith("---"):
            front = source.lstrip()[3:].split("\n---", 1)[0]
            if (title := _FRONT_MATTER_TITLE.search(front)) and (words := plain(title.group(1).strip("'\""))):
                return words
    texts = [cell_text(cell.get("source")) for cell in opening if cell.cell_type == "markdown"]
    for position, source in enumerate(texts):
        first = next((line for line in source.splitlines() if line.strip()), "")
        if position == 0 and (bold := _BOLD_LINE.match(first)) and (words := plain(bold.group(2))):
            return _bounded(words)  # a bold line opening the notebook stands where a title stands
        level_1 = [heading.text for heading in headings(source) if heading.level == 1]
        if level_1 and not _SET_UP.match(level_1[0]):
            return level_1[0]
    return readable_name(path.stem)


def readable_name(stem: str) -> str:
    """A file name as words: ``02_end_to_end_machine_learning_project`` reads "02 end to end
    machine learning project" (dashes stay when the name also has underscores or spaces)."""
    words = stem.replace("_", " ") if ("_" in stem or " " in stem) else stem.replace("-", " ")
    words = " ".join(words.split()) or stem
    return words[0].upper() + words[1:]


def conclusion(cells: list[Any]) -> str | None:
    """The text of the notebook's own concluding section (Conclusion(s), Summary, Results,
    Discussion, Takeaways, 结论, 总结, 小结, at any level): its Markdown up to the next heading of
    the same or a higher level, HTML stripped, at most ``MAX_CONCLUSION_CHARS``; None when the
    notebook heads no section so, or leaves it empty."""
    sections = [
        (cell_index, heading)
        for cell_index, cell in enumerate(cells)
        if cell.cell_type == "markdown"
        for heading in headings(cell_text(cell.get("source")))
    ]
    for kind in _CONCLUSION_KINDS:
        chosen = [(i, at, h) for at, (i, h) in enumerate(sections) if kind.match(_NUMBERING.sub("", h.text).strip())]
        for cell_index, at, heading in reversed(chosen):
            if text := _section_text(cells, sections, cell_index, at, heading):
                return text
    return None


def _section_text(
    cells: list[Any], sections: list[tuple[int, Heading]], cell_index: int, at: int, heading: Heading
) -> str:
    """The Markdown under ``heading`` (the ``at``-th of ``sections``), as plain paragraphs."""
    end = next(((i, h) for i, h in sections[at + 1 :] if h.level <= heading.level), None)
    parts: list[str] = []
    for index in range(cell_index, end[0] + 1 if end else len(cells)):
        cell = cells[index]
        if cell.cell_type != "markdown":
            continue
        lines = cell_text(cell.get("source")).splitlines()
        start = heading.line + 1 if index == cell_index else 0
        stop = end[1].first if end and index == end[0] else len(lines)
        # a rule (``---``) closes the section too: what follows it is an aside ("Readers may ignore ...")
        ruled = next((at for at in range(start, stop) if _RULE.match(lines[at])), None)
        parts.append(_paragraphs(lines[start : stop if ruled is None else ruled]))
        if ruled is not None or sum(map(len, parts)) > MAX_CONCLUSION_CHARS:
            break
    text = "\n\n".join(part for part in parts if part)
    return _cut(text) if re.search(r"[^\W_]{2,}", text) else ""  # a placeholder ("...") is no conclusion


def _paragraphs(lines: list[str]) -> str:
    """Markdown lines as plain text, one paragraph per blank-line block, list items kept as lines;
    sub-headings under the section stay as lines of their words."""
    blocks: list[str] = []
    current: list[str] = []
    fence = ""
    for line in [*lines[:MAX_CONCLUSION_CHARS], ""]:  # enough lines to fill a conclusion
        line = line[:MAX_LINE_CHARS]
        if fence or (opened := FENCE.match(line)):
            fence = "" if fence and line.strip().startswith(fence) else (fence or (opened.group(1) if opened else ""))
            continue  # code shown in prose is not a conclusion's words
        if not line.strip():
            if current:
                blocks.append("\n".join(current))
            current = []
            continue
        item = re.match(r"^\s*(?:[-*+]|\d+[.)])\s+", line)
        words = plain(_ATX.sub(lambda m: m.group(2) or "", line))
        if words:
            current.append(f"- {plain(line[item.end() :])}" if item else words)
    return "\n\n".join(blocks)


def _cut(text: str) -> str:
    """At most MAX_CONCLUSION_CHARS, cut at the end of a sentence or word when there is one."""
    if len(text) <= MAX_CONCLUSION_CHARS:
        return text
    head = text[: MAX_CONCLUSION_CHARS - 1]
    stop = max(head.rfind(". "), head.rfind("。"), head.rfind("\n"))
    if stop < MAX_CONCLUSION_CHARS // 2:
        stop = head.rfind(" ")
    return (head[: stop + 1] if stop > 0 else head).rstrip() + "…"


def cell_text(value: Any) -> str:
    """nbformat keeps multi-line text either as one string or as a list of lines."""
    if value is None:
        return ""
    return "".join(value) if isinstance(value, list) else str(value)
