"""The 分析方法 (methods) section's raw material: a short digest of the notebook's prose, the
languages the code was written in and the libraries it imported.

A notebook's Markdown can run to tens of kilobytes; pasted whole it buries the report. The
methods section keeps each section's heading and its first sentence or two (a list: its first
items), bounded in total, and names the main libraries, which say more about the method than
the prose often does. The prose is Markdown without its HTML: a badge's ``<a><img></a>`` is
markup, not a method, and would show as text.
"""

from __future__ import annotations

import ast
import html
import re
import sys
from collections.abc import Iterable

from nini.report import pycode
from nini.report.headings import FENCE
from nini.report.model import Step

MAX_METHOD_CHARS = 1500
SENTENCES_PER_SECTION = 2
LIST_ITEMS_PER_SECTION = 4
MAX_LIBRARIES = 6

_HEADING = re.compile(r"^ {0,3}#{1,6}(?:\s|$)")
_LIST_ITEM = re.compile(r"^ {0,3}(?:[-+*]|\d+[.)])\s")
# tables, images and linked images (badges), HTML, display maths, quotes
_SKIPPED_BLOCK = re.compile(r"^ {0,3}(?:\||!\[|\[!\[|<|\$\$|>)")
_SENTENCE_END = re.compile(r"(?<=[。！？])|(?<=[.!?])(?=\s)")
_HTML_DROPPED = re.compile(r"<(script|style)\b[^>]*>.*?</\1\s*>|<!--.*?(?:-->|$)", re.S | re.I)
_HTML_TAG = re.compile(r"</?[A-Za-z][\w:-]*(?:\s[^<>]*)?/?>")
_CODE_SPAN = re.compile(r"(`+[^`]*`+)")
_TOC = re.compile(r"^(?:\s*(?:[-+*]|\d+[.)])\s+\[[^\]]*\]\(#[^)]*\)\s*(?:\n|$))+$")  # a list of links within the page
LANGUAGES = {"python": "Python", "r": "R"}


def condense_notes(notes: Iterable[str], limit: int = MAX_METHOD_CHARS) -> list[str]:
    """Each section of the notes as its heading and its first block shortened, at most ``limit``
    characters in all (the sections past it are left out, and a "…" says so); a section with no
    prose of its own (only a heading, or a table of contents) is left out."""
    sections: list[str] = []
    used = 0
    for note in notes:
        for heading, block in _sections(strip_html(note)):
            shown = "" if _TOC.match(block) else _shorten(block)
            if not shown:  # a heading alone (chapter after chapter of them) or a table of contents says no method
                continue
            text = "\n".join(part for part in (heading, shown) if part)
            if used + len(text) > limit:
                sections.append("…")
                return sections
            sections.append(text)
            used += len(text) + 2
    return sections


def strip_html(note: str) -> str:
    """``note`` without its HTML (tags go, their text stays; scripts, styles and comments go
    whole), entities read as the characters they stand for; code fences and spans untouched."""
    out: list[str] = []
    chunk: list[str] = []
    fence = ""

    def flush() -> None:
        text = _HTML_DROPPED.sub("", "\n".join(chunk))
        parts = _CODE_SPAN.split(text)
        out.append("".join(part if i % 2 else html.unescape(_HTML_TAG.sub("", part)) for i, part in enumerate(parts)))
        chunk.clear()

    for line in note.replace("\r\n", "\n").split("\n"):
        opening = FENCE.match(line)
        if fence or opening:
            if not fence:
                flush()
                fence = opening.group(1) if opening else ""
            elif line.strip().startswith(fence):
                fence = ""
            out.append(line)
        else:
            chunk.append(line)
    flush()
    return "\n".join(part for part in out)


def _sections(note: str) -> list[tuple[str, str]]:
    """(heading line or "", the first prose block under it) for each section of one note; code
    fences, tables, images and HTML are never a section's first block."""
    out: list[tuple[str, str]] = []
    block: list[str] = []
    heading, fence, found = "", "", False
    for line in note.replace("\r\n", "\n").split("\n"):
        if fence:
            fence = "" if line.strip().startswith(fence) else fence
            continue
        if opening := FENCE.match(line):
            fence = opening.group(1)
            found = found or bool(block)
            continue
        if _HEADING.match(line):
            if heading or block:
                out.append((heading, "\n".join(block)))
            heading, block, found = line.strip(), [], False
            continue
        if found:
            continue
        if not line.strip():
            found = bool(block)
        elif not (_SKIPPED_BLOCK.match(line) and not block):
            block.append(line.rstrip())
    if heading or block:
        out.append((heading, "\n".join(block)))
    return out


def _shorten(block: str) -> str:
    """A list's first items, or a paragraph's first sentences, joined back into one paragraph."""
    lines = [line for line in block.split("\n") if line.strip()]
    if not lines:
        return ""
    if _LIST_ITEM.match(lines[0]):
        items = [line for line in lines if _LIST_ITEM.match(line)]
        return "\n".join(items[:LIST_ITEMS_PER_SECTION] + (["- …"] if len(items) > LIST_ITEMS_PER_SECTION else []))
    text = " ".join(line.strip() for line in lines)
    sentences = [part.strip() for part in _SENTENCE_END.split(text) if part.strip()]
    shown = " ".join(sentences[:SENTENCES_PER_SECTION])
    return shown + (" …" if len(sentences) > SENTENCES_PER_SECTION else "")


_R_LIBRARY = re.compile(r"\b(?:library|require|requireNamespace)\(\s*[\"']?([A-Za-z][\w.]*)")
_R_NAMESPACE = re.compile(r"\b([A-Za-z][\w.]*)::")
_SKIPPED_MODULES = frozenset({"nini", "__future__", "IPython", "ipywidgets", "tqdm", "warnings"})


def libraries(steps: Iterable[Step], limit: int = MAX_LIBRARIES) -> dict[str, list[str]]:
    """The third-party libraries each language's code imported, most used first (ties: first seen).

    Standard-library modules say nothing of the method and are left out; so is plumbing.
    """
    counts: dict[str, dict[str, int]] = {}
    for step in steps:
        language = step_language(step)
        found = _imports(step.code) if language == "python" else set(_R_LIBRARY.findall(step.code))
        if language == "r":
            found |= set(_R_NAMESPACE.findall(step.code)) - {"base", "stats", "utils"}
        per_language = counts.setdefault(language, {})
        for name in sorted(found, key=lambda name: step.code.find(name)):
            per_language[name] = per_language.get(name, 0) + 1
    return {language: sorted(names, key=lambda name: -names[name])[:limit] for language, names in counts.items()}


def step_language(step: Step) -> str:
    """The language a step's code is in: a Python cell that is all R (``%%R``, rpy2's cell magic)
    is R, so a notebook with R-magic cells reads as "Python and R"."""
    first = next((line.strip() for line in step.code.splitlines() if line.strip()), "")
    return "r" if step.language == "python" and re.match(r"%%R(?:\s|$)", first) else step.language


def languages_text(steps: Iterable[Step], t: dict[str, str]) -> str:
    """The languages used, each with the main libraries its code imported: "Python（pandas、scipy）
    和 R（MASS）", in the order the code first used them."""
    steps = list(steps)
    used = libraries(steps)
    names = [
        t["libs"].format(lang=name, names=t["sep"].join(used[language])) if used.get(language) else name
        for language, name in {
            language: LANGUAGES.get(language, language.capitalize()) for language in map(step_language, steps)
        }.items()
    ]
    return t["sep"].join(names[:-1]) + t["and"] + names[-1] if len(names) > 1 else names[0] if names else ""


def _imports(code: str) -> set[str]:
    tree = pycode.parse(code)
    if tree is None:  # IPython magics and the like: the import lines alone
        lines = [line for line in code.splitlines() if re.match(r"\s*(?:import|from)\s", line)]
        tree = pycode.parse("\n".join(line.strip() for line in lines))
        if tree is None:
            return set()
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return {name for name in names if name not in sys.stdlib_module_names and name not in _SKIPPED_MODULES}
