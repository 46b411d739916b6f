"""Where agent code runs, decided in one place, and the notice that goes with the user's own kernel.

``execution.sandbox`` is resolved here once per runtime (``Sandboxing.mode``: "auto" by a probe of
bubblewrap), and the kernels, the R workers, the data readers and a session's ``isolation`` all read
it from the same ``Sandboxing``: they cannot disagree about whether code is sandboxed. A step runs in
one of four places (``Isolation``); where it is the user's own kernel, nothing stands between the
code and the user's files, and every reply or event that says where a step runs carries ``notice``
(``notice_of``), worded once here.
"""

from __future__ import annotations

from typing import Literal

from nini.config import ExecutionSettings
from nini.execution.sandbox import SandboxMode, resolve_mode

__all__ = ["USER_KERNEL_NOTICE", "Isolation", "Sandboxing", "notice_of"]

USER_KERNEL_NOTICE = "runs in your kernel, not sandboxed"
# "sandbox" (nini's bubblewrap), "unsandboxed" (execution.sandbox "none", or no bubblewrap under
# "auto"), "gateway" (a kernel on the server's gateway, in the gateway's sandbox) or "user_kernel"
Isolation = Literal["sandbox", "unsandboxed", "gateway", "user_kernel"]


class Sandboxing:
    """``execution.sandbox`` as it applies on this machine, resolved on first use and then kept."""

    def __init__(self, settings: ExecutionSettings) -> None:
        self.settings = settings
        self._mode: SandboxMode | None = None

    @property
    def mode(self) -> SandboxMode:
        """ "bwrap" or "none". Raises NiniError(INTERNAL) when the setting demands bwrap and bwrap does
        not work here (asked again each time: nothing is kept until it works)."""
        if self._mode is None:
            self._mode = resolve_mode(self.settings.sandbox)
        return self._mode

    @property
    def isolation(self) -> Isolation:
        """Where code in nini's own kernels and R workers runs here: "sandbox" or "unsandboxed"."""
        return "sandbox" if self.mode == "bwrap" else "unsandboxed"


def notice_of(isolation: str | None) -> dict[str, str]:
    """The ``notice`` field of a reply or event that says where a step runs: there exactly when the
    step runs in the user's own, unsandboxed kernel."""
    return {"notice": USER_KERNEL_NOTICE} if isolation == "user_kernel" else {}
