"""The notebook's own kernel as the approval tests see it: which names it defines (asked through the
kernel's own connection, not nini's), and the approval card of a step waiting to run there."""

from __future__ import annotations

import json
from typing import Any

from jupyter_client import BlockingKernelClient

from tests.timeouts import timeout
from tests.ui.conftest import Lab


def notebook_names(lab: Lab) -> set[str]:
    """The names defined in the notebook's kernel, asked through the kernel's own connection (not nini)."""
    (kernel,) = lab.kernels()
    client = BlockingKernelClient(connection_file=str(lab.root / "runtime" / f"kernel-{kernel['id']}.json"))
    client.load_connection_file()
    client.start_channels()
    try:
        reply = client.execute_interactive("", user_expressions={"names": "sorted(globals())"}, timeout=timeout(30))
        return set(json.loads(reply["content"]["user_expressions"]["names"]["data"]["text/plain"].replace("'", '"')))
    finally:
        client.stop_channels()


def card(page: Any, state: str = "waiting") -> Any:
    """The last approval card in ``state``, once there is one."""
    found = page.locator(f'.nini-approval[data-state="{state}"]').last
    found.wait_for()
    return found
