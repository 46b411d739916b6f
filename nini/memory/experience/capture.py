"""Capture: from what a user said, the experience candidates worth asking them about.

Only the user's words count: judgements, trade-offs, boundaries, constraints, corrections, and
confirmations of a suggestion (then the suggestion they confirmed is the content). A cheap scan
(``SIGNAL``) picks the messages that carry one; with a model, those go to it (purpose ``fast``)
for EXP-CANDIDATE JSON; without one, nothing is captured from a conversation, and only what the
user states explicitly (``nini remember --add``, ``%nini remember "..."``) becomes a candidate,
parsed here by ``explicit_candidate``.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence
from typing import Any

from nini.memory.experience.model import Candidate

log = logging.getLogger("nini.memory.experience")

SIGNAL = re.compile(
    r"\b(use|don'?t|do not|never|always|instead|rather than|should|must|avoid|prefer|because|since|outliers?|"
    r"wrong|careful|note that|remember|changed|exclude|actually|skewed|not the)\b|"
    r"应该|不要|别用|改用|而不是|因为|由于|必须|注意|记住|不对|错了|换成|代替|排除|异常值|极端值|变更|改成|只能|不能",
    re.IGNORECASE,
)
CONFIRMATION = re.compile(
    r"^\s*(yes|yep|ok(ay)?|sure|right|agreed|exactly|do that|好的?|对的?|是的|可以|同意|没错|就这样|就按这个)\b", re.I
)
MAX_MESSAGE_CHARS = 1500
CONTEXT_CHARS = 500
MAX_SIGNAL_MESSAGES = 20
EXTRACT_PROMPT = """You read what a user said to a data-analysis assistant and keep the experience worth reusing: \
judgements, trade-offs, boundaries, constraints and corrections the USER stated, or a suggestion of the assistant \
that the user explicitly confirmed. Never take the assistant's own unconfirmed suggestions. Each experience must say \
the decision being made, at least one alternative it rejects, and the signal that decides between them.
Answer with JSON only: {"candidates": [{"title": "...", "stage": "init|analysis|report|review", "trigger": "when to \
load it", "decision": "...", "alternatives": ["..."], "signal": "the discriminating signal", "surfaceSignal": "what \
one sees", "hiddenRisk": "what goes wrong unnoticed", "solution": "...", "verify": "how to check", "pointers": \
["datasets, notebooks, files"], "usedToThink": "...", "nowBelieve": "...", "because": "the decisive variable", \
"level": "team|project", "type": "standard|knowledge", "quote": "the user's words"}]}. \
Nothing worth keeping: {"candidates": []}."""

# A rejected alternative named by the statement itself ("median, not the mean", "用新表而不是旧表")
_REJECTED = re.compile(
    r"(?:\binstead of\b|\brather than\b|\bnot\b|而不是|不要用|不用|别用|代替)\s*"
    r"([^,.;:，。；：]+?)(?=\s+(?:because|since)\b|因为|由于|[,.;:，。；：]|$)",
    re.I,
)
_ACTION = re.compile(
    r"^\s*(use|join|exclude|apply|take|drop|filter|keep|always|never|don'?t|do not|prefer|avoid)\b|"
    r"用|改用|使用|采用|关联|排除|剔除|不要|必须|统一",
    re.I,
)
_BECAUSE = re.compile(r"(?:\bbecause\b|\bsince\b|因为|由于)\s*([^.;。；]+)", re.I)
# analysis choices and what they are usually chosen over, for a statement that names only its choice
OPPOSITES = {
    "median": "mean",
    "mean": "median",
    "中位数": "均值",
    "均值": "中位数",
    "平均值": "中位数",
    "left join": "inner join",
    "inner join": "left join",
    "spearman": "pearson",
    "pearson": "spearman",
    "mann-whitney": "t-test",
    "wilcoxon": "t-test",
    "log scale": "linear scale",
    "new table": "old table",
    "新表": "旧表",
    "新编码": "旧编码",
    "winsoriz": "raw values",
    "robust": "ordinary least squares",
    "bootstrap": "normal approximation",
    "非参数": "t 检验",
    "weighted": "unweighted",
    "加权": "不加权",
}


def signal_messages(messages: Sequence[dict[str, Any]]) -> list[str]:
    """The user's messages that carry an experience signal; a confirmation comes with the
    assistant's text it confirms (the only way the assistant's words are taken), a correction with
    the answer it reacts to, marked as context."""
    found: list[str] = []
    previous_assistant = ""
    for message in messages:
        role, text = message.get("role"), message.get("content")
        if not isinstance(text, str) or not text.strip():
            continue
        if role == "assistant":
            previous_assistant = text
        elif role == "user":
            if CONFIRMATION.search(text) and previous_assistant and len(text) < 200:
                found.append(
                    f"The user confirmed this suggestion: {previous_assistant[-MAX_MESSAGE_CHARS:]}\nUser: {text}"
                )
            elif SIGNAL.search(text):
                context = (
                    f"(Context only, not to capture: the assistant had said: {previous_assistant[-CONTEXT_CHARS:]})\n"
                    if previous_assistant
                    else ""
                )
                found.append(f"{context}User: {text[:MAX_MESSAGE_CHARS]}")
            previous_assistant = ""  # an answer is context for the user message right after it only
    return found[-MAX_SIGNAL_MESSAGES:]


async def extract_with_model(
    llm: Any,
    messages: Sequence[dict[str, Any]],
    *,
    session_id: str | None,
    stage: str,
    datasets: Sequence[str] = (),
    timeout_s: float = 60,
) -> list[Candidate]:
    """EXP-CANDIDATEs a model finds in the signal-bearing user messages ([] when there are none)."""
    picked = signal_messages(messages)
    if not picked:
        return []
    context = f"Stage: {stage}. Datasets in play: {', '.join(datasets) or 'none'}.\n\n" + "\n\n".join(picked)
    completion = await llm.complete(
        "fast",
        [{"role": "system", "content": EXTRACT_PROMPT}, {"role": "user", "content": context}],
        temperature=0,
        max_tokens=2000,
        timeout_s=timeout_s,
    )
    candidates = []
    for item in _json_candidates(getattr(completion, "text", "") or ""):
        candidate = Candidate.from_json(item)
        candidate.source, candidate.task_id = "model", session_id
        candidate.stage = candidate.stage if candidate.stage in ("init", "analysis", "report", "review") else stage
        candidates.append(candidate)
    return candidates


def explicit_candidate(
    text: str,
    *,
    stage: str = "analysis",
    session_id: str | None = None,
    level: str | None = None,
    type_: str | None = None,
    trigger: str | None = None,
    alternatives: Sequence[str] = (),
    signal: str | None = None,
    datasets: Sequence[str] = (),
) -> Candidate:
    """A candidate from a statement the user made on purpose ("use the median, the revenue column has
    outliers"): the decision is its first clause, the signal its reason, the rejected alternative what
    it says not to do (or the usual alternative to its choice); flags given by the user win."""
    statement = " ".join(text.split())
    clauses = [part.strip() for part in re.split(r"[,;:，；：]|\s-\s", statement) if part.strip()]
    chosen = next((i for i, clause in enumerate(clauses) if _ACTION.search(clause)), 0)
    reason = _BECAUSE.search(statement)
    decision = _BECAUSE.sub("", _REJECTED.sub("", clauses[chosen] if clauses else statement)).strip()
    others = [clause for i, clause in enumerate(clauses) if i != chosen]
    found_signal = signal or (reason.group(1).strip() if reason else ", ".join(others))
    rejected = list(alternatives) or [m.group(1).strip() for m in _REJECTED.finditer(statement)]
    if not rejected:
        lowered = statement.lower()
        rejected = [alt for key, alt in OPPOSITES.items() if key in lowered][:1]
    lowered = statement.lower()
    pointers = [name for name in datasets if name and name.lower() in lowered]
    pointers += [
        f for f in re.findall(r"[\w\-/]+\.(?:csv|parquet|xlsx|ipynb|json|tsv)", statement) if f not in pointers
    ]
    return Candidate(
        decision=decision[:300],
        alternatives=rejected[:5],
        signal=found_signal[:300],
        stage=stage,
        task_id=session_id,
        trigger=(trigger or statement)[:300],
        pointers=pointers,
        level=level or "",
        type=type_ or "",
        title=_title(statement),
        surface_signal=found_signal[:300],
        source="explicit",
        quote=statement[:1000],
    )


def _title(decision: str) -> str:
    title = decision.strip().rstrip(".。")
    title = title[:1].upper() + title[1:]
    return title if len(title) <= 80 else title[:77] + "..."


def _json_candidates(text: str) -> list[dict[str, Any]]:
    """The candidates of a model's answer: JSON, possibly in a ``` fence; [] when unreadable."""
    cleaned = re.sub(r"^```(?:json)?\s*|\s*```$", "", text.strip())
    start = cleaned.find("{")
    try:
        data = json.loads(cleaned[start:]) if start >= 0 else None
    except json.JSONDecodeError:
        log.info("experience extraction: the model's answer is not JSON; nothing captured")
        return []
    items = data.get("candidates") if isinstance(data, dict) else data
    return [item for item in items if isinstance(item, dict)] if isinstance(items, list) else []
