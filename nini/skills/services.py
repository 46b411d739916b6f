"""What built-in skills use from above the session: the model router, the memories, the agent runner.

A session sits below memory, skills and the agent, so it cannot carry them; the runtime (the
composition root) gives them to the skill registry it builds (``SkillRegistry.services``), and a
skill reaches them through its session's registry: ``services_of(session).router``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from nini.errors import ErrorCode, NiniError

if TYPE_CHECKING:
    from nini.memory.experience import ExperienceMemory
    from nini.memory.preferences import PreferenceMemory
    from nini.session import Session


class SkillServices(Protocol):
    """The services a skill may use beyond its session (``nini.runtime.Runtime`` is one)."""

    # a nini.agent.llm.ModelRouter: the agent sits above skills, so it is not named here
    @property
    def router(self) -> Any: ...

    @property
    def preferences(self) -> PreferenceMemory: ...

    @property
    def experience(self) -> ExperienceMemory: ...

    # a nini.agent.runner.AgentRunner: the runner the task:* skills (nini.agent.tasks) run sub-agents with
    @property
    def agent(self) -> Any: ...


def services_of(session: Session) -> SkillServices:
    """The services of ``session``'s registry; INTERNAL for a registry no runtime gave them to."""
    services: SkillServices | None = session.registry.services
    if services is None:
        raise NiniError(ErrorCode.INTERNAL, "this skill needs nini's runtime: its skill registry has no services")
    return services
