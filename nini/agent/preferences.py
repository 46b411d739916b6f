"""The agent's side of preference learning: the preferences block of each run's prompt.

``PreferenceSection`` is a prompt contributor (the runtime wires it, with the memory, into its
runner: ``Runtime.new_agent``): the block ``PreferenceMemory.select`` makes for an answer
(``(none)`` when nothing is selected, so the prompt's prefix stays the same), and, when it carried
any, a ``preferences_injected`` event with their ids, keys and lines, so feedback on the run
learns from them and the user can see why an answer reads the way it does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nini.memory.preferences import PreferenceMemory
    from nini.session import Session


class PreferenceSection:
    """The prompt contributor of preference memory; ``memory`` gives it (created on first use)."""

    __name__ = "preference_section"

    def __init__(self, memory: Callable[[], PreferenceMemory]) -> None:
        self._memory = memory

    async def __call__(self, session: Session, _message: str) -> str:
        return await _selected_block(self._memory(), session)


async def _selected_block(memory: PreferenceMemory, session: Session) -> str:
    from nini.agent.runner import CURRENT_TURN

    selection = await session.store.call(memory.select_for, session, "answer")  # the session owner's
    if selection.ids:  # a run given nothing has nothing to record
        turn = CURRENT_TURN.get()
        data = {"ids": selection.ids, "keys": [row["key"] for row in selection.rows], "lines": selection.lines}
        await session.store.call(
            session.events.publish, session.id, "preferences_injected", data, turn_id=turn.turn_id if turn else None
        )
    return selection.block


def comment_reader(router: Any) -> Any:
    """The router when a model for purpose ``fast`` is usable (it reads a feedback comment's signals),
    else None: the keyword rules read it."""
    from nini.errors import NiniError

    try:
        router.chain("fast")
    except NiniError:
        return None
    return router
