"""What a preference says: the signals feedback can carry, the preference each one sets, and the
one line a prompt shows for it.

A signal names a preference the user wants (``no_exclamation``: do not use exclamation marks). It
maps to a key and a value (``punctuation.no_exclamation`` = true); a signal nini does not know
becomes ``custom.<signal>`` holding the user's words. Signals come from ``--signal``, from the user's
comment (a model when one is configured, else the keyword rules here), or from the user's edit of a
generated report (``signals_from_edit``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Signal:
    key: str
    value: Any
    zh: str
    en: str


SIGNALS: dict[str, Signal] = {
    "no_exclamation": Signal("punctuation.no_exclamation", True, "不使用感叹号", "no exclamation marks"),
    "concise": Signal("verbosity", "concise", "回答简洁，先给结论", "concise answers, conclusion first"),
    "detailed": Signal(
        "verbosity", "detailed", "回答详细，说明方法和依据", "detailed answers with method and evidence"
    ),
    "formal": Signal("tone", "formal", "语气正式", "a formal tone"),
    "casual": Signal("tone", "casual", "语气轻松", "a casual tone"),
    "chinese": Signal("language", "zh", "用中文回答", "answer in Chinese"),
    "english": Signal("language", "en", "用英文回答", "answer in English"),
    "fewer_decimals": Signal("report.decimals", 2, "数字保留两位小数", "numbers to two decimals"),
    "minimal_charts": Signal(
        "chart.style", "minimal", "图表简洁：无网格、无装饰", "minimal charts: no grid, no decoration"
    ),
    "no_emoji": Signal("punctuation.no_emoji", True, "不使用表情符号", "no emoji"),
}
BY_KEY = {(signal.key, repr(signal.value)): name for name, signal in SIGNALS.items()}
# keyword rules for a comment when no model is configured: (pattern, signal)
COMMENT_RULES = (
    (re.compile(r"感叹号|exclamation", re.I), "no_exclamation"),
    (re.compile(r"太长|啰嗦|简洁|简短|too long|verbose|shorter|concise", re.I), "concise"),
    (re.compile(r"太短|详细|展开|more detail|too short|elaborate", re.I), "detailed"),
    (re.compile(r"正式|formal", re.I), "formal"),
    (re.compile(r"小数|decimals|too many digits", re.I), "fewer_decimals"),
    (re.compile(r"表情|emoji", re.I), "no_emoji"),
)
_SLUG = re.compile(r"[^a-z0-9_]+")
EMOJI = re.compile("[\U0001f300-\U0001faff\u2600-\u27bf]")


def signal_for(name: str) -> Signal:
    """The preference a signal sets; an unknown one is kept as ``custom.<slug>`` with its words."""
    known = SIGNALS.get(name.strip().lower())
    if known is not None:
        return known
    slug = _SLUG.sub("_", name.strip().lower()).strip("_")[:60] or "note"
    return Signal(f"custom.{slug}", name.strip()[:200], name.strip()[:200], name.strip()[:200])


def describe(key: str, value: Any, language: str = "zh") -> str:
    """The rule a preference states, in words: a known signal's, else ``key = value``."""
    name = BY_KEY.get((key, repr(value)))
    if name is not None:
        signal = SIGNALS[name]
        return signal.zh if language == "zh" else signal.en
    if key.startswith("custom.") and isinstance(value, str):
        return value
    return f"{key} = {value}"


def signals_from_comment(comment: str) -> list[str]:
    """The known signals a comment's words point at (the rules used without a model)."""
    return [name for pattern, name in COMMENT_RULES if pattern.search(comment)]


def signals_from_edit(original: str, edited: str) -> list[str]:
    """What the user's edit of a generated text says: exclamation marks or emoji removed, the text cut
    by more than a third, numbers given fewer decimals."""
    found = []
    if original.count("!") + original.count("！") > edited.count("!") + edited.count("！"):
        found.append("no_exclamation")
    if len(EMOJI.findall(original)) > len(EMOJI.findall(edited)):
        found.append("no_emoji")
    if len(edited.strip()) < 0.67 * len(original.strip()):
        found.append("concise")
    if _rounded(original, edited):
        found.append("fewer_decimals")
    return found


def _rounded(original: str, edited: str) -> bool:
    """Whether the edit wrote a number of the original with fewer decimals (0.5835 -> 0.58)."""
    before = set(re.findall(r"\d+\.\d+", original))
    for number in set(re.findall(r"\d+\.\d+", edited)) - before:
        places = len(number.split(".")[1])
        if any(len(old.split(".")[1]) > places and round(float(old), places) == float(number) for old in before):
            return True
    return False
