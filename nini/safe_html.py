"""Model-written text as HTML a browser may show: the one guard on nini's Python side.

Whatever a model writes (an answer, a report's conclusions, a column header it echoes) is data
from a stranger, and a browser showing it on the Jupyter origin would run it with the user's
rights (DESIGN.md section 9). So every such text reaches HTML only through here: Markdown is
rendered by markdown-it, then the HTML goes through nh3 (ammonia, a real HTML parser) with an
explicit allow-list. What survives only shows: no script, event handler, iframe, form or style;
links are http, https, mailto or relative, and carry ``rel="noopener noreferrer nofollow"``; an
image stays only as an embedded ``data:image/...`` URI (a remote one would be fetched, telling
its server who read what), otherwise its alt text is what shows.

Callers may wrap the result in markup of their own; they must not put model text into HTML any
other way.
"""

from __future__ import annotations

import functools
import html
import re
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any

import nh3
from markdown_it import MarkdownIt

__all__ = ["clean_html", "markdown_html"]

TAGS = {
    "a",
    "abbr",
    "b",
    "blockquote",
    "br",
    "caption",
    "code",
    "dd",
    "del",
    "details",
    "div",
    "dl",
    "dt",
    "em",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "hr",
    "i",
    "img",
    "ins",
    "kbd",
    "li",
    "mark",
    "ol",
    "p",
    "pre",
    "q",
    "s",
    "samp",
    "small",
    "span",
    "strong",
    "sub",
    "summary",
    "sup",
    "table",
    "tbody",
    "td",
    "tfoot",
    "th",
    "thead",
    "tr",
    "u",
    "ul",
}
ATTRIBUTES = {
    "a": {"href", "title"},
    "img": {"src", "alt", "title", "width", "height"},
    "ol": {"start"},
    "td": {"colspan", "rowspan"},
    "th": {"colspan", "rowspan"},
    "abbr": {"title"},
}
# every URL attribute is checked against these; data: is then kept on an <img>'s src only (_keep)
URL_SCHEMES = {"http", "https", "mailto", "data"}
LINK_REL = "noopener noreferrer nofollow"
# base64 only: an image the page embeds, decoded by the browser as an image (an SVG in an <img>
# runs no script and loads nothing)
# an <img> as nh3 writes it, and its attributes
_IMAGE_TAG = re.compile(r'<img((?:\s+[a-z-]+="[^"]*")*)\s*/?>')
_ATTRIBUTE = re.compile(r'([a-z-]+)="([^"]*)"')
_DATA_IMAGE = re.compile(r"data:image/(?:png|jpeg|gif|webp|svg\+xml);base64,[A-Za-z0-9+/=\s]*", re.IGNORECASE)


def clean_html(fragment: str, *, images: Iterable[str] = ()) -> str:
    """``fragment`` with everything but the allow-list taken out (tags dropped keep their text,
    except script and style, whose content goes too).

    ``images`` are image sources the caller vouches for besides embedded ones: its own files, by
    the link it wrote for them (a report's charts, embedded after cleaning so that megabytes of
    base64 never pass through the sanitizer). Nothing the model wrote belongs there.
    """
    vouched = frozenset(images)
    cleaned = (_cleaner(vouched) if vouched else _default_cleaner()).clean(fragment)
    return _IMAGE_TAG.sub(_alt_text, cleaned) if "<img" in cleaned else cleaned


def markdown_html(text: str) -> str:
    """Model-written Markdown (GFM tables and strikethrough, raw HTML allowed in) as safe HTML."""
    return clean_html(_markdown().render(text))


def _alt_text(match: re.Match[str]) -> str:
    """An image the filter took the source from becomes its alt text (a bare ``<img>`` shows a
    broken picture); the serializer's output is exact (attributes double-quoted, ``"`` escaped), so
    this reads it without parsing HTML, and it only ever replaces a tag by escaped text."""
    attributes = dict(_ATTRIBUTE.findall(match.group(1)))
    if "src" in attributes:
        return match.group(0)
    return html.escape(html.unescape(attributes.get("alt", "")), quote=False)


def _keep(vouched: frozenset[str], tag: str, attribute: str, value: str) -> str | None:
    """The attribute filter: an image's source only as an embedded ``data:image/...`` URI or one
    the caller vouched for (without one its alt text shows in its place), and no link to a data:
    URI (a page of the model's making)."""
    if tag == "img" and attribute == "src":
        source = value.strip()
        return source if _DATA_IMAGE.fullmatch(source) or source in vouched else None
    if attribute == "href" and value.strip().lower().startswith("data:"):
        return None
    return value


def _cleaner(vouched: frozenset[str]) -> nh3.Cleaner:
    return nh3.Cleaner(
        tags=TAGS,
        attributes=ATTRIBUTES,
        attribute_filter=functools.partial(_keep, vouched),
        url_schemes=URL_SCHEMES,
        link_rel=LINK_REL,
        strip_comments=True,
    )


@lru_cache(maxsize=1)
def _default_cleaner() -> nh3.Cleaner:
    return _cleaner(frozenset())


@lru_cache(maxsize=1)
def _markdown() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
    md.add_render_rule("image", _image)
    return md


def _image(self: Any, tokens: Sequence[Any], index: int, options: Any, env: Any) -> str:
    """A Markdown image: embedded (data:) it shows, anything else becomes its alt text."""
    token = tokens[index]
    source = str(token.attrGet("src") or "")
    alt = self.renderInlineAsText(token.children or [], options, env)
    if not _DATA_IMAGE.fullmatch(source):
        return html.escape(alt)
    return f'<img src="{html.escape(source)}" alt="{html.escape(alt)}">'
