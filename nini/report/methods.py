"""The 分析方法 (methods) section's raw material: a short digest of the notebook's prose and the
libraries the code imported.

A notebook's Markdown can run to tens of kilobytes; pasted whole it buries the report. The
methods section keeps each section's heading and its first sentence or two (a list: its first
items), bounded in total, and names the main libraries, which say more about the method than
the prose often does.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterable

from nini.report.model import Step

MAX_METHOD_CHARS = 1500
SENTENCES_PER_SECTION = 2
LIST_ITEMS_PER_SECTION = 4
MAX_LIBRARIES = 6

_HEADING = re.compile(r"^ {0,3}#{1,6}(?:\s|$)")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_LIST_ITEM = re.compile(r"^ {0,3}(?:[-+*]|\d+[.)])\s")
_SKIPPED_BLOCK = re.compile(r"^ {0,3}(?:\||!\[|<|\$\$|>)")  # tables, images, HTML, display maths, quotes
_SENTENCE_END = re.compile(r"(?<=[。！？])|(?<=[.!?])(?=\s)")


def condense_notes(notes: Iterable[str], limit: int = MAX_METHOD_CHARS) -> list[str]:
    """Each section of the notes as its heading and its first block shortened, at most ``limit``
    characters in all (the sections past it are left out, and a "…" says so)."""
    sections: list[str] = []
    used = 0
    for note in notes:
        for heading, block in _sections(note):
            text = "\n".join(part for part in (heading, _shorten(block)) if part)
            if not text:
                continue
            if used + len(text) > limit:
                sections.append("…")
                return sections
            sections.append(text)
            used += len(text) + 2
    return sections


def _sections(note: str) -> list[tuple[str, str]]:
    """(heading line or "", the first prose block under it) for each section of one note; code
    fences, tables, images and HTML are never a section's first block."""
    out: list[tuple[str, str]] = []
    heading, block, fence, found = "", [], "", False
    for line in note.replace("\r\n", "\n").split("\n"):
        if fence:
            fence = "" if line.strip().startswith(fence) else fence
            continue
        if opening := _FENCE.match(line):
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
        found = _imports(step.code) if step.language == "python" else set(_R_LIBRARY.findall(step.code))
        if step.language == "r":
            found |= set(_R_NAMESPACE.findall(step.code)) - {"base", "stats", "utils"}
        per_language = counts.setdefault(step.language, {})
        for name in sorted(found, key=lambda name: step.code.find(name)):
            per_language[name] = per_language.get(name, 0) + 1
    return {language: sorted(names, key=lambda name: -names[name])[:limit] for language, names in counts.items()}


def _imports(code: str) -> set[str]:
    try:
        tree = ast.parse(code)
    except SyntaxError:  # IPython magics and the like: the import lines alone
        lines = [line for line in code.splitlines() if re.match(r"\s*(?:import|from)\s", line)]
        try:
            tree = ast.parse("\n".join(line.strip() for line in lines))
        except SyntaxError:
            return set()
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return {name for name in names if name not in sys.stdlib_module_names and name not in _SKIPPED_MODULES}
