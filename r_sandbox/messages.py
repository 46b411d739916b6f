"""What the R policy tells people, in the language of nini's ``ui.language`` (``zh`` default, ``en``).

The spec gives two forms word for word: ``不允许调用函数: system (第 3 行)`` and
``不允许使用 R 包: parallel (第 1 行)``; the newer rules say why in the same style. The static
check, the run-time guard and the worker's own refusals all word their messages here.
"""

from __future__ import annotations

LANGUAGES = ("zh", "en")

_TEXT: dict[str, dict[str, str]] = {
    "zh": {
        "function": "不允许调用函数: {name}",
        "package": "不允许使用 R 包: {name}",
        "internal-access": "不允许用 ::: 取 R 包的内部对象: {name}",
        "computed-name": "不允许用计算出的名字取函数: {name}",
        "dynamic-package": "不允许用计算出的名字加载 R 包: {name}",
        "protected-environment": "不允许写入受保护的环境: {name}",
        "program-argument": "不允许让函数运行外部程序或管道: {name}",
        "override": "不允许替换 R 的内置函数或方法: {name}",
        "deserialize": "不允许还原含有代码或环境的对象: {name}",
        "foreign-environment": "不允许让代码在 R 自身或 R 包的环境中运行: {name}",
        "code-text": "不允许把文本当作代码运行: {name}",
        "not-installed": "R 包 {name} 没有安装：用 apt-get install {debian} 安装，或在 R 中运行 "
        'install.packages("{name}")',
        "syntax": "R 代码有语法错误: {name}",
        "output-cut": "\n[nini：此输出超过 {name}（execution.output_max_mb），另有 {more} 个字符未保留]\n",
        "line": " (第 {line} 行)",
    },
    "en": {
        "function": "function not allowed: {name}",
        "package": "R package not allowed: {name}",
        "internal-access": "internal object of an R package (:::) not allowed: {name}",
        "computed-name": "function looked up by a computed name not allowed: {name}",
        "dynamic-package": "R package loaded by a computed name not allowed: {name}",
        "protected-environment": "assignment into a protected environment not allowed: {name}",
        "program-argument": "function made to run a program or pipe not allowed: {name}",
        "override": "replacing R's built-in functions or methods not allowed: {name}",
        "deserialize": "restoring an object that holds code or environments not allowed: {name}",
        "foreign-environment": "code made to run in an environment of R or of a package not allowed: {name}",
        "code-text": "text run as code not allowed: {name}",
        "not-installed": "R package {name} is not installed: apt-get install {debian}, or "
        'install.packages("{name}") in R',
        "syntax": "R syntax error: {name}",
        "output-cut": "\n[nini: this output passed {name} (execution.output_max_mb): {more} more "
        "characters were not kept]\n",
        "line": " (line {line})",
    },
}
# rule of a Violation -> the message kind above
KIND_OF_RULE = {
    "package-not-allowed": "package",
    "internal-access": "internal-access",
    "computed-name": "computed-name",
    "dynamic-package": "dynamic-package",
    "protected-environment": "protected-environment",
    "program-argument": "program-argument",
    "base-override": "override",
}


def language_of(value: str | None) -> str:
    return value if value in LANGUAGES else "zh"


def message(kind: str, name: str, line: int | None = None, language: str | None = None, **extra: str) -> str:
    """One message: ``kind`` from the table (or a rule name), its ``name``, and the line if known."""
    table = _TEXT[language_of(language)]
    kind = KIND_OF_RULE.get(kind, "function" if kind.startswith("denied-") else kind)
    text = table[kind].format(name=name, **extra)
    return text + (table["line"].format(line=line) if line is not None else "")


def at_line(text: str, line: int | None, language: str | None = None) -> str:
    """``text`` with the line appended, as the static check words it (for run-time refusals)."""
    return text + (_TEXT[language_of(language)]["line"].format(line=line) if line is not None else "")
