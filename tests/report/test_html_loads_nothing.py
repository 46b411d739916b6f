"""The HTML report loads nothing from anywhere and runs nothing: data: images only, a remote image
becomes a link, and XSS payloads in every place model text reaches (the model's narrative, the
agent's summary, conclusions, methods and title, outputs a finding quotes, notes, names) come out
inert: the page's content passes nini.safe_html whatever it holds."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from nini.report.builder import ReportOptions, build_report
from nini.report.model import ChartFile, DatasetInfo, ReportInput, Step
from nini.report.narrative import Narrative
from tests.test_safe_html import PAYLOADS, inspect

PNG = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000")  # a PNG header is enough to embed


def test_remote_images_become_links_and_the_policy_allows_data_images_only(tmp_path: Path) -> None:
    chart = tmp_path / "trend.png"
    chart.write_bytes(PNG)
    data = ReportInput(source="nb.ipynb", charts=[ChartFile(name="trend.png", path=chart, order=0)])
    conclusions = (
        'See ![the "old" chart](https://images.example/track.png) and ![](local/figure.png) '
        "and ![ok](data:image/png;base64,iVBORw0KGgo=)."
    )
    html = build_report(data, ReportOptions(conclusions=conclusions), link_base=tmp_path).html
    policy = re.search(r'Content-Security-Policy" content="([^"]+)"', html).group(1)
    assert "img-src data:;" in policy and "*" not in policy and "default-src 'none'" in policy
    sources = re.findall(r'<img src="([^"]*)"', html)
    assert sources and all(source.startswith("data:") for source in sources)  # the chart, embedded
    assert '<a href="https://images.example/track.png" rel="noopener noreferrer nofollow">the "old" chart</a>' in html
    assert '<a href="local/figure.png" rel="noopener noreferrer nofollow">local/figure.png</a>' in html


def content(page: str) -> str:
    """What the page shows: its <main>, without the head (its own CSP and stylesheet)."""
    return page.split("<main>", 1)[1].rsplit("</main>", 1)[0]


@pytest.mark.parametrize("attack", PAYLOADS.values(), ids=PAYLOADS.keys())
def test_payloads_in_model_text_come_out_inert(tmp_path: Path, attack: str) -> None:
    chart = tmp_path / "trend.png"
    chart.write_bytes(PNG)
    output = Step(
        "s1", 0, "python", "succeeded", "print(header)", label=attack, stdout=f"{attack}: 3\n", result={attack: 3}
    )
    data = ReportInput(
        source="nb.ipynb",
        steps=[output],
        charts=[ChartFile(name="trend.png", path=chart, order=0)],
        datasets=[DatasetInfo("sales", 3, [attack])],
        notes=[attack, f"## Conclusions\n{attack}"],
        title=attack,
    )
    narrative = Narrative(model="m", sections={"summary": attack, "conclusions": attack})
    for options, model in (
        (ReportOptions(include_session_stats=True), narrative),
        (ReportOptions(title=attack, methods=attack, summary_text=attack, conclusions=attack), None),
    ):
        report = build_report(data, options, link_base=tmp_path, narrative=model)
        shown = content(report.html)
        assert inspect(shown).found == [], shown
        assert shown.count('<img src="data:image/png;base64,') == 1  # the chart, embedded; nothing else is an image
