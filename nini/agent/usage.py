"""What one turn cost: its model calls' tokens as the providers reported them, its steps, and money
where the provider's price is configured (``input_per_mtok`` / ``output_per_mtok``).

A turn's ``RunMeter`` lives in a ContextVar set by the runner, so every model call made inside the
turn counts: the turn's own, its sub-agents' (``task:*``) and those of skills that call a model
(summaries, image analysis). The router reports each successful call with ``record_call``; a call
outside a turn (a CLI ``nini models test``) finds no meter and counts nowhere.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nini.config import ProviderSettings

PER = 1_000_000  # prices are per million tokens
DEFAULT_CURRENCY = "USD"  # of a provider whose prices name none


@dataclass
class RunMeter:
    """The counts of one turn, as ``RunResult`` (the ``done`` event) carries them."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0
    unreported: int = 0  # calls whose provider sent no usage: their tokens are not in the counts
    steps: int = 0  # tool calls the turn's agents made (the sub-agents' too)
    # money by currency; None once a call's provider has no price (a part cost is no cost)
    cost: dict[str, float] | None = field(default_factory=dict)

    def add_call(self, usage: dict[str, int], provider: ProviderSettings | None) -> None:
        """Count one answered model call of ``provider`` (None: not a configured one)."""
        self.calls += 1
        prompt, completion = int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)
        if not usage:
            self.unreported += 1
        self.prompt_tokens += prompt
        self.completion_tokens += completion
        priced = provider is not None and provider.input_per_mtok is not None and provider.output_per_mtok is not None
        if self.cost is None or not priced or not usage:
            self.cost = None
            return
        amount = (prompt * provider.input_per_mtok + completion * provider.output_per_mtok) / PER  # type: ignore[union-attr,operator]
        currency = provider.currency or DEFAULT_CURRENCY  # type: ignore[union-attr]
        self.cost[currency] = self.cost.get(currency, 0.0) + amount

    def usage(self) -> dict[str, int]:
        """``{prompt_tokens, completion_tokens, calls, unreported}``."""
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "calls": self.calls,
            "unreported": self.unreported,
        }

    def priced(self) -> dict[str, float] | None:
        """What the calls cost, ``{currency: amount}`` rounded to a millionth; None when a call's
        provider has no price (or no call was made: nothing to price)."""
        if self.cost is None or self.calls == 0:
            return None
        return {currency: round(amount, 6) for currency, amount in self.cost.items()}


CURRENT_METER: ContextVar[RunMeter | None] = ContextVar("nini_run_meter", default=None)


def record_call(usage: dict[str, int], provider: ProviderSettings | None) -> None:
    """Count a model call in the running turn's meter (nothing outside a turn)."""
    meter = CURRENT_METER.get()
    if meter is not None:
        meter.add_call(usage, provider)


def record_step() -> None:
    """Count a tool call in the running turn's meter."""
    meter = CURRENT_METER.get()
    if meter is not None:
        meter.steps += 1
