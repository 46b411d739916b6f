"""How close two short texts are, without a model: wordllama embeddings with a lexical floor.

wordllama (a 19 MB package that ships its weights) gives cosine similarities that sit around
0.1 to 0.25 for unrelated English sentences and higher for Chinese ones, whose characters share
sub-word tokens. So the cosine is rescaled (``EMBEDDING_ZERO`` becomes 0) and averaged with the
lexical overlap (words, and character pairs for CJK text), and the lexical overlap alone is the
floor. Where wordllama is missing the lexical score is all there is. Embeddings of library rows
are cached by text, so matching a request against a warm library embeds only the request.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

log = logging.getLogger("nini.memory.experience")

EMBEDDING_ZERO = 0.25  # a cosine at or under this is treated as unrelated
_WORD = re.compile(r"[a-z0-9_]+")
_CJK = re.compile(r"[\u3400-\u9fff]+")
STOPWORDS = frozenset(
    "a an the of to in on for by with and or is are was were be this that these those it its as at from use using "
    "when what which how do does did not no than then there their our your my we you i he she they them have has "
    "had should must can could would will may might about into over per each all any some".split()
)
CJK_STOP = frozenset({"的", "了", "是", "在", "和", "与", "时", "用", "要"})


@dataclass
class Prepared:
    """Texts ready to be scored: their token sets and (when the model is there) their embeddings."""

    tokens: list[set[str]]
    vectors: Any = None  # numpy array, one normalised row per text


class Similarity:
    """Scores text pairs in [0, 1]; one per process is enough (the model loads on first use)."""

    def __init__(self, use_embeddings: bool = True) -> None:
        self._use_embeddings = use_embeddings
        self._model: Any = None
        self._cache: dict[str, Any] = {}

    @property
    def embeddings_available(self) -> bool:
        return self._load() is not None

    def scores(self, query: str, texts: Sequence[str]) -> list[float]:
        """The similarity of ``query`` to each of ``texts``."""
        return self.scores_against(query, self.prepare(texts))

    def prepare(self, texts: Sequence[str]) -> Prepared:
        """What scoring needs of ``texts`` (their tokens and embeddings), computed once for many queries."""
        model = self._load()
        vectors = self._embed(model, list(texts)) if model is not None and texts else None
        return Prepared([tokens(text) for text in texts], vectors)

    def scores_against(self, query: str, prepared: Prepared) -> list[float]:
        query_tokens = tokens(query)
        lexical = [overlap(query_tokens, item) for item in prepared.tokens]
        model = self._load()
        if model is None or prepared.vectors is None:
            return lexical
        import numpy as np

        query_vector = model.embed([query], norm=True)[0]
        scaled = np.clip((prepared.vectors @ query_vector - EMBEDDING_ZERO) / (1 - EMBEDDING_ZERO), 0.0, 1.0)
        return [max(lex, (float(emb) + lex) / 2) for lex, emb in zip(lexical, scaled, strict=True)]

    def pair(self, first: str, second: str) -> float:
        return self.scores(first, [second])[0]

    def _embed(self, model: Any, texts: list[str]) -> Any:
        import numpy as np

        missing = [text for text in dict.fromkeys(texts) if text not in self._cache]
        if missing:
            for text, vector in zip(missing, model.embed(missing, norm=True), strict=True):
                self._cache[text] = vector
        return np.stack([self._cache[text] for text in texts])

    def _load(self) -> Any:
        if not self._use_embeddings:
            return None
        if self._model is None:
            try:
                import os

                import wordllama

                self._model = wordllama.WordLlama.load(
                    cache_dir=os.path.dirname(wordllama.__file__), disable_download=True
                )
            except Exception as exc:  # not installed, or its files damaged: the lexical score still works
                log.warning("wordllama unavailable (%s); experience matching uses lexical overlap only", exc)
                self._use_embeddings = False
                return None
        return self._model


def tokens(text: str) -> set[str]:
    """Content words (lower case, a trailing plural s dropped) and CJK character pairs."""
    lowered = text.lower()
    words = {
        word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word
        for word in _WORD.findall(lowered)
        if word not in STOPWORDS and len(word) > 1
    }
    for run in _CJK.findall(lowered):
        chars = [char for char in run if char not in CJK_STOP]
        words.update(a + b for a, b in zip(chars, chars[1:], strict=False))
        if len(chars) == 1:
            words.add(chars[0])
    return words


def overlap(first: set[str], second: set[str]) -> float:
    """Shared tokens over the smaller set's size, damped for very short texts (one shared word of
    two is weaker evidence than four of eight)."""
    if not first or not second:
        return 0.0
    shared = len(first & second)
    smaller = min(len(first), len(second))
    return shared / smaller * min(1.0, (shared + 1) / 4)
