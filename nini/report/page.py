"""The report's templates and its HTML page: the Markdown rendered by markdown-it with raw HTML
off, passed through nini.safe_html (model text is in it: summary, conclusions, findings from
outputs), inside ``templates/page.html.j2`` (autoescaped), images embedded as data: URIs, and
anchors on the cells the report refers to.
"""

from __future__ import annotations

import base64
import html
import os
import re
from functools import lru_cache
from pathlib import Path
from urllib.parse import quote

import jinja2
from markdown_it import MarkdownIt
from markupsafe import Markup

from nini.errors import NiniError
from nini.report.charts import ChartGroup, preview_kind, split_name
from nini.report.model import ChartFile
from nini.safe_html import clean_html

TEMPLATES = Path(__file__).parent / "templates"
IMAGE_TYPES = {
    "png": "image/png",
    "jpg": "image/jpeg",
    "jpeg": "image/jpeg",
    "webp": "image/webp",
    "gif": "image/gif",
    "svg": "image/svg+xml",
}
_IMG_SRC = re.compile(r'(<img src=")([^"]*)(")')
_IMG_TAG = re.compile(r'<img src="([^"]*)" alt="([^"]*)"[^>]*>')  # as markdown-it writes them, attributes escaped
_CONTENT_SLOT = "<!-- nini report content -->"


@lru_cache(maxsize=1)
def templates() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=jinja2.select_autoescape(enabled_extensions=("html.j2",), default_for_string=False),
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
    )


def chart_link(file: ChartFile, link_base: Path | None) -> str:
    """The URL of ``file`` from the report's folder: relative, percent-encoded, never absolute."""
    if link_base is None:
        return quote(file.name)
    try:
        relative = os.path.relpath(file.path, link_base)
    except ValueError:  # another drive on Windows: no relative path exists
        relative = file.name
    return quote(Path(relative).as_posix(), safe="/")


def render_html(
    markdown: str,
    title: str,
    lang: str,
    embedded: list[ChartGroup],
    link_base: Path | None,
    anchors: tuple[str, dict[str, str]] | None = None,
) -> str:
    """``markdown`` as a self-contained page; ``embedded`` charts' image previews as data: URIs.

    ``anchors``: (the heading of the "Cells referred to" section, {a cell's heading there: its
    anchor}): those headings get their ``id`` so that "cell 12" in a finding links to its code.
    The sanitizer keeps no ``id`` (model text must not set one), so they are added after it, and
    only in that section, whose headings the report wrote."""
    md = MarkdownIt("commonmark", {"html": False}).enable("table")
    previews = {
        md.normalizeLink(chart_link(group.preview, link_base)): group.preview
        for group in embedded
        if group.preview and preview_kind(group.preview) == "image"
    }
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
    if anchors is not None:
        content = _with_anchors(content, *anchors)
    page = (
        templates()
        .get_template("page.html.j2")
        .render(lang="zh-CN" if lang == "zh" else lang, title=title, content=Markup(_CONTENT_SLOT))
    )
    # The content joins the page after rendering: passed through jinja, a 20 MB page of embedded
    # images is copied several times over (escape checks, Markup, concatenation) for nothing.
    head, _, tail = page.partition(_CONTENT_SLOT)
    return "".join((head, content, tail))


def _with_anchors(content: str, section: str, anchors: dict[str, str]) -> str:
    opening = f"<h2>{html.escape(section, quote=False)}</h2>"
    start = content.find(opening)
    if start < 0:
        return content
    end = content.find("<h2>", start + len(opening))
    end = len(content) if end < 0 else end
    part = content[start:end]
    for heading, anchor in anchors.items():
        text = html.escape(heading, quote=False)
        part = part.replace(f"<h3>{text}</h3>", f'<h3 id="{anchor}">{text}</h3>', 1)
    return content[:start] + part + content[end:]


def _data_uri(file: ChartFile) -> str | None:
    try:
        data = file.read_bytes()
    except (OSError, NiniError):
        return None  # gone since it was recorded, or refused (a link): the relative link stays
    return f"data:{IMAGE_TYPES[split_name(file.name)[1]]};base64,{base64.b64encode(data).decode('ascii')}"
