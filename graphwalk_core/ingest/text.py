"""Small text helpers shared by extraction, routing and resolution: name normalization and snake_case."""

from __future__ import annotations

import re
import sys
import unicodedata
from collections.abc import Collection
from collections.abc import Set as AbstractSet
from functools import lru_cache

_NON_WORD = re.compile(r"[^\w]+", re.UNICODE)
#: In a name, ``+`` and ``#`` may end a word ("C++", "C#", "Disney+"); anywhere else they break words.
_NAME_BREAK = re.compile(r"[^\w+#]+")
_LOOSE_SIGN = re.compile(r"(?<!\S)[+#]+|[+#]+(?=[^\s+#])")
_ABBREVIATIONS = frozenset(
    {"bros", "inc", "co", "corp", "ltd", "jr", "sr", "dr", "mr", "mrs", "ms", "st", "mt", "vs"}
)
_INITIALS = re.compile(r"(?:[A-Z]\.)+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
#: Names whose word sets are remembered, the most recently used first: about a routing window's names (a
#: 6,119-passage ingest meets 42,000 distinct names; the candidate index keeps its names' words itself).
NAME_WORDS_CACHE = 1 << 14


@lru_cache(maxsize=200_000)
def normalize_name(name: str) -> str:
    """Case-, accent- and punctuation-insensitive form of a name: ``"Nolan, Chris."`` -> ``"nolan chris"``;
    a ``+`` or ``#`` ending a word is kept (``"C++"``, ``"C#"`` and ``"C"`` are three names).

    Compatibility forms fold (NFKD: ``"Ａｌｉｃｅ"``, ``"ﬁ"``), so do composed and decomposed accents
    (``"é"`` and ``"e\u0301"``); invisible format characters (Unicode category Cf: zero-width space and
    joiners, soft hyphen, word joiner, a stray BOM, direction marks) are dropped, not read as a word break.
    """
    text = unicodedata.normalize("NFKD", name)
    # ASCII has no combining or format character: most names skip the per-character scan
    text = _NAME_BREAK.sub(" ", text) if text.isascii() else "".join(map(_fold, text))
    return " ".join(_LOOSE_SIGN.sub(" ", text.casefold()).split())


def _fold(ch: str) -> str:
    """One character of a decomposed name: dropped when a combining accent or an invisible format character,
    kept when a word character or a spacing vowel sign (a mark ``\\w`` lacks: ``"रोम"`` is not ``"र म"``),
    else a word break."""
    category = unicodedata.category(ch)
    if category == "Cf" or unicodedata.combining(ch):
        return ""
    return ch if ch.isalnum() or ch in "_+#" or category[0] == "M" else " "


@lru_cache(maxsize=NAME_WORDS_CACHE)
def name_words(name: str) -> frozenset[str]:
    """The set of normalized words of a name (for Jaccard similarity); each word interned, so the names
    sharing a word share one string."""
    return frozenset(map(sys.intern, normalize_name(name).split()))


def jaccard(a: AbstractSet[str], b: Collection[str]) -> float:
    """|a ∩ b| / |a ∪ b| (0 for two empty sets); ``b``: distinct words in any collection (a tuple of a
    candidate index entry's words, or a set)."""
    if not a and not b:
        return 0.0
    common = sum(w in a for w in b)
    return common / (len(a) + len(b) - common)


def is_abbreviation(word: str) -> bool:
    """Whether the period ending ``word`` ends no sentence: initials (``"J."``, ``"U.S."``) or a common
    abbreviation (``"Dr."``, ``"Bros."``); opening quotes and brackets are skipped."""
    word = word.lstrip("\"'“‘([{<")
    return bool(_INITIALS.fullmatch(word)) or word.rstrip(".").lower() in _ABBREVIATIONS


def snake_case(text: str) -> str:
    """``"Film Director"`` / ``"filmDirector"`` / ``"film-director"`` -> ``"film_director"``."""
    text = _CAMEL.sub("_", text.strip())
    return "_".join(_NON_WORD.sub(" ", text.lower()).split())


def singular(word: str) -> str:
    """A crude English singular for table names: ``films`` -> ``film``, ``countries`` -> ``country``."""
    irregular = {"people": "person", "children": "child", "men": "man", "women": "woman"}
    if word in irregular:
        return irregular[word]
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("s") and not word.endswith("ss") and len(word) > 3:
        return word[:-1]
    return word
