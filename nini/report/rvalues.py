"""R's values as a report reads them: printed model summaries and tests, and IRkernel's displays.

R prints ``summary(lm(...))``, ``summary(glm(...))``, ``anova(...)`` and ``t.test(...)`` as text
whose column headers contain spaces ("Std. Error", "Sum Sq") and whose numbers sit right-aligned
under them, so splitting on runs of spaces mangles them (the header row became a text line and
an ``lm`` summary was cut after the intercept). Here a header's words are matched against R's
own column names and each number is put in the column whose header ends where it ends.

IRkernel sends values as ``display_data`` in several forms (its ``repr`` package): a named vector
is cleanest in its HTML ``<dl>`` or its LaTeX ``description`` (its Markdown glues each value to
the next name), a plain vector prints ``[1] 55``. Pure functions, bounded work on any input.
"""

from __future__ import annotations

import html
import re

from nini.report.markup import MAX_LIST_ITEMS as MAX_ITEMS  # items of a vector shown; the rest is "…"
from nini.report.model import Table, Value

MAX_BLOCK_LINES = 80  # lines of one printed summary looked through
MAX_VALUES = 60  # values taken from one output; the rest of it stays text
MAX_HEADER_CHARS = 400

# R's matrix column headers that contain spaces or symbols (summary.lm, summary.glm, anova, aov).
_R_COLUMNS = sorted(
    [
        "Estimate",
        "Std. Error",
        "t value",
        "z value",
        "Pr(>|t|)",
        "Pr(>|z|)",
        "Df",
        "Sum Sq",
        "Mean Sq",
        "F value",
        "Pr(>F)",
        "Deviance",
        "Resid. Df",
        "Resid. Dev",
        "Pr(>Chi)",
        "Pr(>Chisq)",
        "Sum of Sq",
        "RSS",
        "Chisq",
        "LR Chisq",
        "Res.Df",
        "Df Sum of Sq",
        "Rao",
        "Cp",
        "AIC",
    ],
    key=len,
    reverse=True,
)
_HEADER_WORD = re.compile("|".join(re.escape(name) for name in _R_COLUMNS) + r"|\S+")
_STATS = (
    "Residual standard error",
    "Multiple R-squared",
    "Adjusted R-squared",
    "F-statistic",
    "p-value",
    "Null deviance",
    "Residual deviance",
    "AIC",
    "BIC",
)
_QUIET = re.compile(
    r"^\s*(?:---|Signif\. codes:|Number of Fisher Scoring|\(Dispersion parameter|\(\d+ observations? del"
    r"|alternative hypothesis:|true \w)"
)
_TEST_STAT = re.compile(r"([^,=<>]+?)\s*([=<>])\s*([^,]+)")
_INDEXED = re.compile(r"^\s*\[\d+\]\s?")


def r_printed(text: str) -> tuple[str, list[Value]]:
    """``text`` without the R model summaries, ANOVA tables and tests printed in it, and those as values:
    each coefficient or ANOVA table with its header, each statistic as a named text value."""
    if "Estimate" not in text and "Analysis of" not in text and "data:" not in text:
        return text, []  # the common case costs one scan
    lines = text.splitlines()
    kept: list[str] = []
    values: list[Value] = []
    index = 0
    while index < len(lines):
        found = (
            None
            if len(values) >= MAX_VALUES
            else _summary(lines, index) or _anova(lines, index) or _htest(lines, index)
        )
        if found is None:
            kept.append(lines[index])
            index += 1
            continue
        index, block = found
        values += block
    return "\n".join(kept), values


def _summary(lines: list[str], start: int) -> tuple[int, list[Value]] | None:
    """``summary(lm())`` or ``summary(glm())`` from its ``Call:`` line, or a bare coefficient matrix."""
    index, values = start, []
    if lines[start].strip() == "Call:":
        index = start + 1
        while index < len(lines) and index - start < MAX_BLOCK_LINES and lines[index].strip() != "Coefficients:":
            index += 1
        if index >= len(lines) or index - start >= MAX_BLOCK_LINES:
            return None
    if lines[index].strip() == "Coefficients:":
        index += 1
    matrix = r_matrix(lines, index)
    if matrix is None:
        return None
    named = "Estimate" in lines[index] or lines[start].strip() in ("Call:", "Coefficients:")
    index, table = matrix
    values.append(Value(table=table, name="Coefficients" if named else None, origin="printed"))
    while index < len(lines) and index - start < MAX_BLOCK_LINES:
        line = lines[index]
        if not line.strip() or _QUIET.match(line):
            index += 1
        elif stats := _stat_line(line):
            values += stats
            index += 1
        else:
            break
    return index, values


def _anova(lines: list[str], start: int) -> tuple[int, list[Value]] | None:
    """``anova(...)``: its title, ``Response:``/``Model`` lines, then the table."""
    title = lines[start].strip()
    if title not in ("Analysis of Variance Table", "Analysis of Deviance Table"):
        return None
    index = start + 1
    response = None
    while index < len(lines) and index - start < 12 and r_matrix(lines, index) is None:
        if lines[index].startswith("Response:"):
            response = lines[index].split(":", 1)[1].strip()
        index += 1
    matrix = r_matrix(lines, index) if index < len(lines) else None
    if matrix is None:
        return None
    index, table = matrix
    while index < len(lines) and _QUIET.match(lines[index]):
        index += 1
    return index, [Value(table=table, name=f"{title} ({response})" if response else title, origin="printed")]


def _htest(lines: list[str], start: int) -> tuple[int, list[Value]] | None:
    """A test R prints as an ``htest`` (``t.test``, ``wilcox.test``, ``cor.test``, ``chisq.test``...):
    its title, ``data:``, the statistics line, the interval and the sample estimates."""
    title = lines[start].strip()
    data_at = start if title.startswith("data:") else start + 2
    if (
        data_at >= len(lines)
        or not lines[data_at].startswith("data:")
        or (data_at > start and lines[start + 1].strip())
    ):
        return None
    values = [
        Value(
            text=f"{title} ({lines[data_at][5:].strip()})" if data_at > start else lines[data_at][5:].strip(),
            name="test",
            origin="printed",
        )
    ]
    index = data_at + 1
    while index < len(lines) and index - start < 30 and lines[index].strip():
        line = lines[index]
        if line.endswith("confidence interval:") and index + 1 < len(lines):
            bounds = lines[index + 1].split()
            values.append(Value(text=" to ".join(bounds), name=line.rstrip(":").strip(), origin="printed"))
            index += 2
        elif line.strip() == "sample estimates:" and index + 2 < len(lines):
            estimates = named_row(lines[index + 1], lines[index + 2])
            values += [Value(text=value, name=name, origin="printed") for name, value in estimates]
            index += 3
        elif _QUIET.match(line):
            index += 1
        elif stats := [(m.group(1).strip(), m.group(2), m.group(3).strip()) for m in _TEST_STAT.finditer(line)]:
            values += [
                Value(text=value if sign == "=" else f"{sign} {value}", name=name, origin="printed")
                for name, sign, value in stats
            ]
            index += 1
        else:
            break
    return (index, values) if len(values) > 1 else None  # a "data:" line alone is no test


def r_matrix(lines: list[str], index: int) -> tuple[int, Table] | None:
    """The R matrix whose header is ``lines[index]`` (at least two of R's known column names), and
    the index after it; a value belongs to the column whose header ends at or after its end, and
    what follows the last column (significance stars) is dropped."""
    header = lines[index].rstrip() if index < len(lines) else ""
    if not header.startswith(" "):
        return None  # R pads a matrix's header by the width of its row names
    words = [(m.group(0), m.end() - 1) for m in _HEADER_WORD.finditer(header[:MAX_HEADER_CHARS])]
    if len(words) < 2 or sum(word in _R_COLUMNS for word, _ in words) < 2:
        return None
    rows: list[tuple[str, ...]] = [("", *(word for word, _ in words))]
    index += 1
    while index < len(lines) and lines[index].strip() and not lines[index].startswith("---"):
        line = lines[index][: MAX_HEADER_CHARS * 2]
        tokens = list(re.finditer(r"\S+", line))
        # the first column's value is its last token: what comes before it is the row's name
        # (which may hold spaces, "poly(wt, 2)1", and may be wider or narrower than the header's lead)
        first = [token for token in tokens if token.end() - 1 <= words[0][1]]
        if not first:
            break
        cells = [first[-1].group(0)] + [""] * (len(words) - 1)
        for token in tokens[len(first) :]:
            column = next((k for k, (_, right) in enumerate(words) if token.end() - 1 <= right), None)
            if column is not None:
                cells[column] = f"{cells[column]} {token.group(0)}".strip()
        rows.append((line[: first[-1].start()].strip(), *cells))
        index += 1
    while index < len(lines) and _QUIET.match(lines[index]):
        index += 1
    return (index, tuple(rows)) if len(rows) > 1 else None


def _stat_line(line: str) -> list[Value]:
    """``Multiple R-squared:  0.8268,	Adjusted R-squared:  0.8148`` as named values; [] for other lines."""
    values = []
    for part in re.split(r",\s+(?=[A-Za-z][\w .-]*:\s)", line.strip()):
        name, _, value = part.partition(":")
        if name.strip() not in _STATS or not value.strip():
            return []
        values.append(Value(text=" ".join(value.split()).rstrip(","), name=name.strip(), origin="printed"))
    return values


def named_row(names: str, values: str) -> list[tuple[str, str]]:
    """A named vector as R prints it (names above right-aligned values): (name, value) pairs."""
    width = max(len(names), len(values))
    names, values = names.ljust(width), values.ljust(width)
    pairs, left = [], 0
    for token in re.finditer(r"\S+", values):
        pairs.append((names[left : token.end()].strip(), token.group(0)))
        left = token.end()
    return pairs if all(name for name, _ in pairs) else []


def r_plain(text: str) -> str | None:
    """An R vector's ``text/plain`` (``[1] 55``, `` [1] 12 13 ... [26] 37``) as text, or None
    when it is not an indexed vector."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines or not all(_INDEXED.match(line) for line in lines):
        return None
    items = " ".join(_INDEXED.sub("", line) for line in lines[:MAX_ITEMS])
    if re.fullmatch(r'\s*"[^"]*"\s*', items):
        return items.strip().strip('"')
    return _items(items.split(), more=len(lines) > MAX_ITEMS)


def r_html_text(markup: str) -> str | None:
    """IRkernel's HTML of a vector: ``<dl><dt>loss</dt><dd>0.59</dd>...`` as ``loss: 0.59; ...``,
    ``<ol class=list-inline><li>12</li>...`` as ``12, 13, …``; None for other HTML."""
    pairs = re.findall(r"<dt>(.*?)</dt>\s*<dd>(.*?)</dd>", markup, re.S)
    if pairs:
        shown = [f"{_unmark(name)}: {_unmark(value)}" for name, value in pairs[:MAX_ITEMS]]
        return "; ".join(shown + (["…"] if len(pairs) > MAX_ITEMS else []))
    items = re.findall(r"<li>(.*?)</li>", markup, re.S)
    if items and re.search(r"<(?:ol|ul) class=list-inline", markup):
        return _items([_unmark(item) for item in items], more=False)
    return None


def r_type_row(cells: list[str]) -> bool:
    """Whether a header row only gives R's column types (``<dbl>``, ``<chr>``: IRkernel's second row)."""
    shown = [cell for cell in cells if cell]
    return bool(shown) and all(re.fullmatch(r"<\w+>", cell) for cell in shown)


def r_column(name: str) -> str:
    """A column name without the type IRkernel's Markdown appends (``mpg <dbl>``) or its empty marker."""
    return re.sub(r"\s*<\w+>$", "", name.replace("<!--/-->", "")).strip()


_LATEX_COMMANDS = {
    **dict(
        zip(
            "alpha beta gamma delta epsilon theta lambda mu pi rho sigma tau phi chi omega".split(),
            "αβγδεθλμπρστφχω",
            strict=True,
        )
    ),
    "times": "×",
    "cdot": "·",
    "pm": "±",
    "le": "≤",
    "leq": "≤",
    "ge": "≥",
    "geq": "≥",
}
_ESCAPED = "%_&$#{}"  # \% and the like: kept through the clean-up as private-use characters


def latex_text(latex: str) -> str | None:
    """LaTeX reduced to words and numbers (``\\frac{a}{b}`` is a/b, ``\\textbf{x}`` is x, ``$...$``
    its content); a vector's ``enumerate``/``description`` as a list; None for a tabular."""
    if "\\begin{tabular}" in latex:
        return None
    named = re.findall(r"\\item\[(.*?)\]\s*(.*)", latex)
    if named:
        shown = [f"{_latex(name)}: {_latex(value)}" for name, value in named[:MAX_ITEMS]]
        return "; ".join(shown + (["…"] if len(named) > MAX_ITEMS else []))
    items = re.findall(r"\\item\s+(.*)", latex)
    if items:
        return _items([_latex(item) for item in items], more=False)
    text = _latex(latex)
    return text or None


def _latex(text: str) -> str:
    text = text.replace("\\textbackslash{}", "")
    for _ in range(3):  # nested \frac{\textbf{a}}{b}
        text = re.sub(r"\\[dt]?frac\{([^{}]*)\}\{([^{}]*)\}", r"\1/\2", text)
        text = re.sub(r"\\(?:textbf|textit|emph|mathrm|mathbf|text|texttt|operatorname)\{([^{}]*)\}", r"\1", text)
    text = re.sub(r"\\([A-Za-z]+)", lambda m: _LATEX_COMMANDS.get(m.group(1), m.group(0)), text)
    text = re.sub(r"\\([%_&$#{}])", lambda m: chr(0xE000 + _ESCAPED.index(m.group(1))), text)
    text = re.sub(r"\\(?:begin|end)\{[^}]*\}|\\[A-Za-z]+\*?|[{}$]", " ", text)
    text = text.replace("\\\\", " ").replace("~", " ")
    text = re.sub("[\ue000-\ue006]", lambda m: _ESCAPED[ord(m.group(0)) - 0xE000], text)
    return " ".join(text.split()).strip("'")


def _unmark(markup: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]*>", "", markup)).split())


def _items(items: list[str], *, more: bool) -> str:
    shown = items[:MAX_ITEMS]
    return ", ".join(shown + (["…"] if more or len(items) > MAX_ITEMS else []))
