"""Runs in the limited child of ``parsing``: which encoding and separator a text table has, and reading it.

Real CSV files come in the encoding of the machine that wrote them (GBK from a Chinese Excel,
cp1252 from a Western one, UTF-16 from some exports) and with the separator of its locale (``;``
where the comma is the decimal mark). Both are guessed from a bounded sample (the first
``SAMPLE_BYTES``: a 2 GB file is not read to guess), unless the caller names them:

- encoding: a byte-order mark says it; else UTF-8 when the sample decodes as UTF-8 (the fast path:
  one decode, no detector); else charset-normalizer's candidates, of which the ones as plausible as
  its best are ranked by ``PREFERRED`` (a short sample of GBK reads as Korean as well as Chinese,
  of Latin-1 as any of a dozen code pages: nini's users write Chinese and Western text). A
  candidate must decode the whole sample. None fits (binary data): INVALID_ARGUMENT saying how to
  name the encoding.
- separator: each of ``,`` ``;`` tab ``|`` splits the sample's first records with the ``csv``
  module (so a quoted ``"Smith, J"`` is one field); the one whose records most consistently have
  the same number (two or more) of fields wins, ties going to the more usual separator (tab
  first for a ``.tsv``).
- decimal mark: with a separator other than ``,``, numbers written ``1,5`` (and none ``1.5``)
  make the comma the decimal mark.
"""

from __future__ import annotations

import codecs
import csv
import io
import re
from collections import Counter
from typing import Any, BinaryIO

SAMPLE_BYTES = 1 << 20  # what is read to guess the encoding: the first MiB
SNIFF_CHARS = 64 * 1024  # of the decoded sample, what the separator is guessed from
SNIFF_RECORDS = 200
SEPARATORS = (",", ";", "\t", "|")
# Among charset-normalizer's equally plausible candidates, the first of these wins: Chinese
# first, then Western European, then the other East Asian encodings.
PREFERRED = ("gb18030", "cp1252", "latin_1", "big5", "cp932", "shift_jis", "cp949", "euc_kr", "utf_16", "utf_32")
CHAOS_TOLERANCE = 0.01  # candidates this close to the best one's "chaos" count as equally plausible
# UTF-32's marks first: UTF-32 LE's starts with UTF-16 LE's
BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
COMMA_DECIMAL = re.compile(r"[+-]?\d+,\d+")
POINT_DECIMAL = re.compile(r"[+-]?\d+\.\d+")
WORDS = {
    "zh": {
        "encoding": "无法识别 {name} 的编码（不是 UTF-8，前 1 MB 也不符合其他任何编码）；请指明编码："
        "命令行用 --encoding，load_dataset 或上传用 encoding 参数，例如 gb18030 或 latin-1",
        "decode": "{name} 不能按 {encoding}（{how}）读取：{error}；请指明编码：命令行用 --encoding，"
        "load_dataset 或上传用 encoding 参数，例如 gb18030 或 latin-1",
        "detected": "从前 1 MB 识别",
        "given": "指定",
    },
    "en": {
        "encoding": "the encoding of {name} could not be detected (not UTF-8, and no other encoding fits its "
        "first 1 MB); name it: --encoding on the command line, encoding= for load_dataset or an "
        "upload, e.g. gb18030 or latin-1",
        "decode": "{name} cannot be read as {encoding} ({how}): {error}; name its encoding: --encoding on the "
        "command line, encoding= for load_dataset or an upload, e.g. gb18030 or latin-1",
        "detected": "detected from its first 1 MB",
        "given": "as given",
    },
}


class UnknownEncoding(Exception):
    """No encoding fits the file (or the one given does not): its message says how to name one."""


def read_table(
    source: BinaryIO,
    name: str,
    suffix: str,
    *,
    encoding: str | None = None,
    sep: str | None = None,
    language: str = "en",
) -> tuple[Any, dict[str, Any]]:
    """The DataFrame of the text table ``source`` and how it was read: ``encoding``, ``sep``,
    ``decimal`` and whether the first two were ``*_detected``. ``encoding`` and ``sep`` given are
    used as they are (the caller checked them)."""
    import pandas as pd

    words = WORDS.get(language, WORDS["en"])
    start = source.tell()
    sample = source.read(SAMPLE_BYTES)
    complete = len(sample) < SAMPLE_BYTES  # the whole file: its last bytes end a character and a record
    source.seek(start)
    used = encoding or detect_encoding(sample, complete)
    if used is None:
        raise UnknownEncoding(words["encoding"].format(name=f"'{name}'"))
    text = _decoded(sample, used, complete)
    if text is None:  # only a given encoding can fail here: a detected one decoded the sample
        raise UnknownEncoding(
            words["decode"].format(
                name=f"'{name}'", encoding=used, how=words["given"], error="the first 1 MB does not decode"
            )
        )
    records = _records(text, complete)
    used_sep = sep or sniff_separator(records, prefer_tab=suffix == ".tsv")
    decimal = decimal_mark(records, used_sep)
    try:
        frame = pd.read_csv(source, encoding=used, sep=used_sep, decimal=decimal)
    except UnicodeDecodeError as exc:  # past the sample: the file changes encoding, or a given one is wrong
        how = words["given"] if encoding else words["detected"]
        raise UnknownEncoding(
            words["decode"].format(name=f"'{name}'", encoding=used, how=how, error=exc.reason)
        ) from None
    return frame, {
        "encoding": used,
        "encoding_detected": encoding is None,
        "sep": used_sep,
        "sep_detected": sep is None,
        "decimal": decimal,
    }


def detect_encoding(sample: bytes, complete: bool = True) -> str | None:
    """The encoding of ``sample`` (the first bytes of a file; ``complete`` when it is all of it), by
    its byte-order mark, else UTF-8 if it decodes so, else the likeliest of charset-normalizer's
    candidates that decodes it; None when none does (binary data). A codec name Python knows."""
    for bom, name in BOMS:
        if sample.startswith(bom):
            return name
    if _decoded(sample, "utf-8", complete) is not None:
        return "utf-8"
    from charset_normalizer import from_bytes

    matches = list(from_bytes(sample))
    if not matches:
        return None
    best = min(match.chaos for match in matches)
    plausible = [m for m in matches if m.chaos <= best + CHAOS_TOLERANCE]
    tied = {encoding for match in plausible for encoding in match.could_be_from_charset}
    ranked = [e for e in PREFERRED if e in tied] + [m.encoding for m in matches]
    return next((codecs.lookup(e).name for e in ranked if _decoded(sample, e, complete) is not None), None)


def sniff_separator(records: list[str], *, prefer_tab: bool = False) -> str:
    """Of ``SEPARATORS``, the one that splits ``records`` (a table's first lines) most consistently
    into the same number (at least two) of fields; ``,`` (tab with ``prefer_tab``) when none
    splits them (one column)."""
    order = ("\t", ",", ";", "|") if prefer_tab else SEPARATORS
    best, best_score = order[0], (0.0, 0)
    for separator in order:
        counts = [len(row) for row in csv.reader(records, delimiter=separator) if row]
        if not counts:
            continue
        width, rows = Counter(counts).most_common(1)[0]
        score = (rows / len(counts), width)
        if width >= 2 and score > best_score:  # strictly better: a tie keeps the more usual one
            best, best_score = separator, score
    return best


def text_separator(text: str, complete: bool, suffix: str = "") -> str:
    """The separator of the decoded text table ``text`` (a file's start; ``complete`` when all of
    it), guessed as ``read_table`` guesses it: the sidebar's attachments say it too."""
    return sniff_separator(_records(text, complete), prefer_tab=suffix == ".tsv")


def decimal_mark(records: list[str], separator: str) -> str:
    """``,`` when fields separated by ``separator`` (not a comma) write numbers as ``1,5`` and
    none as ``1.5``; else ``.``."""
    if separator == ",":
        return "."
    fields = [field.strip() for row in csv.reader(records[1:], delimiter=separator) for field in row]
    commas = sum(1 for field in fields if COMMA_DECIMAL.fullmatch(field))
    points = sum(1 for field in fields if POINT_DECIMAL.fullmatch(field))
    return "," if commas and not points else "."


def _decoded(sample: bytes, encoding: str, complete: bool) -> str | None:
    """``sample`` decoded, or None if it is not in ``encoding``; an incomplete sample may end in
    the middle of a character."""
    try:
        return codecs.getincrementaldecoder(encoding)().decode(sample, final=complete)
    except (UnicodeDecodeError, LookupError):
        return None


def _records(text: str, complete: bool) -> list[str]:
    """The first lines of ``text`` to guess from (the last one dropped when the sample cut it)."""
    lines = io.StringIO(text[:SNIFF_CHARS], newline="").readlines()
    if lines and (not complete or len(text) > SNIFF_CHARS):
        lines = lines[:-1] or lines
    return lines[:SNIFF_RECORDS]
