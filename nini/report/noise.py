"""Noise: what a step's output says that is never a finding.

Output is full of lines about the machine rather than the analysis: warnings, tracebacks,
progress bars, installation logs, ``%time`` lines, applications' logs, downloads, version
printouts. Values can be noise too: an object's repr (``<Figure size 640x480 with 1 Axes>``,
``alt.Chart(...)``, ``RandomForestRegressor(random_state=42)``), an empty list from
``ax.plot()``, the file names ``joblib.dump`` returns, a path, a numpy array printed as a table.
This module says which; findings.py never ranks them, it drops them.
"""

from __future__ import annotations

import ast
import re

from nini.report.model import Table
from nini.report.values import _closing  # the one bracket matcher: reprs are summarised and stripped alike

# Code about the machine, not the analysis: all its output is noise.
ENVIRONMENT_CODE = re.compile(
    r"\bsession_?[Ii]nfo\s*\(|%(?:load_ext\s+)?watermark\b|!\s*(?:pip|conda|mamba)\s+(?:list|freeze)"
    r"|\bpip\s+freeze\b|\binstalled\.packages\s*\("
)
# Code printing versions: its bare numbers ("1.24.3") are versions, not results.
VERSION_CODE = re.compile(
    r"__version__|\bsys\.version\b|\bpython_version\s*\(|\bpackageVersion\s*\(|\bR\.version"
    r"|\bversion\s*\(|!\s*\w+\s+--version|\[['\"]version['\"]\]"
)
_PACKAGES = (
    r"python|numpy|np|pandas|pd|scipy|sklearn|scikit-learn|matplotlib|mpl|seaborn|sns|tensorflow|tf"
    r"|keras|torch|pytorch|torchvision|xgboost|lightgbm|catboost|statsmodels|altair|plotly|bokeh|pymc\d?"
    r"|arviz|theano|jax|jupyter|jupyterlab|ipython|notebook|nltk|spacy|cv2|opencv|pillow|pil|polars|pyarrow"
)
VERSION_LINE = re.compile(
    r"^\W*(?:\[\w+\]\s*)?(?:(?:[A-Za-z][\w.\-]*\s+){0,3}(?:version|ver\.?)\s*(?:is\s*)?[:=]?\s*v?\d+\.\d+"
    rf"|(?:{_PACKAGES})\s*(?:version)?\s*[:=]?\s*v?\d+\.\d+[\w.+\-]*(?:\s*\(.*)?[\s\])]*$"
    r"|[A-Za-z][\w.\-]*\s*[:=]?\s*v?\d+\.\d+\.\d+[\w.+\-]*(?:\s*\(.*)?[\s\])]*$)",
    re.I,
)
_DOTTED = re.compile(r"\d\.\d")
_PACKAGE_START = re.compile(rf"^\W*(?:\[\w+\]\s*)?(?:{_PACKAGES})\b", re.I)


def version_line(line: str) -> bool:
    """Whether a line prints a version ("sklearn 1.2.0", "Python 3.10.4", "R version 4.3.1 (...)").
    The cheap tests first: most lines hold no dotted number, or name neither a version nor a package."""
    if not _DOTTED.search(line):
        return False
    if "ver" not in line.casefold() and not _PACKAGE_START.match(line) and line.count(".") < 2:
        return False
    return bool(VERSION_LINE.match(line))


_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])")
_PREFIX = re.compile(r"^\s*(?:\[(?:stdout|stderr|out|err)\]|(?:stdout|stderr)\s*:|(?:stdout|stderr)\s*>)\s?", re.I)
_TRACEBACK_START = re.compile(r"^\s*(?:\S+\s+)?Traceback \(most recent call last\)")
_EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning)\b\s*(?::|$)")
# Ends a traceback: the exception line, ``Name: message`` or a bare ``Name`` at the start of a line.
_TRACEBACK_END = re.compile(r"^[A-Za-z_][\w.]*(?::\s.*|:?)$")
_R_ERROR = re.compile(r"^\s*(?:Error(?: in .*?)?\s*:|Error in )")
_R_WARNING_BLOCK = re.compile(r"^\s*Warning messages?:\s*$")
_CONTINUATION = re.compile(r"^(?:\s+\S|\d+: |In |Calls: )")
_WARNING_WITH_SOURCE = re.compile(r"^\S.*:\d+: \w*Warning\b")  # warnings.warn format; source line follows
# Noise a line starts with (after its indentation), matched at the start only: one pass, not one per position.
_NOISE_START = re.compile(
    r"\s*(?:"
    + "|".join(
        [
            # warnings, errors and what R prints around them
            r"There (?:were|was) \d+ (?:or more )?warnings?",
            r"(?:Calls|In addition|Execution halted)\b",
            r"During handling of the above exception",
            r"The above exception was the direct cause",
            # package installation (pip, conda, R)
            r"(?:Collecting|Downloading|Installing collected packages|Successfully (?:installed|built|uninstalled)"
            r"|Requirement already satisfied|Using cached|Building wheels?|Created wheel|Stored in directory"
            r"|Preparing metadata|Attempting uninstall|Found existing installation|Uninstalling|Looking in indexes"
            r"|Installing build dependencies|Getting requirements|\[notice\])",
            r"trying URL",
            r"Content type '",
            r"downloaded \d",
            r"\*\* (?:libs|R|inst|byte-compile|help|building|testing)",
            r"\* DONE \(",
            # a headless browser's log line
            r"\[\d+/\d+\.\d+:[A-Z]+:",
            # %time, %%time and %timeit
            r"(?:CPU times|Wall time|Compiler time|Parser\s*)\s*:",
            r"The slowest run took\b",
            # a shell that has no such command
            r"/bin/\w*sh: ",
            # an application's log ("[NbConvertApp] WARNING | ...", "[NbConvertApp] Converting notebook ...")
            r"\[[A-Z]\w*App\]",
            r"(?-i:\[[A-Z]\w*\]\s+(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)\b)",
            # downloads (urllib, wget, Keras, figures saved by a book's helper)
            r"(?:Downloading|Downloaded|Extracting|Unzipping|Saving figure|Resolving|Connecting to|HTTP request sent"
            r"|Saving to:)\b",
            r"--\d{4}-\d{2}-\d{2} [\d:]+--\s",
            # log records
            r"(?-i:(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)(?::|\s+[-:\[]))",
            r"\d{4}-\d{2}-\d{2}[ T][\d:.,]+\s*(?:[-|]\s*)?\[?(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)\b",
        ]
    )
    + ")",
    re.I,
)
# Noise anywhere in a line.
_NOISE = re.compile(
    "|".join(
        [
            # warnings and deprecation notices (Python and R)
            r"(?-i:Warning\b)",
            r"warnings\.warn",
            r"\bdeprecat",
            # progress bars
            r"\d{1,3}%\|",
            r"\|[█▉▊▋▌▍▎▏#▓▒░ ]*[█▉▊▋▌▍▎▏#▓▒░]{2,}[█▉▊▋▌▍▎▏#▓▒░ ]*\|",
            r"\[[=#>.\- ]*[=#]{2,}[=#>.\- ]*\]",
            r"\b\d+(?:\.\d+)?\s*(?:it/s|s/it)\b",
            r"\bETA:? ?\d",
            # package installation (R)
            r"installing \*(?:source|binary)\* package",
            r"The downloaded (?:source|binary) packages are in",
            r"Installing packages? into",
            r"also installing the dependenc",
            # headless browsers (kaleido, Chromium)
            r"kaleido",
            r"chromium",
            r"\bchrome\b",
            r"DevTools listening",
            r"Fontconfig",
            r"\bchoreographer\b",
            r"\bheadless\b",
            # timeouts
            r"TimeoutError",
            r"\btimed out\b",
            r"\btimeout\b",
            # %timeit
            r"\bper loop\b",
            r"\bloops?,? best of \d",
            # a shell command that is not there ("zsh:1: command not found: pip"), wget's progress dots
            r"\bcommand not found\b",
            r"\b\d+K(?: \.{5,}){2}",
        ]
    ),
    re.I,
)
# Words one of which every _NOISE match holds: most lines hold none and skip the long pattern.
_NOISE_HINTS = (
    "warn",
    "deprecat",
    "|",
    "[",
    "it/s",
    "s/it",
    "eta",
    "install",
    "packages are in",
    "kaleido",
    "chrom",
    "devtools",
    "fontconfig",
    "choreographer",
    "headless",
    "timeout",
    "timed out",
    "per loop",
    "best of",
    "command not found",
    "k .",
)


def noise_anywhere(line: str) -> bool:
    low = line.casefold()
    return any(hint in low for hint in _NOISE_HINTS) and bool(_NOISE.search(line))


_MEANINGLESS = re.compile(r"^[\W_]*$")  # blank, or only separators such as ----- or ====


def plain_output(text: str) -> str:
    """Output as the lines a reader would see last: ANSI escapes removed, and a line redrawn in
    place with carriage returns (a progress display) dropped."""
    text = _ANSI.sub("", text).replace("\r\n", "\n")
    return "\n".join(line for line in text.split("\n") if "\r" not in line.rstrip("\r"))


def clean_output(text: str) -> str:
    """The meaningful lines of captured output, noise removed, one per line.

    Removed: stdout/stderr prefixes (the rest of the line stays), ANSI escapes, lines rewritten
    in place with carriage returns, warnings and deprecation notices (with the source line Python
    prints under them), Python tracebacks (plain and IPython style) and R errors, progress bars,
    pip/conda/R package installation logs, headless-browser and kaleido chatter, timeouts, log
    records, ``%time``/``%timeit`` lines, applications' logs (``[NbConvertApp] WARNING``),
    downloads, version printouts, and lines with nothing but separators.
    """
    if not text:
        return ""
    text = plain_output(text)
    kept: list[str] = []
    skipping = None  # "traceback" | "message" | "block" while inside a multi-line noise block
    for raw in text.split("\n"):
        line = _PREFIX.sub("", raw.rstrip("\r")).rstrip()
        if skipping == "traceback":
            if _TRACEBACK_END.match(line):
                skipping = None
            continue
        if skipping == "message":  # R's one warning, on the line under "Warning message:"
            skipping = "block"
            continue
        if skipping == "block":
            if line and _CONTINUATION.match(line):
                continue
            skipping = None
        if _TRACEBACK_START.match(line):
            skipping = "traceback"
        elif _R_WARNING_BLOCK.match(line):
            skipping = "message"
        elif _R_ERROR.match(line) or _WARNING_WITH_SOURCE.match(line):
            skipping = "block"
        elif (
            _EXCEPTION_LINE.match(line)
            or _MEANINGLESS.match(line)
            or _NOISE_START.match(line)
            or noise_anywhere(line)
            or version_line(line)
        ):
            continue
        else:
            kept.append(line)
    return "\n".join(kept)


# An object's repr: a constructor call (``RandomForestRegressor(random_state=42)``, ``alt.Chart(...)``,
# ``Text(0.5, 1.0, 'Title')``), possibly over many lines (``Pipeline(steps=[...])``). Results that
# print as calls keep their values: scipy's ``TtestResult(statistic=..., pvalue=...)``, a Counter.
_CALL_START = re.compile(r"(?m)^[ \t]*(?:[A-Za-z_]\w*\.)*([A-Z]\w*)\(")
# ``<16512x5 sparse matrix of type '<class 'numpy.float64'>'\n\twith ... format>``: a default repr over lines
_LONG_DEFAULT_REPR = re.compile(r"(?m)^[ \t]*<(?:[A-Za-z_][\w.]*|\d+x\d+)[ >][^\n]*(?:\n[^\n]*){0,3}?>[ \t]*$\n?")
_CALL_INSIDE = re.compile(r"(?<![\w.'\"])(?:[A-Za-z_]\w*\.)*([A-Z]\w*)\(")
_DATA_CALLS = re.compile(r"(?:Result|Interval|Statistic|Summary|Counter|OrderedDict|defaultdict|Decimal|Fraction)$")
_DEFAULT_REPR = re.compile(r"^\[?\s*<[^<>]*(?:<[^<>]*>[^<>]*)*>\s*(?:,\s*<.*>\s*)*\]?$|\bat 0x[0-9a-fA-F]+", re.S)
_EMPTY = re.compile(r"^(?:\[\s*\]|\(\s*\)|\{\s*\}|set\(\)|None|NULL|Empty DataFrame\b.*)$", re.S)
_ARRAY_SUMMARY = re.compile(r"^[\[(]?(?:(?:array|matrix)(?: of shape [\d×]+)?,?\s*)+[\])]?$")
# "From URL: https://…/iris.data", "saved to /tmp/x.csv": where data came from or went, not a result
_LOCATION = re.compile(r"^(?:[^:]{0,40}:\s*)?(?:(?:https?|ftp|file|s3|gs)://\S+|(?:~|[A-Za-z]:)?[\\/][^\s:]+)$")
_VERSION_VALUE = re.compile(r"^['\"]?v?\d+\.\d+\.\d+[\w.+\-]*['\"]?$")  # "6.1.0": a version, never a result
_VIEW_REPR = re.compile(
    r"^(?:dict_keys|dict_values|dict_items|odict_keys|odict_values|odict_items|functools\.partial)\("
)
_PATH_VALUE = re.compile(
    r"^(?:(?:Posix|Windows)?Path\(['\"][^'\"]*['\"]\)|(?=.*[A-Za-z])['\"]?(?:~|\.{0,2}/|[A-Za-z]:\\\\)?[\w.\-]+(?:[/\\\\][\w.\-]+)+['\"]?)$"
)
_FILE_NAME = re.compile(
    r"^[\w.\-/\\\\ ]+\.(?:pkl|pickle|joblib|h5|hdf5|keras|pt|pth|onnx|json|csv|tsv|txt|parquet|feather"
    r"|xlsx?|png|jpe?g|svg|pdf|html|npy|npz|zip|gz|tar|model|bin|rds|rdata)$",
    re.I,
)


def strip_reprs(text: str) -> str:
    """``text`` without the object reprs that stand on lines of their own (an estimator printed by
    ``print(model)`` or shown as a cell's value, ``alt.Chart(...)``, ``Text(0.5, 1.0, 'x')``)."""
    text = _LONG_DEFAULT_REPR.sub("", text)
    if "(" not in text:
        return text
    out, position = [], 0
    for match in _CALL_START.finditer(text):
        if match.start() < position or _DATA_CALLS.search(match.group(1)):
            continue
        end = _closing(text, match.end() - 1)
        if end is None:
            continue
        line_end = text.find("\n", end)
        line_end = len(text) if line_end < 0 else line_end
        if text[end + 1 : line_end].strip():
            continue  # words after the call: "Fit(x) took 3 s" is a sentence
        out.append(text[position : match.start()])
        position = line_end
    out.append(text[position:])
    return "".join(out)


def noise_value(text: str) -> bool:
    """Whether a value (a cell's result, a printed line) says nothing about the analysis: an
    object's default repr, an empty container, a numpy array reduced to its shape, a path or the
    file names ``joblib.dump`` returns."""
    text = text.strip()
    if not text:
        return True
    if _DEFAULT_REPR.search(text) or _EMPTY.match(text) or _ARRAY_SUMMARY.match(text) or _PATH_VALUE.match(text):
        return True
    if _VERSION_VALUE.match(text) or _LOCATION.match(text):
        return True
    if (call := _CALL_START.match(text)) and not _DATA_CALLS.search(call.group(1)) or _VIEW_REPR.match(text):
        return True  # a repr too long to close: sklearn cuts its own with "..."
    if text[0] in "[(" and any(not _DATA_CALLS.search(name) for name in _CALL_INSIDE.findall(text)):
        return True  # a list of estimators or matplotlib objects: [('scaler', StandardScaler()), ...]
    if text[0] in "[(" and text[-1] in "])" and "\n" not in text.strip():
        try:
            items = ast.literal_eval(text)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return False
        items = items if isinstance(items, (list, tuple)) else [items]
        return bool(items) and all(isinstance(item, str) and _FILE_NAME.match(item) for item in items)
    return bool(_FILE_NAME.match(text.strip("'\"")) and " " not in text)


# A numpy vector as parsers give it ("442737, 457566, 105965., …") or as print() writes it ("[1 2 3]"):
# a Python list keeps its brackets and commas, an R vector is a value (R has no other kind)
_NUMPY_VECTOR = re.compile(
    r"^(?:-?[\d.]+(?:[eE][-+]?\d+)?,\s+)+(?:-?[\d.]+(?:[eE][-+]?\d+)?|…)(?:,\s*…(?:\s*\(\d+\))?)?$"
    r"|^\[\[?\s*-?[\d.]+(?:[eE][-+]?\d+)?(?:\s+-?[\d.]+(?:[eE][-+]?\d+)?)+\s*\]?\]?$"
)


def numpy_vector(text: str, language: str) -> bool:
    """Whether a Python step's value is a numpy array's numbers: the arrays a report leaves out."""
    return language == "python" and bool(_NUMPY_VECTOR.match(text.strip()))


def noise_table(table: Table) -> bool:
    """Whether a table is not a DataFrame: a numpy array printed as rows of brackets, or what
    R's ``system.time`` prints."""
    cells = [cell for row in table[:4] for cell in row]
    if any(cell.startswith(("[", "array(")) or cell.endswith("]") for cell in cells if cell):
        return True
    return [cell.casefold() for cell in table[0] if cell][:3] == ["user", "system", "elapsed"]
