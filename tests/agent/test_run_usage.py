"""What a turn took, in its ``done`` event (the sidebar's run footer): duration, steps, the tokens the
scripted model server reported over HTTP, and the cost where the provider's price is configured."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from nini.agent.usage import RunMeter
from nini.config import ProviderSettings
from tests.agent.conftest import run_turn as run
from tests.llm_server import Reply, ScriptedLLM, text, tool_call

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("fresh_script")]


def done_event(harness: Any, session: Any) -> dict[str, Any]:
    return next(e["data"] for e in harness.runtime.store.list_events(session.id) if e["type"] == "done")


@pytest.fixture
def priced(harness: Any) -> Iterator[ProviderSettings]:
    """The harness's provider with a price (2 per million prompt tokens, 8 per million completion ones, in CNY)."""
    provider = harness.runtime.settings.llm.providers[0]
    provider.input_per_mtok, provider.output_per_mtok, provider.currency = 2.0, 8.0, "CNY"
    yield provider
    provider.input_per_mtok, provider.output_per_mtok, provider.currency = None, None, None


def test_done_carries_steps_tokens_and_duration_without_a_cost(harness: Any, llm: ScriptedLLM) -> None:
    session = harness.session()
    llm.reply(
        Reply(
            tool_calls=[{"name": "list_datasets", "arguments": {}}],
            usage={"prompt_tokens": 120, "completion_tokens": 7},
        ),
        text("There is no data yet.", usage={"prompt_tokens": 150, "completion_tokens": 9}),
    )
    result = run(harness, session, "What data do we have?")
    done = done_event(harness, session)
    assert done["steps"] == result.steps == 1
    assert done["usage"] == {"prompt_tokens": 270, "completion_tokens": 16, "calls": 2, "unreported": 0}
    assert done["cost"] is None  # no price configured: no cost
    assert isinstance(done["duration_ms"], int) and done["duration_ms"] >= 0


def test_a_configured_price_gives_the_cost_and_a_task_counts_its_sub_agent(
    harness: Any, llm: ScriptedLLM, priced: ProviderSettings
) -> None:
    session = harness.session()
    usage = {"prompt_tokens": 1000, "completion_tokens": 100}
    llm.reply(
        Reply(
            tool_calls=[{"name": "task__explore", "arguments": {"prompt": "Which datasets are there?"}}], usage=usage
        ),
        Reply(tool_calls=[{"name": "list_datasets", "arguments": {}}], usage=usage),  # the sub-agent
        text("None.", usage=usage),  # the sub-agent's answer
        text("There are none.", usage=usage),  # purpose summarize
        text("No data yet.", usage=usage),
    )
    run(harness, session, "What data do we have?")
    done = done_event(harness, session)
    assert done["usage"] == {"prompt_tokens": 5000, "completion_tokens": 500, "calls": 5, "unreported": 0}
    assert done["steps"] == 2  # the task and the sub-agent's list_datasets
    assert done["cost"] == {"CNY": pytest.approx((5000 * 2 + 500 * 8) / 1e6)}


def test_a_canceled_turn_still_says_what_it_took(harness: Any, llm: ScriptedLLM) -> None:
    session = harness.session()
    llm.reply(tool_call("list_datasets"), text("late", delay_s=30))

    async def cancel_when_slow() -> Any:
        import asyncio

        turn_id, task = harness.runtime.agent.start(session, "slow")
        while len(llm.requests) < 2:  # the second model call is under way
            await asyncio.sleep(0.02)
        harness.runtime.agent.cancel(session.id)
        return await task

    result = harness.loop.run_until_complete(cancel_when_slow())
    llm.clear()
    done = done_event(harness, session)
    assert result.ended_by == "canceled" and done["ended_by"] == "canceled"
    assert done["steps"] == 1 and done["usage"]["calls"] == 1 and done["usage"]["prompt_tokens"] == 10


@pytest.mark.parametrize(
    ("calls", "expected"),
    [
        ([({"prompt_tokens": 10, "completion_tokens": 5}, (1.0, 2.0, "USD"))], {"USD": 0.00002}),
        (
            [
                ({"prompt_tokens": 10, "completion_tokens": 5}, (1.0, 2.0, "USD")),
                ({"prompt_tokens": 10, "completion_tokens": 5}, (None, 2.0, "USD")),
            ],
            None,
        ),  # a call unpriced: no cost
        ([({}, (1.0, 2.0, "USD"))], None),  # no usage reported: no cost
        (
            [
                ({"prompt_tokens": 1_000_000, "completion_tokens": 0}, (1.0, 2.0, "USD")),
                ({"prompt_tokens": 1_000_000, "completion_tokens": 0}, (3.0, 2.0, "CNY")),
            ],
            {"USD": 1.0, "CNY": 3.0},
        ),
        ([], None),  # no model call: nothing to price
    ],
)
def test_meter_prices(calls: list[tuple[dict, tuple]], expected: dict | None) -> None:
    meter = RunMeter()
    for usage, (prompt_price, completion_price, currency) in calls:
        provider = ProviderSettings(
            name="p", model="m", input_per_mtok=prompt_price, output_per_mtok=completion_price, currency=currency
        )
        meter.add_call(usage, provider)
    assert meter.priced() == expected
    assert meter.usage()["unreported"] == sum(1 for usage, _ in calls if not usage)
