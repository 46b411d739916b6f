"""Enhancement triggering: after a run that ended normally, decide, explainably, whether it is worth
turning into a skill, and if so do it at once (``skill_enhancer``). The answer is never touched.

``evaluate_trigger`` is pure and fast: gates first (auto enhance off, the run not completed
normally, no session), then a score from five signals of the run's record. ``extract_signals``
reads them from the store, this turn's tool calls only; the one signal that needs judgement
(how often the user clarified or corrected the request) is asked of a model only when its answer
could change the decision. ``EnhanceHook`` is a stop hook (the runtime wires it, with the router,
into its runner: ``Runtime.new_agent``): every evaluation writes one JSON log line and one
``enhance_decision`` event (numbers and codes, never conversation text), and a triggered one
returns the enhancement's message as the run's note.
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nini.agent.llm import ModelRouter
    from nini.agent.runner import StopContext
    from nini.agent.skill_enhancer import EnhanceOutcome
    from nini.history.store import HistoryStore
    from nini.session import Session

log = logging.getLogger("nini.agent.enhance")

PROFILES = {"conservative": 3, "neutral": 2, "aggressive": 1}
DEFAULT_PROFILE = "conservative"
REASON_CODES = ("AUTO_ENHANCE_OFF", "TASK_NOT_COMPLETED_NORMALLY", "SESSION_NOT_FOUND", "SCORE_REACHED", "LOW_SCORE")
# label, signal, weight, whether the signal is a count (hit at the threshold) or a flag
SIGNAL_RULES: tuple[tuple[str, str, int, int | None], ...] = (
    ("TOOL_CALLS_GTE_3", "tool_call_count", 1, 3),
    ("UNIQUE_TOOLS_GTE_2", "unique_tool_count", 1, 2),
    ("ERROR_RECOVERED", "has_error_recovered", 2, None),
    ("HAS_WRITE_OR_EDIT", "has_write_or_edit", 1, None),
    ("USER_CLARIFICATIONS_GTE_2", "user_clarification_count", 1, 2),
)
# Calls that change something durable whatever their result says (code runs are judged by theirs).
WRITING_TOOLS = frozenset({"load_dataset", "generate_report", "save_skill", "task:skill:enhance"})
FAILED = ("failed", "interrupted")
CLARIFY_PROMPT = (
    "You read the user messages of one conversation with a data-analysis assistant, in order. Count how many "
    "of them clarify or correct an earlier request (a narrower scope, a fixed mistake, a changed requirement). "
    'The first request itself does not count. Answer with JSON only: {"clarification_count": <integer>}.'
)
MAX_CLARIFY_MESSAGES, MAX_CLARIFY_CHARS = 20, 600


@dataclass
class TriggerSignals:
    """What the run's record shows; None for a signal whose extraction failed (counts as not hit)."""

    tool_call_count: int | None = 0
    unique_tool_count: int | None = 0
    has_error_recovered: bool | None = False
    has_write_or_edit: bool | None = False
    user_clarification_count: int | None = 0


@dataclass(frozen=True)
class TriggerDecision:
    should_trigger: bool
    total_score: int
    threshold: int
    signal_hits: list[str] = field(default_factory=list)
    reason_code: str = "LOW_SCORE"
    profile: str = DEFAULT_PROFILE

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def evaluate_trigger(
    *,
    auto_enhance_enabled: bool,
    completed_normally: bool,
    session_id: str | None,
    signals: TriggerSignals | dict[str, Any],
    profile: Any = DEFAULT_PROFILE,
) -> TriggerDecision:
    """Whether a run should become a skill, and why: gates, then the score against the profile."""
    name, threshold = _profile(profile)
    if not auto_enhance_enabled:
        return TriggerDecision(False, 0, threshold, [], "AUTO_ENHANCE_OFF", name)
    if not completed_normally:
        return TriggerDecision(False, 0, threshold, [], "TASK_NOT_COMPLETED_NORMALLY", name)
    if not session_id:
        return TriggerDecision(False, 0, threshold, [], "SESSION_NOT_FOUND", name)
    hits = signal_hits(signals)
    score = sum(weight for label, _signal, weight, _at in SIGNAL_RULES if label in hits)
    reached = score >= threshold
    return TriggerDecision(reached, score, threshold, hits, "SCORE_REACHED" if reached else "LOW_SCORE", name)


def signal_hits(signals: TriggerSignals | dict[str, Any]) -> list[str]:
    """The labels of the signals that are hit, in the table's order."""
    values = vars(signals) if isinstance(signals, TriggerSignals) else signals if isinstance(signals, dict) else {}
    hits = []
    for label, signal, _weight, at_least in SIGNAL_RULES:
        if signal not in values or values[signal] is None:
            log.warning("trigger signal %s could not be extracted; counted as not hit", signal)
            continue
        if at_least is None:
            if _flag(signal, values[signal]):
                hits.append(label)
        elif _count(signal, values[signal]) >= at_least:
            hits.append(label)
    return hits


def _profile(profile: Any) -> tuple[str, int]:
    if isinstance(profile, str) and profile.strip().lower() in PROFILES:
        name = profile.strip().lower()
        return name, PROFILES[name]
    log.warning("trigger profile %r is not one of %s; using %s", profile, ", ".join(PROFILES), DEFAULT_PROFILE)
    return DEFAULT_PROFILE, PROFILES[DEFAULT_PROFILE]


def _count(signal: str, value: Any) -> int:
    """A count as a non-negative int: floats truncated, numeric strings parsed, anything else 0."""
    if type(value) is int:  # the usual case first: this runs after every agent run
        number = value
    elif isinstance(value, int) or (isinstance(value, float) and math.isfinite(value)):  # bools, floats truncated
        number = int(value)
    elif isinstance(value, str):
        try:
            number = int(float(value.strip()))
        except ValueError:
            log.warning("trigger signal %s=%r is not a number; counted as 0", signal, value)
            number = 0
    else:
        log.warning("trigger signal %s=%r is not a number; counted as 0", signal, value)
        number = 0
    return max(number, 0)


def _flag(signal: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return value != 0
    if isinstance(value, str) and value.strip().lower() in ("true", "yes", "1", "false", "no", "0", ""):
        return value.strip().lower() in ("true", "yes", "1")
    log.warning("trigger signal %s=%r is not a yes/no; counted as not hit", signal, value)
    return False


# --- signals from the record ---------------------------------------------------------------------


def extract_signals(store: HistoryStore, session_id: str, turn_id: str) -> TriggerSignals:
    """The four record signals of turn ``turn_id`` (the clarification count is left at 0: see
    ``clarification_count``). Blocking: run it on the store's thread."""
    calls = store.list_tool_calls(session_id, turn_id=turn_id)
    failed_at = [i for i, call in enumerate(calls) if call["status"] in FAILED]
    recovered = bool(failed_at) and any(call["status"] == "succeeded" for call in calls[failed_at[0] + 1 :])
    return TriggerSignals(
        tool_call_count=len(calls),
        unique_tool_count=len({call["tool_name"] for call in calls}),
        has_error_recovered=recovered,
        has_write_or_edit=any(_wrote(call) for call in calls),
        user_clarification_count=0,
    )


def _wrote(call: dict[str, Any]) -> bool:
    if call["status"] != "succeeded":
        return False
    if call["tool_name"] in WRITING_TOOLS:
        return True
    result = found if isinstance(found := call.get("result"), dict) else {}
    return bool(result.get("artifacts") or result.get("datasets_saved"))


def clarification_matters(decision: TriggerDecision, user_messages: int) -> bool:
    """Whether the clarification signal (+1) could change ``decision`` (made without it)."""
    if decision.reason_code not in ("LOW_SCORE", "SCORE_REACHED") or user_messages < 2:
        return False
    return not decision.should_trigger and decision.total_score + 1 >= decision.threshold


async def clarification_count(router: ModelRouter, user_messages: list[str]) -> int | None:
    """How many of ``user_messages`` clarify or correct the request, judged by the model routed for
    purpose ``fast``; None when no model answers usably (the signal is then not hit)."""
    shown = [f"{n}. {text[:MAX_CLARIFY_CHARS]}" for n, text in enumerate(user_messages[-MAX_CLARIFY_MESSAGES:], 1)]
    messages = [{"role": "system", "content": CLARIFY_PROMPT}, {"role": "user", "content": "\n".join(shown)}]
    try:
        completion = await router.complete("fast", messages, temperature=0, max_tokens=50)
    except Exception as exc:  # no model, or it failed: the signal is not hit
        log.warning("clarification count not available (%s); counted as not hit", type(exc).__name__)
        return None
    value = _json_count(completion.text)
    if value is None:
        log.warning("the model's clarification count is not usable JSON; counted as not hit")
    return value


def _json_count(text: str) -> int | None:
    body = (text or "").strip()
    fenced = re.search(r"```(?:json)?\s*(.*?)```", body, re.DOTALL)
    if fenced:
        body = fenced.group(1).strip()
    try:
        value = json.loads(body).get("clarification_count")
    except (ValueError, AttributeError):
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        return None
    return int(value)


# --- the stop hook -------------------------------------------------------------------------------


class EnhanceHook:
    """The runner's stop hook: evaluate every normally ended run, log it, enhance when it qualifies."""

    __name__ = "enhance"

    def __init__(self, router: Callable[[], ModelRouter]) -> None:
        self._router = router  # the runtime's current router (a reload of the models replaces it)

    async def __call__(self, context: StopContext) -> str | None:
        session, result = context.session, context.result
        settings = session.settings.skill_enhance
        decision = await decide(
            session,
            result.turn_id,
            completed_normally=result.completed_normally,
            auto_enhance_enabled=settings.auto_enhance,
            router=self._router,
        )
        outcome = None
        if decision.should_trigger:
            from nini.agent.skill_enhancer import enhance_from_run

            outcome = await enhance_from_run(session, result.turn_id)
        await record_decision(session, result.turn_id, decision, result.ended_by, outcome)
        return outcome.message if outcome is not None else None


async def decide(
    session: Session,
    turn_id: str,
    *,
    completed_normally: bool,
    auto_enhance_enabled: bool,
    router: Callable[[], ModelRouter],
) -> TriggerDecision:
    """The decision for one run: record signals, then the model's clarification count if it matters
    (asked of ``router()``, only then)."""
    settings = session.settings.skill_enhance
    store = session.store

    def evaluate(signals: TriggerSignals | dict[str, Any]) -> TriggerDecision:
        return evaluate_trigger(
            auto_enhance_enabled=auto_enhance_enabled,
            completed_normally=completed_normally,
            session_id=session.id,
            signals=signals,
            profile=settings.trigger_profile,
        )

    if not auto_enhance_enabled or not completed_normally:
        return evaluate(TriggerSignals())
    try:
        signals = await store.call(extract_signals, store, session.id, turn_id)
    except Exception as exc:  # a broken record: every signal unknown, the evaluation still completes
        log.warning("trigger signals could not be read (%s); counted as not hit", type(exc).__name__)
        signals = TriggerSignals(None, None, None, None, None)
    decision = evaluate(signals)
    # the last user messages only: the model judges at most MAX_CLARIFY_MESSAGES (a long session's
    # whole history is not read)
    last = await store.call(store.last_messages, session.id, "user", MAX_CLARIFY_MESSAGES)
    users = [m["content"] or "" for m in last]
    if clarification_matters(decision, len(users)):
        signals.user_clarification_count = await clarification_count(router(), users)
        decision = evaluate(signals)
    return decision


async def record_decision(
    session: Session, turn_id: str, decision: TriggerDecision, status: str, outcome: EnhanceOutcome | None
) -> None:
    """One JSON log line and one ``enhance_decision`` event; neither may fail the run."""
    fields: dict[str, Any] = {
        "reasonCode": decision.reason_code,
        "shouldTrigger": decision.should_trigger,
        "totalScore": decision.total_score,
        "threshold": decision.threshold,
        "signalHits": decision.signal_hits,
        "profile": decision.profile,
        "sessionId": session.id,
        "turnId": turn_id,
        "executionStatus": status,
    }
    if outcome is not None:
        fields["enhancement"] = {"status": outcome.status, "skill": outcome.skill, "message": outcome.message}
    try:
        log.info(
            "enhance decision %s (score %d of %d)",
            decision.reason_code,
            decision.total_score,
            decision.threshold,
            extra={"data": fields},
        )
    except Exception:  # a log handler that fails must not reach the run
        pass
    try:
        await session.store.call(session.events.publish, session.id, "enhance_decision", fields, turn_id=turn_id)
    except Exception:
        log.warning("the enhance_decision event could not be published", exc_info=True)
