"""The sidebar's tabs and widths, as the layout and accessibility tests reach them: a tab by the page it
labels (whatever the sidebar's language and whether its name shows), a width by dragging the sidebar's edge."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

TABS = ("chat", "skills", "reports", "experience", "preferences", "models")


def show_tab(page: Any, name: str) -> None:
    """Click the tab of ``name``, as a user does, and wait for its page."""
    tab = page.eval_on_selector(f"#nini-tab-{name}", "w => w.getAttribute('aria-labelledby')")
    page.click(f"#nini-panel [id='{tab}']")
    page.wait_for_selector(f"#nini-tab-{name}", state="visible")


def each_tab(page: Any) -> Iterator[str]:
    """Show every tab in turn, its content drawn (the skills listed), and yield its name; Chat again after."""
    for name in TABS:
        show_tab(page, name)
        if name == "skills":
            page.wait_for_selector(".nini-skill")
        yield name
    show_tab(page, "chat")


def panel_width(page: Any) -> float:
    return page.eval_on_selector("#nini-panel", "p => p.getBoundingClientRect().width")


def set_panel_width(page: Any, width: int) -> None:
    """Drag the sidebar's edge until the panel is ``width`` px wide."""
    for _ in range(4):
        before = panel_width(page)
        if abs(before - width) < 1:
            return
        handle = page.locator("#jp-main-split-panel > .lm-SplitPanel-handle").first.bounding_box()
        x, y = handle["x"] + handle["width"] / 2, handle["y"] + 300
        page.mouse.move(x, y)
        page.mouse.down()
        page.mouse.move(x + width - before, y, steps=4)
        page.mouse.up()
        page.wait_for_function(
            "before => document.querySelector('#nini-panel').getBoundingClientRect().width !== before", arg=before
        )
    assert abs(panel_width(page) - width) < 1, f"the sidebar is {panel_width(page)} px wide, not {width}"
