"""Which findings matter: a score per candidate, so that the few a report keeps are its results.

Named metrics and estimates (RMSE, R², accuracy, p-values, coefficients and their intervals), a
section's final result and the values the notebook's own prose quotes rank above everything else;
set-up output and an exercise's side results rank low. Only the choice is ranked: the report lists
the findings it keeps in the order of the analysis. Noise is not ranked low here, it never becomes
a candidate (findings.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from nini.report.headings import headings as note_headings
from nini.report.model import Step

METRIC = 4  # a named metric or estimate
FINAL = 1  # ... that is a final, test or validation score
PROSE = 2  # a value the notebook's prose quotes (a number, a variable name)
SECTION_END = 1  # the last result under a heading
NO_NUMBER = -1  # words without a value ("Welcome to Machine Learning!")
PREVIEW = -1  # a look at the data (``df.head()``, ``df.info()``), not a result
SETUP = -3  # under a Setup / Imports heading
EXERCISE = -8  # under an Exercise(s) / 练习 heading: the reader's homework, not the analysis

_WORDS = (
    r"rmsl?e|mae|mse|mape|smape|r2|r²|r\^2|r[- ]?squared|rsquared|accuracy|accuracies|acc|precision|recall"
    r"|f1|fbeta|auc|roc|log[- ]?loss|logloss|loss|mean (?:squared|absolute) error|squared error|absolute error"
    r"|p[- .]?values?|pr\(>\|?[tzf]\|?\)|[tzf][- ]?(?:values?|stat|statistics?)|statistics?|chi2|chi[- ]?squared?|chisq"
    r"|χ²|x[- ]squared|coef|coefficients?|estimates?|intercepts?|slopes?|std\.? errors?|standard errors?|confidence"
    r"|confint|ci|intervals?|scores?|kappa|mcc|silhouette|aic|bic|deviance|log[- ]?likelihood|odds ratios?"
    r"|hazard ratios?|correlations?|corr|pearson|spearman|effect size|cohen"
)
_METRIC = re.compile(rf"(?<![a-z0-9])(?:{_WORDS})s?(?![a-z0-9])")
# "t = 2.1", "F: 33.2", "p < 0.001": the statistic's letter next to its value
_STATISTIC = re.compile(r"(?<![\w.])(?:[tFzp]|df)\s*(?:=|:|<|>)\s*-?\.?\d")
_FINAL = re.compile(r"(?<![a-z0-9])(?:final|test|testing|holdout|hold-out|validation|val)(?![a-z0-9])")
_EXERCISE = re.compile(r"exercis|\bhomework\b|练习|习题|作业", re.I)
_SETUP = re.compile(
    r"^\W*(?:setup|set[- ]up|imports?|installation|install|environment|requirements|dependencies"
    r"|preliminaries|configuration|准备|环境|安装|导入)\b",
    re.I,
)
_PREVIEW = re.compile(r"\.(?:head|tail|sample|info|dtypes|columns|keys)\b(?:\([^()]*\))?$")
_IDENTIFIER = re.compile(r"(?<![\w.])[A-Za-z_]\w*_\w+")  # snake_case: a variable the prose names
# a number as prose writes it: 41,424 / 0.8376 / 10.7%
_PROSE_NUMBER = re.compile(r"(?<![\w.,])(-?\d{1,3}(?:,\d{3})+(?:\.\d+)?|-?\d+(?:\.\d+)?)(%?)(?![\w])")
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
MAX_LABEL_WORDS = 5
MAX_PROSE_NUMBERS = 5_000
MAX_VALUE_NUMBERS = 200  # of one candidate, compared with the prose's


def words(*texts: str | None) -> str:
    """Texts as lower-case words: ``final_rmse`` and ``rocAuc`` read "final rmse", "roc auc"."""
    joined = " ".join(text for text in texts if text)
    return re.sub(r"([a-z])([A-Z])", r"\1 \2", joined).replace("_", " ").casefold()


def is_metric(text: str) -> bool:
    """Whether ``text`` (names, printed labels, table headers) names a metric or an estimate."""
    return bool(_METRIC.search(words(text)) or _STATISTIC.search(text))


def heading_text(text: str) -> str:
    """A heading compared with another: case, Markdown emphasis and spacing do not count."""
    return " ".join(re.sub(r"[*_`#\[\]<>]", " ", text).casefold().split())


@dataclass(frozen=True)
class Prose:
    """What the notebook's Markdown quotes: snake_case names and numbers of two or more significant
    digits (a year, a small count or "0.1" match too many values to mean one)."""

    names: frozenset[str]
    numbers: frozenset[tuple[int, Decimal]]  # (decimal places, value)
    headings: tuple[tuple[str, tuple[str, ...]], ...]  # (heading, the path of headings down to it), in order

    @classmethod
    def of(cls, notes: Iterable[str]) -> Prose:
        names: set[str] = set()
        numbers: set[tuple[int, Decimal]] = set()
        headings: list[tuple[str, tuple[str, ...]]] = []
        path: list[tuple[int, str]] = []
        for note in notes:
            names.update(_IDENTIFIER.findall(note))
            for match in _PROSE_NUMBER.finditer(note):
                if len(numbers) < MAX_PROSE_NUMBERS:
                    numbers.update(_prose_number(match.group(1), bool(match.group(2))))
            for heading in note_headings(note):  # as sources.py reads them for Step.section
                path = [entry for entry in path if entry[0] < heading.level] + [(heading.level, heading.text)]
                headings.append((heading_text(heading.text), tuple(text for _, text in path)))
        return cls(frozenset(names), frozenset(numbers), tuple(headings))

    def quotes(self, names: Iterable[str], values: str) -> bool:
        """Whether the prose names one of ``names`` or quotes one of the numbers in ``values``."""
        if any(name in self.names for name in names):
            return True
        if not self.numbers:
            return False
        places = {places for places, _ in self.numbers}
        for literal in _NUMBER.findall(values)[:MAX_VALUE_NUMBERS]:
            try:
                value = Decimal(literal)
            except InvalidOperation:
                continue
            if any((n, round(value, n)) in self.numbers for n in places):
                return True
        return False

    def section_paths(self, steps: Sequence[Step]) -> dict[str, tuple[str, ...]]:
        """Each step's headings from the top down to its own (``Step.section`` is only the nearest
        one): the notes' headings are walked in step with the steps, which come in the same order."""
        paths: dict[str, tuple[str, ...]] = {}
        position = 0
        for step in steps:
            if not step.section:
                continue
            wanted = heading_text(step.section)
            found = next((i for i in range(position, len(self.headings)) if self.headings[i][0] == wanted), None)
            if found is not None:
                position = found
                paths[step.id] = self.headings[found][1]
            else:
                paths[step.id] = (step.section,)
        return paths


def _prose_number(text: str, percent: bool) -> set[tuple[int, Decimal]]:
    plain = text.replace(",", "")
    digits = plain.lstrip("-").replace(".", "").lstrip("0")
    places = len(plain.split(".")[1]) if "." in plain else 0
    if len(digits) < 2 or (places == 0 and (abs(int(plain)) < 100 or 1900 <= int(plain) <= 2100)):
        return set()
    value = Decimal(plain)
    found = {(places, value)}
    if percent:  # 10.7% quotes 0.107
        found.add((places + 2, (value / 100).quantize(Decimal(1).scaleb(-(places + 2)))))
    return found


def score(
    step: Step,
    names: Sequence[str],
    text: str,
    *,
    headers: Sequence[str] = (),
    path: Sequence[str],
    last_in_section: bool,
    quoted: bool,
    has_table: bool,
) -> int:
    """How much a candidate matters (higher first; ties go to the later step, nearer the conclusion).

    ``names`` say what its values are (expressions, printed labels, keys), ``headers`` its table's
    header row and row names: both can name a metric, only the values' own names make it a final
    or test score (sklearn's ``mean_test_score`` column is a validation score)."""
    # a label that is a sentence ("# shows another way to estimate the probability") describes the
    # code, not the value: only a short one names what the value measures
    label = step.label or ""
    label = label if len(label.split()) <= MAX_LABEL_WORDS else ""
    total = 0
    metric = is_metric(" ".join([label, *names, *headers, text]))
    if metric:
        total += METRIC + (FINAL if _FINAL.search(words(" ".join([label, *names]))) else 0)
    total += PROSE if quoted else 0
    total += SECTION_END if last_in_section else 0
    total += NO_NUMBER if not has_table and not re.search(r"\d", text) else 0
    # df.head() looks at the data; cv_res.head() shows the best rows of a table of scores
    total += PREVIEW if not metric and any(_PREVIEW.search(name) for name in names) else 0
    total += EXERCISE if any(_EXERCISE.search(heading) for heading in path) else 0
    total += SETUP if any(_SETUP.search(heading) for heading in path) else 0
    return total
