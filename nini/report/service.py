"""The one report pipeline: a recorded session or a notebook, the caller's options, the settings
and the user's report preferences in; a written report out.

The ``generate_report`` skill (and so REST ``POST sessions/ID/report`` and the sidebar) and
``nini report`` (``--session`` and a notebook) all come through here, so the same session gives
the same report wherever it is asked for: its language, the digits of its numbers and the style
the model is asked to write in are resolved in one place (``resolve_style``) from the same
settings and the same preferences (the session owner's; a notebook's are the unnamed user's,
like the CLI's sessions). The model is reached through a ``narrative.Complete`` the caller makes
(the agent's router): this package never imports the agent.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nini.errors import ErrorCode, NiniError
from nini.report.builder import RenderedReport, ReportOptions, build_report
from nini.report.model import ReportInput
from nini.report.narrative import Complete, narrate
from nini.report.output import copy_charts, write_report
from nini.report.previews import add_previews, preview_cache
from nini.report.wording import TEXT

if TYPE_CHECKING:
    from nini.config import Settings
    from nini.memory.preferences import PreferenceMemory
    from nini.memory.preferences.inject import Selection

DECIMALS_KEY = "report.decimals"
DECIMALS_RANGE = (1, 15)


@dataclass(frozen=True)
class ReportRequest:
    """What the caller asks for; None leaves a choice to the settings and preferences."""

    title: str | None = None
    methods: str | None = None
    summary_text: str | None = None
    conclusions: str | None = None
    dataset_names: list[str] | None = None
    include_charts: bool = True
    include_key_findings: bool = True
    include_session_stats: bool = False
    lang: str | None = None  # None: the user's (``ui.language``)
    model_text: bool | None = None  # None: the ``report.model_text`` setting


@dataclass(frozen=True)
class ReportStyle:
    """How a report is written for its reader: resolved once, used by every caller."""

    lang: str
    decimals: int
    preferences: Selection | None = None  # the report preferences given (their block goes to the model)

    @property
    def model_style(self) -> str | None:
        """The user's preferences block for the model's sections, or None when they have none."""
        return self.preferences.block if self.preferences is not None and self.preferences.rows else None


@dataclass
class WrittenReport:
    rendered: RenderedReport
    paths: dict[str, Path]  # format -> the file written
    style: ReportStyle
    data: ReportInput = field(repr=False)


def resolve_style(settings: Settings, preferences: Selection | None, lang: str | None = None) -> ReportStyle:
    """The report's language (``lang``, else ``ui.language``: the user's, or their client's when
    it is auto) and its digits (the user's ``report.decimals`` preference, else the setting)."""
    if lang is not None and lang not in TEXT:
        raise NiniError(ErrorCode.INVALID_ARGUMENT, f"lang must be one of {', '.join(TEXT)}, not {lang!r}")
    rows = preferences.rows if preferences is not None else []
    low, high = DECIMALS_RANGE
    decimals = next(
        (
            row["value"]
            for row in rows
            if row["key"] == DECIMALS_KEY
            and isinstance(row["value"], int)
            and not isinstance(row["value"], bool)
            and low <= row["value"] <= high
        ),
        settings.report.decimals,
    )
    return ReportStyle(lang=lang or settings.ui.current_language, decimals=decimals, preferences=preferences)


async def select_preferences(memory: PreferenceMemory | None, owner: str | None) -> Selection | None:
    """``owner``'s preferences for reports (None for the unnamed user), read on the store's thread."""
    if memory is None:
        return None
    return await memory.store.call(memory.select, "report", owner=owner)


def wants_model_text(settings: Settings, request: ReportRequest) -> bool:
    """Whether the model is to write the summary and conclusions: asked for (or the setting), and
    the caller did not write both itself. Callers make a ``Complete`` only when this is true."""
    wanted = settings.report.model_text if request.model_text is None else request.model_text
    return bool(wanted) and not (request.summary_text and request.conclusions)


async def session_report(
    store: Any,
    session_id: str,
    workspace: Any,
    request: ReportRequest,
    *,
    settings: Settings,
    memory: PreferenceMemory | None,
    owner: str | None,
    folder: Path,
    formats: list[str],
    complete: Complete | None = None,
    within: Any = None,
    charts_to: Path | None = None,
    stem: str | None = None,
) -> WrittenReport:
    """The report of session ``session_id`` (its ``workspace``), written into ``folder``.

    ``within``: the workspace's file system when ``folder`` is inside it (the files are written
    through it); ``charts_to``: a folder outside the workspace the charts are copied into first,
    so the report never links back into NINI_HOME.
    """
    from nini.report.sources import from_session

    data = await asyncio.to_thread(from_session, store, session_id, workspace)
    if charts_to is not None:
        data = await asyncio.to_thread(copy_charts, data, charts_to)
    style = resolve_style(settings, await select_preferences(memory, owner), request.lang)
    return await write(
        data,
        request,
        style,
        settings=settings,
        complete=complete,
        folder=folder,
        formats=formats,
        within=within,
        stem=stem,
    )


async def notebook_report(
    path: Path,
    request: ReportRequest,
    *,
    settings: Settings,
    memory: PreferenceMemory | None,
    folder: Path,
    files_dir: Path,
    formats: list[str],
    execute: bool = False,
    timeout_s: float = 600,
    kernel: str | None = None,
    progress: Callable[[str], None] | None = None,
    complete: Complete | None = None,
    stem: str | None = None,
) -> WrittenReport:
    """The report of the notebook at ``path`` (run first with ``execute``, by ``kernel`` or the
    notebook's own; when that kernel is missing, from its saved outputs, which the report says),
    its charts written into ``files_dir``, the report into ``folder``."""
    from nini.report.sources import from_notebook

    data, _ = await asyncio.to_thread(
        from_notebook,
        path,
        execute=execute,
        timeout_s=timeout_s,
        kernel_name=kernel,
        files_dir=files_dir,
        progress=progress,
    )
    style = resolve_style(settings, await select_preferences(memory, None), request.lang)
    return await write(
        data, request, style, settings=settings, complete=complete, folder=folder, formats=formats, stem=stem
    )


async def write(
    data: ReportInput,
    request: ReportRequest,
    style: ReportStyle,
    *,
    settings: Settings,
    complete: Complete | None,
    folder: Path,
    formats: list[str],
    within: Any = None,
    stem: str | None = None,
) -> WrittenReport:
    """Build ``data``'s report in ``style`` (the model's sections first, when one is to write
    them) and write it; reading charts, rendering and writing files run off the event loop."""
    options = ReportOptions(
        title=request.title,
        methods=request.methods,
        summary_text=request.summary_text,
        conclusions=request.conclusions,
        dataset_names=request.dataset_names,
        include_charts=request.include_charts,
        include_key_findings=request.include_key_findings,
        include_session_stats=request.include_session_stats,
        lang=style.lang,  # type: ignore[arg-type]  # any str: build_report checks the language
        decimals=style.decimals,
    )
    narrative = None
    if complete is not None and wants_model_text(settings, request):
        narrative = await narrate(
            data, lang=style.lang, digits=style.decimals, complete=complete, style=style.model_style
        )
    if request.include_charts:  # Plotly and Vega charts get a static preview (previews.py), cached under NINI_HOME
        data, _ = await asyncio.to_thread(add_previews, data, preview_cache(settings.home))
    rendered = await asyncio.to_thread(build_report, data, options, link_base=folder, narrative=narrative)
    paths = await asyncio.to_thread(write_report, rendered, folder, formats=formats, stem=stem, within=within)
    return WrittenReport(rendered=rendered, paths=paths, style=style, data=data)
