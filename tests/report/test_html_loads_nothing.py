"""The HTML report loads nothing from anywhere: data: images only, a remote image becomes a link."""

from __future__ import annotations

import re
from pathlib import Path

from nini.report.builder import ReportOptions, build_report
from nini.report.model import ChartFile, ReportInput

PNG = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000")  # a PNG header is enough to embed


def test_remote_images_become_links_and_the_policy_allows_data_images_only(tmp_path: Path) -> None:
    chart = tmp_path / "trend.png"
    chart.write_bytes(PNG)
    data = ReportInput(source="nb.ipynb", charts=[ChartFile(name="trend.png", path=chart, order=0)])
    conclusions = ('See ![the "old" chart](https://images.example/track.png) and ![](local/figure.png) '
                   "and ![ok](data:image/png;base64,iVBORw0KGgo=).")  # fmt: skip
    html = build_report(data, ReportOptions(conclusions=conclusions), link_base=tmp_path).html
    policy = re.search(r'Content-Security-Policy" content="([^"]+)"', html).group(1)
    assert "img-src data:;" in policy and "*" not in policy and "default-src 'none'" in policy
    sources = re.findall(r'<img src="([^"]*)"', html)
    assert sources and all(source.startswith("data:") for source in sources)  # the chart, embedded
    assert '<a href="https://images.example/track.png">the &quot;old&quot; chart</a>' in html
    assert '<a href="local/figure.png">local/figure.png</a>' in html
