"""A plot flood is capped per run (execution.max_artifacts_per_run): the first N charts are saved
and recorded, the rest closed unsaved with a warning, no unrecorded file is left, the kernel lives on."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from nini.config import load_settings
from nini.skills.builtin.run_r import r_status
from tests.conftest import Harness, runtime_harness

LIMIT = 3
R_USABLE, R_WHY = r_status(load_settings(home="/nonexistent-nini-home"))
PNG_1PX = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Harness]:
    yield from runtime_harness(tmp_path_factory, {"execution": {"max_artifacts_per_run": LIMIT}})


def _files_match_the_record(harness: Harness, session) -> list[str]:  # noqa: ANN001
    on_disk = sorted(session.workspace.fs.listdir("artifacts"))
    recorded = sorted(row["name"] for row in harness.runtime.store.list_artifacts(session.id))
    assert on_disk == recorded
    return recorded


def test_python_figures_past_the_limit_are_closed_unsaved(harness: Harness) -> None:
    session = harness.session()
    flood = harness.call(
        session,
        "run_code",
        label="flood",
        code=("import matplotlib.pyplot as plt\nkept = 41\nfor i in range(60):\n    plt.figure(); plt.plot([0, i])\n"),
    )
    assert flood.success, flood.error
    assert sorted(a["name"] for a in flood.result["artifacts"]) == sorted(
        f"{stem}.{fmt}" for stem in ("flood", "flood-2", "flood-3") for fmt in ("png", "svg")
    )
    assert (
        "60 charts were drawn; only the first 3 were saved (execution.max_artifacts_per_run)" in flood.result["stderr"]
    )
    assert len(_files_match_the_record(harness, session)) == 2 * LIMIT
    after = harness.call(
        session, "run_code", code="import matplotlib.pyplot as plt\nprint(kept, len(plt.get_fignums()))"
    )
    assert after.success and after.result["stdout"] == "41 0\n"  # same kernel, every figure closed


def test_rich_outputs_count_against_the_same_limit(harness: Harness) -> None:
    session = harness.session()
    shown = harness.call(
        session,
        "run_code",
        code=(
            "import base64\nfrom IPython.display import Image, display\n"
            f"png = base64.b64decode('{PNG_1PX}')\nfor _ in range(10):\n    display(Image(data=png, format='png'))\n"
        ),
    )
    assert shown.success, shown.error
    assert [a["format"] for a in shown.result["artifacts"]] == ["png"] * LIMIT
    assert "10 charts were drawn; only the first 3 were saved" in shown.result["stderr"]
    _files_match_the_record(harness, session)


@pytest.mark.skipif(not R_USABLE, reason=f"R cannot be used here: {R_WHY}")
def test_r_plot_pages_past_the_limit_are_not_rendered(harness: Harness) -> None:
    session = harness.session()
    flood = harness.call(session, "run_r_code", label="pages", code="for (i in 1:8) plot(1:i)\nx <- 5")
    assert flood.success, flood.error
    assert len({a["name"].split(".")[0] for a in flood.result["artifacts"]}) == LIMIT
    assert "8 charts were drawn; only the first 3 were saved" in flood.result["stderr"]
    _files_match_the_record(harness, session)
    after = harness.call(session, "run_r_code", code="print(x)")
    assert after.success and after.result["stdout"] == "[1] 5\n"
