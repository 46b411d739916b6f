"""The system prompt of an agent run: nini's instructions, the session's data, the skills, and
whatever the registered prompt contributors add (experiences, preferences: later capabilities
plug in through ``PromptContributor``, the one extension point)."""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nini.session import Session

log = logging.getLogger("nini.agent.prompts")

# (session, user_message) -> a prompt section, or None for nothing
PromptContributor = Callable[["Session", str], "Awaitable[str | None] | str | None"]

BASE_PROMPT = """You are nini, a data-analysis agent working inside the user's Jupyter environment.
Answer the user's question about their data by running code, then explain what you found.

How to work:
- Use run_code (Python: pandas, numpy, scipy, statsmodels, matplotlib) and run_r_code (R, when offered) \
to compute; never invent numbers. Session datasets are available by name in both languages.
- Set `result` for values you need back and `output_df` for tables; give each step a short `label`.
- When a step fails, read the error, fix the code and run it again with the same label.
- Markdown skills are procedures: calling one returns its instructions; follow them.
- task:* tools start a sub-agent with its own context; you get back one sentence. Use task:explore \
for read-only investigation whose details you do not need.
- Finish with a concise answer in the user's language: the findings, with the numbers that support them."""


async def build_system_prompt(
    session: Session, user_message: str, contributors: Sequence[PromptContributor] = (), *, base: str = BASE_PROMPT
) -> str:
    """The system prompt for one model call; a contributor that fails is skipped (and logged)."""
    datasets = await session.store.call(session.store.list_datasets, session.id)  # off the event loop
    parts = [base, _datasets_section(datasets), session.registry.prompt_block()]
    for contributor in contributors:
        try:
            section = contributor(session, user_message)
            if inspect.isawaitable(section):
                section = await section
        except Exception:
            log.exception(
                "prompt contributor %s failed; its section is left out", getattr(contributor, "__name__", contributor)
            )
            continue
        if section:
            parts.append(str(section).strip())
    return "\n\n".join(p for p in parts if p)


def _datasets_section(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "## Session datasets\n\nNone yet. Files the user uploaded are under uploads/ in the workspace."
    lines = ["## Session datasets"]
    for row in rows:
        columns = ", ".join((row.get("columns") or [])[:30])
        lines.append(f"- {row['name']}: {row.get('rows')} rows; columns: {columns}")
    return "\n".join(lines)
