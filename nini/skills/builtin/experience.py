"""``read_experience``: the whole document behind one of the run's experience warnings.

The prompt carries one line per matching experience (``⚠️ 高风险：<title>（参考 team/knowledge/EXP-0001.md）``);
the model reads a document only when it needs it. Only files an INDEX lists are readable, opened
without following links.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from nini.skills.function import skill
from nini.skills.services import services_of

if TYPE_CHECKING:
    from nini.session import Session


@skill("read_experience", category="data", read_only=True)
def read_experience(session: Session, file: str) -> dict[str, Any]:
    """Read an experience document named in the prompt's experience warnings.

    Args:
        file: The reference after 参考 / see, e.g. team/knowledge/EXP-0001.md or project/EXP-0002.md.
    """
    return {"file": file, "text": services_of(session).experience.read(file)}
