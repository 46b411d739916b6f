"""Warm a fresh server for its first turn, in the background once the server is up.

A server's first agent turn used to take seconds more than the next ones before its first step
showed (the issue measured 9-11 s against 0.15-0.35 s). Almost all of it is paid once per
process: importing the model SDK (``openai`` alone takes 2-4 s on a loaded 2-core machine) and
setting up its HTTP client, loading the tokenizer's 100k-token table, importing the agent and the
kernel machinery, probing the sandbox, loading the experience matcher, the store's threads and
connections. ``warm_up`` does those right after the server starts, one at a time and off the event
loop, so the first question finds them done. What cannot be warmed is the session's kernel: it is started
inside the session's own sandbox and workspace, which exist only once the session does.

Nothing here is needed for correctness: each step that fails is logged and skipped, and the
work it would have done happens at first use as before. ``stop_extension`` cancels a warm-up
still going before anything is closed (a step already in a thread finishes on its own; the store's
is a read).
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nini.runtime import Runtime

log = logging.getLogger("nini.jupyter.warmup")

# The modules a first turn imports: the runner, its prompt sections and stop hooks, the one skill
# path, the code policy (IPython's transformers), kernels, and anyio's asyncio backend (the HTTP
# client's first request).
MODULES = (
    "nini.agent.runner",
    "nini.agent.llm",
    "nini.agent.providers",
    "nini.agent.enhance",
    "nini.agent.experience",
    "nini.memory.preferences",
    "nini.skills.invoke",
    "nini.execution.policy",
    "nini.execution.kernels",
    "nini.skills.builtin.run_code",
    "IPython.core.inputtransformer2",
    "anyio._backends._asyncio",
)
# A provider kind's SDK (replay needs none) with the parts a streamed call imports on first use
# (``client.chat`` imports another 0.4 s); a part a later SDK moves is skipped.
SDKS = {
    "openai": (
        "openai",
        "openai.resources.chat.chat",
        "openai.resources.chat.completions.completions",
        "openai.lib.streaming.chat",
    ),
    "anthropic": ("anthropic", "anthropic.resources.messages.messages", "anthropic.lib.streaming"),
}


async def warm_up(runtime: Runtime) -> dict[str, float]:
    """Do what a first turn would pay for once per process; the seconds each step took, by name.

    The runtime's services are made on the event loop, as a request makes them (made in a thread
    they could be made twice); the slow part of each (an import, a file, a probe) runs in a thread.
    """
    steps: list[tuple[str, Callable[[], Any]]] = [
        ("store", lambda: runtime.store.call(runtime.store.list_sessions, 1)),  # its threads and connections
        ("modules", lambda: asyncio.to_thread(_import, MODULES)),
        ("model SDK", lambda: asyncio.to_thread(_import, _sdks(runtime))),
        ("model clients", lambda: runtime.router.prepare("chat")),
        ("tokenizer", lambda: asyncio.to_thread(_encoding)),
        ("agent", lambda: (runtime.agent, runtime.preferences)),
        ("sandbox probe", lambda: asyncio.to_thread(lambda pool: pool.sandbox_mode, runtime.kernels)),
        ("experience matcher", lambda: asyncio.to_thread(runtime.experience.match, "warm up", "analysis")),
    ]
    took: dict[str, float] = {}
    for name, step in steps:
        started = time.monotonic()
        try:
            done = step()
            if inspect.isawaitable(done):
                await done
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # e.g. no model configured yet: the first turn says so itself
            log.debug("warm-up step %s skipped: %s", name, exc)
            continue
        took[name] = round(time.monotonic() - started, 3)
    return took


def describe(took: dict[str, float]) -> str:
    """One line for the server's log: what was warmed and how long each took."""
    steps = ", ".join(f"{name} {seconds:.2f} s" for name, seconds in took.items())
    return f"nini: warmed up for the first turn in {sum(took.values()):.1f} s ({steps})"


def _import(modules: tuple[str, ...] | list[str]) -> None:
    for module in modules:
        try:
            importlib.import_module(module)
        except ImportError as exc:  # an SDK that is not installed, or laid out otherwise
            log.debug("warm-up did not import %s: %s", module, exc)


def _sdks(runtime: Runtime) -> list[str]:
    """The SDK modules the enabled providers call their models with."""
    kinds = sorted({p.kind for p in runtime.settings.llm.providers if p.enabled and p.kind in SDKS})
    return [module for kind in kinds for module in SDKS[kind]]


def _encoding() -> None:
    from nini.tokens import encoding

    encoding()
