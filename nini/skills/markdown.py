"""Reading SKILL.md files: frontmatter, fallbacks, and the strict checks of ``nini skills validate``."""

from __future__ import annotations

import math
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from nini.skills.rules import (
    ALLOWED_FRONTMATTER_KEYS,
    description_problems,
    name_problems,
    normalise_category,
)

SKILL_FILENAMES = ("SKILL.md", "skill.md")
# A definition is text an agent reads into its context; anything this large is not one.
MAX_SKILL_FILE_BYTES = 1 << 20
# Frontmatter is a handful of fields; far deeper or larger structures are garbage or an attack
# (libyaml's C composer recurses without a limit and crashes the process on deep nesting, and YAML
# aliases can expand a small file into millions of values), so they are refused before use.
MAX_FRONTMATTER_DEPTH = 50
MAX_FRONTMATTER_VALUES = 10_000

_FRONTMATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)^(?:---|\.\.\.)[ \t]*\r?$\n?", re.S | re.M)
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
# A setext heading's underline (or a ``---`` rule): one run of ``=`` or ``-`` alone on its line.
_UNDERLINE = re.compile(r"[ \t]*(?:=+|-+)[ \t]*")


class SkillFileError(Exception):
    """A SKILL.md that cannot be used at all; the message says why and what to fix."""


@dataclass(frozen=True)
class ParsedSkill:
    """What a SKILL.md declares, after nini's fallbacks and normalisation."""

    name: str
    description: str
    category: str
    metadata: dict[str, Any]
    warnings: tuple[str, ...] = field(default=())


def read_skill_text(path: Path, size: int | None = None) -> str:
    """The file's text, refusing what cannot be a skill definition (too big, binary, not UTF-8)."""
    if size is None:
        size = path.stat().st_size
    _check_size(size)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SkillFileError(f"cannot be read: {exc.strerror or exc}") from exc
    return decode_skill_bytes(data)


def read_skill_bytes(path: Path) -> bytes:
    """The bytes of a SKILL.md, refusing a file over the size limit before reading any of it.

    The size comes from a ``stat`` first so a huge (or sparse) file is never pulled into memory
    just to be rejected. Anything but a regular file (a FIFO would block the read) is refused too.
    """
    info = path.stat()
    if not stat.S_ISREG(info.st_mode):
        raise SkillFileError("not a regular file")
    _check_size(info.st_size)
    return path.read_bytes()


def _check_size(size: int) -> None:
    if size > MAX_SKILL_FILE_BYTES:
        raise SkillFileError(
            f"file is {size / 1_048_576:.1f} MiB; a skill definition must be under "
            f"{MAX_SKILL_FILE_BYTES // 1_048_576} MiB"
        )


def decode_skill_bytes(data: bytes) -> str:
    """The text of a SKILL.md already read into memory, with the checks of ``read_skill_text``.

    Read-before-execute hashes the very bytes it decodes: reading the file a second time could
    pair one version's hash with another version's body if the file is saved in between.
    """
    _check_size(len(data))
    if b"\x00" in data:
        raise SkillFileError("file is binary (contains NUL bytes), not Markdown")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SkillFileError(f"not valid UTF-8 (byte {exc.start}); save the file as UTF-8") from exc


def split_frontmatter(text: str) -> tuple[dict[str, Any] | None, str]:
    """``(frontmatter or None when absent, body)``; bad YAML raises ``SkillFileError``."""
    if not text.startswith("---"):
        return None, text
    match = _FRONTMATTER.match(text)
    if not match:
        raise SkillFileError("frontmatter opened with --- is never closed by a --- line")
    source = match.group(1)
    try:
        _check_nesting(source)
        data = yaml.load(source, Loader=_Loader)
    except yaml.YAMLError as exc:
        raise SkillFileError(f"frontmatter is not valid YAML: {_one_line(exc)}") from exc
    except RecursionError as exc:
        raise SkillFileError(f"frontmatter nests deeper than {MAX_FRONTMATTER_DEPTH} levels") from exc
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise SkillFileError(f"frontmatter must be a YAML mapping, found {type(data).__name__}")
    return {str(k): v for k, v in data.items()}, text[match.end() :]


def first_body_line(body: str) -> str:
    """The first line that is neither blank nor a heading: the description fallback.

    Headings are ATX (``# Title``) and setext: a paragraph underlined by ``===`` or ``---``,
    which Markdown renders as a heading however plain its lines look. Underlines and ``---``
    rules are skipped too; a description must be prose, not a title or a rule.
    """
    lines = body.splitlines()
    index = 0
    while index < len(lines):
        stripped = lines[index].strip()
        if not stripped or stripped.startswith("#") or _UNDERLINE.fullmatch(stripped):
            index += 1
            continue
        end = index  # the paragraph ends at a blank line, an ATX heading or an underline
        while end + 1 < len(lines):
            following = lines[end + 1].strip()
            if not following or following.startswith("#") or _UNDERLINE.fullmatch(following):
                break
            end += 1
        if end + 1 < len(lines) and _UNDERLINE.fullmatch(lines[end + 1].strip()):
            index = end + 2  # the whole paragraph is a setext heading
            continue
        return stripped
    return ""


def parse_skill_text(text: str, folder_name: str) -> ParsedSkill:
    """Apply the loading rules: defaults, normalisation, and rule breaks as warnings."""
    frontmatter, body = split_frontmatter(text)
    warnings: list[str] = [] if frontmatter is not None else [NO_FRONTMATTER]
    frontmatter = frontmatter or {}

    name = frontmatter.get("name")
    if name is None or (isinstance(name, str) and not name.strip()):
        name = folder_name
    elif isinstance(name, (int, float)) and not isinstance(name, bool):
        warnings.append(f"name {name!r} is a number; read as text")
        name = str(name)
    elif not isinstance(name, str):
        raise SkillFileError(f"name must be text, found {type(name).__name__}")
    name = name.strip()

    description = frontmatter.get("description")
    if description is not None and not isinstance(description, str):
        raise SkillFileError(f"description must be text, found {type(description).__name__}")
    if description is None or not description.strip():
        description = first_body_line(body)
    if not description:
        raise SkillFileError("no description: add 'description:' to the frontmatter or a first paragraph to the body")

    meta_value = frontmatter.get("metadata")
    metadata: dict[str, Any] = dict(meta_value) if isinstance(meta_value, dict) else {}
    if meta_value is not None and not isinstance(meta_value, dict):
        warnings.append("metadata must be a mapping; its value is kept as metadata.value")
        metadata["value"] = meta_value
    declared_category = frontmatter.get("category")
    if declared_category is None or (isinstance(declared_category, str) and not declared_category.strip()):
        # an empty "category:" line (often left by a template) declares nothing; metadata may
        declared_category = metadata.get("category")
    category, unknown = normalise_category(declared_category)
    if unknown is not None:
        metadata["raw_category"] = unknown
        warnings.append(f"unknown category {unknown!r}; listed as 'other'")
    for key, value in frontmatter.items():
        if key not in ("name", "description", "category", "metadata"):
            metadata[key] = value

    warnings += name_problems(name) + description_problems(description)
    if name != folder_name:
        warnings.append(f"name {name!r} differs from its folder {folder_name!r}")
    return ParsedSkill(name, description, category, _json_safe(metadata), tuple(warnings))


NO_FRONTMATTER = (
    "no YAML frontmatter: the name is the folder's and the description the first paragraph; "
    "add a --- block with name and description"
)


def validate_skill_file(path: Path) -> tuple[list[str], list[str]]:
    """Strict check of one SKILL.md (or a folder holding one): ``(errors, warnings)``."""
    path = Path(path)
    try:  # is_dir/is_file raise too (permission denied, name too long): a problem, not a crash
        if path.is_dir():
            found = [path / n for n in SKILL_FILENAMES if (path / n).is_file()]
            if not found:
                return [f"no SKILL.md in {path}"], []
            path = found[0]
        text = read_skill_text(path)
        frontmatter, _body = split_frontmatter(text)
    except FileNotFoundError:
        return [f"{path} does not exist"], []
    except SkillFileError as exc:
        return [str(exc)], []
    except (OSError, ValueError) as exc:  # ValueError: a path with a NUL byte cannot be stat'ed
        return [f"{path} cannot be checked: {exc}"], []
    if frontmatter is None:  # loads as it does (name from the folder, description from the body), with a warning
        first_line = first_body_line(_body)
        problems = name_problems(path.parent.name) + (
            [] if first_line else ["no description: no frontmatter and no first paragraph"]
        )
        return problems, [NO_FRONTMATTER]

    errors: list[str] = []
    warnings: list[str] = []
    unexpected = sorted(frontmatter.keys() - ALLOWED_FRONTMATTER_KEYS)
    if unexpected:
        errors.append(
            f"unexpected frontmatter key(s) {', '.join(unexpected)}; allowed: "
            f"{', '.join(sorted(ALLOWED_FRONTMATTER_KEYS))} (put anything else under metadata)"
        )
    name = frontmatter.get("name")
    if not isinstance(name, str) or not name.strip():
        errors.append("missing 'name' in frontmatter")
    else:
        errors += name_problems(name)
        if name != path.parent.name:
            warnings.append(f"name {name!r} differs from its folder {path.parent.name!r}")
    description = frontmatter.get("description")
    if not isinstance(description, str) or not description.strip():
        errors.append("missing 'description' in frontmatter")
    else:
        errors += description_problems(description)
    if "category" in frontmatter:
        _category, unknown = normalise_category(frontmatter["category"])
        if unknown is not None:
            warnings.append(f"unknown category {unknown!r}; it will be listed as 'other'")
    return errors, warnings


def _check_nesting(source: str) -> None:
    """Refuse frontmatter nested deeper than ``MAX_FRONTMATTER_DEPTH`` before it is composed.

    libyaml's composer recurses once per level in C, so a 100 KB line of ``[`` kills the process
    (SIGSEGV) instead of raising. The event stream is flat, so it is walked first; only when the
    text holds enough structural characters to nest that deep, which keeps the common case free.
    """
    if sum(source.count(c) for c in "[{-?:") <= MAX_FRONTMATTER_DEPTH:
        return
    depth = 0
    try:
        for event in yaml.parse(source, Loader=_Loader):
            if isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
                depth += 1
                if depth > MAX_FRONTMATTER_DEPTH:
                    raise SkillFileError(f"frontmatter nests deeper than {MAX_FRONTMATTER_DEPTH} levels")
            elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
                depth -= 1
    except yaml.YAMLError as exc:  # libyaml >= 0.2.6 stops at its own limit while scanning ahead
        if "nesting depth" in str(exc):
            raise SkillFileError(f"frontmatter nests deeper than {MAX_FRONTMATTER_DEPTH} levels") from exc
        raise


def _json_safe(value: dict[str, Any]) -> dict[str, Any]:
    """A JSON-ready copy of frontmatter metadata; records cross process boundaries as JSON.

    YAML gives dates, sets, bytes, non-text mapping keys and non-finite floats: these become text
    (``json.dumps(default=str)`` handles values but raises on a date *key*). Aliases can make a
    structure that contains itself or expands to millions of values; those are refused.
    """
    budget = [MAX_FRONTMATTER_VALUES]
    open_containers: set[int] = set()

    def convert(item: Any, depth: int) -> Any:
        budget[0] -= 1
        if budget[0] < 0:
            raise SkillFileError(f"frontmatter expands to more than {MAX_FRONTMATTER_VALUES} values (YAML aliases?)")
        if item is None or isinstance(item, (bool, int, str)):
            return item
        if isinstance(item, float):
            return item if math.isfinite(item) else str(item)
        if not isinstance(item, (dict, list, tuple)):
            return str(item)
        if id(item) in open_containers:
            raise SkillFileError("frontmatter contains itself (a YAML alias inside its own anchor)")
        if depth >= MAX_FRONTMATTER_DEPTH:
            raise SkillFileError(f"frontmatter nests deeper than {MAX_FRONTMATTER_DEPTH} levels")
        open_containers.add(id(item))
        try:
            if isinstance(item, dict):
                return {k if isinstance(k, str) else str(k): convert(v, depth + 1) for k, v in item.items()}
            return [convert(v, depth + 1) for v in item]
        finally:
            open_containers.discard(id(item))

    return convert(value, 0)


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())
