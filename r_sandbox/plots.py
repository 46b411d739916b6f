"""Plot pages recorded by worker_r.R, written as artifact files named like Python's figures.

R records every page drawn during a run (see worker_r.R: a recording null device, hooks before
each new base or grid page, ggplot objects assigned and never printed); this module picks the
file names (``label`` slugified, or ``figure-N``, never a name already used in the folder, the
rules of nini's ``_kernel_side.StemAllocator``) and has R replay each page into PNG, SVG (and PDF
when the code asked for it) through a temp file and a rename.
"""

from __future__ import annotations

import functools
import itertools
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import rpy2.rinterface as ri

from r_sandbox.frames import write_atomic


def save_pages(
    api: Any, pages: int, workspace: Path, label: str | None, limit: int = 200, pending_file: str | None = None
) -> tuple[list[dict[str, Any]], list[str]]:
    """Render the run's recorded pages, at most ``limit``: (artifact dicts, warnings for pages
    that failed or were left out)."""
    if not pages:
        return [], []
    folder = workspace / "artifacts"
    stems = free_stems(folder, label)
    formats = [str(f) for f in api["plot_formats"]()]
    artifacts: list[dict[str, Any]] = []
    problems: list[str] = []
    if pages > limit:  # nini's words (_kernel_side.too_many_figures); r_sandbox does not import nini
        problems.append(
            f"{pages} charts were drawn; only the first {limit} were saved "
            "(execution.max_artifacts_per_run), the rest were closed unsaved"
        )
    try:
        for page in range(1, min(pages, limit) + 1):
            stem = next(stems)
            for fmt in formats:
                path = folder / f"{stem}.{fmt}"
                if pending_file:  # listed before it is put in place: nini removes it if the run is never recorded
                    with open(workspace / pending_file, "a", encoding="utf-8") as pending:
                        pending.write(path.name + "\n")
                try:
                    write_atomic(path, functools.partial(_render, api, page, fmt))
                except RuntimeError as exc:
                    problems.append(f"page {page} could not be saved as {fmt}: {exc}")
                    continue
                artifacts.append({"name": path.name, "path": f"artifacts/{path.name}", "format": fmt, "kind": "chart"})
    finally:
        api["clear_pages"]()
    return artifacts, problems


def _render(api: Any, page: int, fmt: str, temp: str) -> None:
    failure = api["render_page"](page, fmt, temp)  # NULL, or R's message
    if failure is not ri.NULL:
        raise RuntimeError(str(failure[0]))


def free_stems(folder: Path, label: str | None) -> Iterator[str]:
    """File-name stems not used in ``folder``: ``<label>``, ``<label>-2``... or ``figure-1``, ``figure-2``...

    The rules of nini's ``_kernel_side.StemAllocator``, so R and Python name figures alike.
    """
    folder.mkdir(parents=True, exist_ok=True)
    used = {name.split(".", 1)[0] for name in os.listdir(folder)}
    base = slugify(label) if label else ""
    candidates = ((f"{base}-{n}" if n > 1 else base) if base else f"figure-{n}" for n in itertools.count(1))
    return (stem for stem in candidates if stem not in used)


def slugify(label: str) -> str:
    """A label as a file-name stem: lower case, letters (any script), digits, '_' and '-'."""
    return re.sub(r"[^\w]+", "-", label.lower()).strip("-_")[:60].strip("-_")
