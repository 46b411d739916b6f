"""Markdown escaping for the report: every value and every piece of prose reaches the report's
Markdown through here.

Names and values get every character that could start markup escaped (``md_inline``, ``md_name``,
``md_table``); prose (methods, summary, conclusions, a notebook's own text) stays Markdown but
cannot break the report's structure (``md_prose``); code is a fenced block no content can close
(``md_code``).
"""

from __future__ import annotations

import re
from typing import Any

from nini.report.findings import business_text
from nini.report.headings import FENCE
from nini.report.model import Table

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
            lines.append(
                _MD_LINE_START.sub(
                    lambda m: "\\" + m.group(1) if not m.group(1)[0].isdigit() else m.group(1) + "\\", line
                )
            )
    return f"\\\n{indent}".join(lines)


def md_name(text: Any) -> str:
    """A one-line name (title, chart, dataset, column) as literal Markdown."""
    return md_inline(" ".join(str(text).split()))


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
        opening = FENCE.match(line)
        if opening:
            fence = opening.group(1)
            out.append(line)
            continue
        heading = _HEADING.match(line)
        if heading:
            line = "#" * max(4, len(heading.group(1))) + line[heading.end() :]
        elif _SETEXT.match(line) and out and out[-1].strip():
            out.append("")
        parts = _CODE_SPAN.split(line)
        out.append("".join(part if i % 2 else _inert(part) for i, part in enumerate(parts)))
    if fence:
        out.append(fence)
    return "\n".join(out)


def md_table(table: Table) -> str:
    """A table as a Markdown (GFM) table, every cell escaped; the first row is the header."""

    def cell(text: str) -> str:  # inside a table a leading "1." or "-" starts no list: no line-start escape
        text = " ".join(text.split())
        return _MD_ENTITY.sub(r"\\&", _MD_UNDERSCORE.sub(r"\\_", _MD_SPECIAL.sub(r"\\\1", text))) or " "

    def row(cells: tuple[str, ...]) -> str:
        return "| " + " | ".join(cell(text) for text in cells) + " |"

    header, *rows = table
    return "\n".join([row(header), "|" + "|".join(" --- " for _ in header) + "|", *(row(r) for r in rows)])


def md_code(code: str, *, max_lines: int = 30, max_chars: int = 3000) -> str:
    """``code`` as a fenced block, at most ``max_lines`` lines and ``max_chars`` characters (then
    "…"): its fence is longer than any run of backticks inside, so no content closes it early."""
    lines = code.strip("\n").splitlines() or [""]
    shown = "\n".join(lines[:max_lines])
    cut = len(lines) > max_lines or len(shown) > max_chars
    shown = shown[:max_chars].rstrip() + ("\n…" if cut else "")
    longest = max((len(run) for run in re.findall(r"`+", shown)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}\n{shown}\n{fence}"
