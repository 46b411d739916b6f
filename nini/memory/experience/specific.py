"""Whether a text is about particular data (this team's columns, files, numbers, names) rather than a
textbook, in English and in Chinese alike: stage 1 drops general knowledge only when it finds none.

Chinese has no capitals or spaces to lean on, so its cues are its own: a column word after a name
(``revenue 列``, ``地区字段``, ``销售额这一列``), a number with a Chinese unit (``三成``, ``两倍``,
``百分之五``; digits such as ``超过 3 倍`` and ``5%`` count in any language), a quoted term
(「」 『』 “” ‘’ 《》), and a Latin name written into Chinese text (``汇总 revenue``, ``Adelie 企鹅``;
an abbreviation in capitals such as PCA is a technique's, not counted), as a capitalised word in
the middle of an English sentence is a proper name. Quantifiers and generic kinds (``每一列``,
``这个字段``, ``数值列``, ``each column``, ``the numeric column``) name no column. A Chinese proper
name written without quotes (华东区) is not recognised: nothing cheap tells it from a common word.
The check leans to "specific": a textbook rule let through is one the user discards from the
pending list, while one of theirs dropped here is lost without their seeing it.
"""

from __future__ import annotations

import re

CJK = "\u3400-\u9fff"
# an identifier (snake_case), a digit anywhere (3, 2024, ５％), a file name, a quoted term
_MARKS = re.compile(
    r"\b\w+_\w+\b|\d|\.\w{2,5}\b|`[^`]+`|(?<!\w)\"[^\"\n]+\"(?!\w)|(?<!\w)'[^'\n]+'(?!\w)|"
    r"“[^”]+”|‘[^’]+’|「[^」]+」|『[^』]+』|《[^》]+》"
)
_ZH_NUMBER = re.compile(
    r"[零一二两三四五六七八九十百千万]+\s*(?:倍|成(?![本员立功为果熟型分交品绩])|个?百分点)|"
    r"百分之[零一二两三四五六七八九十百点]+"
)
_EN_COLUMN_WORDS = "column|field|table|dataset|variable|sheet"
_EN_NAME_BEFORE = re.compile(rf"\b(\w+)\s+(?:{_EN_COLUMN_WORDS})s?\b", re.I)
_EN_NAME_AFTER = re.compile(rf"\b(?:{_EN_COLUMN_WORDS})\s+(\w+)", re.I)
_EN_PROPER = re.compile(r"(?<=[a-z,;:]\s)[A-Z][a-z]+(?:\s[A-Z][a-z]+)*\b")  # "the Adelie penguins", mid-sentence
_EN_GENERIC = frozenset(
    "the a an each every this that these those any all one new numeric numerical text categorical date time target "
    "feature same other some which per by of first second last id index key its their your our my no empty missing "
    "extra duplicate derived computed string integer float boolean lookup pivot summary temporary another single "
    "multiple many few several wide long joined raw clean cleaned whole entire large small big main result results "
    "output input given relevant corresponding original".split()
)
_EN_FOLLOWING = frozenset(
    "of is are was were and or to in for with before after that has have names name headers header types type values "
    "value order by the a an it as on at from per contains holds which when if must should can will may being be "
    "first last instead rather than".split()
)
# a name, then optionally 这一/这个/这, then a column word (表 alone is too often 代表, 图表, 列表)
_ZH_LATIN_COLUMN = re.compile(r"([A-Za-z_][\w.\-]*)\s*(?:这一|这个|这)?\s*(?:列|字段|栏|变量|数据集|数据表|工作表|表)")
_ZH_COLUMN = re.compile(
    rf"([{CJK}]{{2,}}?)(?:这一|这个|这)?(?:列|字段|栏位|数据集|数据表|工作表|(?<![代图报列发外仪课时手年])表(?!示|明|达|格|现))"
)
_ZH_GENERIC_END = frozenset(
    "每一 这一 那一 某一 同一 各个 这个 那个 哪个 每个 某个 整个 一个 单个 多个 几个 所有 全部 其他 "
    "其它 其余 相关 对应 某些 "
    "这些 那些 数值 文本 分类 类别 字符 日期 时间 缺失 重复 新的 新增 目标 特征 下一 上一 原始 数据 "
    "结果 输出 输入".split()
)
_ZH_GENERIC_LAST = frozenset("这那该每各某此其哪几多全整同的个一两")
_LATIN_IN_ZH = re.compile(rf"(?:[{CJK}][\s，。、：；（）]*|^)([A-Za-z][A-Za-z\-]+)(?=[\s，。、：；（）]*[{CJK}])")


def mentions_specifics(text: str) -> bool:
    """Whether ``text`` names a column, file, number, quoted term or proper name (either language)."""
    if _MARKS.search(text) or _ZH_NUMBER.search(text):
        return True
    if any(m.group(1).lower() not in _EN_GENERIC for m in _EN_NAME_BEFORE.finditer(text)):
        return True
    if any(m.group(1).lower() not in _EN_FOLLOWING | _EN_GENERIC for m in _EN_NAME_AFTER.finditer(text)):
        return True
    if _EN_PROPER.search(text):
        return True
    if any(m.group(1).lower() not in _EN_GENERIC for m in _ZH_LATIN_COLUMN.finditer(text)):
        return True
    if any(_named(m.group(1)) for m in _ZH_COLUMN.finditer(text)):
        return True
    return any(not m.group(1).isupper() for m in _LATIN_IN_ZH.finditer(text))


def _named(name: str) -> bool:
    """Whether the Chinese words before a column word name one (收入, 销售额), not a kind or a quantity."""
    return name[-1] not in _ZH_GENERIC_LAST and name[-2:] not in _ZH_GENERIC_END
