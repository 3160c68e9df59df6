"""Can two entity names denote one entity? The word-level veto routing applies to fuzzy candidates.

An embedding or Jaccard candidate is only a hint; merging it when the names cannot name one entity is
the costly error ("University of Vermont" into "University of Kansas", "Harvard University" into a node
named "University"). Two names are *incompatible* when

- each has a distinctive word the other lacks ("Vermont" vs "Kansas", "Baba" vs "Tamit");
- one adds a distinguisher the other lacks: a number, a roman numeral or Jr./Sr. ("Lost Kingdom II",
  "John Middleton Murry Jr.", "3 Dots");
- the shorter is a part of an "X of Y" name that leaves out one side ("Kansas" or "University" of
  "University of Kansas", "Pirates" of "Pirates of the Sky");
- the shorter consists of generic words only: each one is carried by many node names
  (``generic_df``; "University" in "Harvard University").

Anything else may merge (the decider still decides): the same words, a token-subset short form of a
name such as a person's surname ("Nolan" / "Chris Nolan"), prefixes and initials ("Chris" /
"Christopher", "J." / "John"), and acronyms ("USA" / "United States of America").
"""

from __future__ import annotations

import re
from collections.abc import Callable

from graphwalk_core.ingest.text import normalize_name

#: Words that join name parts; never distinctive.
CONNECTORS = frozenset({"of", "the", "de", "da", "del", "der", "di", "van", "von", "la", "le", "du", "and"})
#: Possessive and article remnants dropped before comparing.
_IGNORED = frozenset({"s", "a", "an"})
_ROMAN = re.compile(r"^(?=[ivxl])(x{0,3}|xl|l)(ix|iv|v?i{0,3})$")
_SUFFIXES = frozenset({"jr", "sr"})
#: A short form whose every word is carried by at least this many node names is generic.
DEFAULT_GENERIC_DF = 10
#: Prefixes shorter than this do not match a longer word ("Al" is not "Alan"); one letter is an initial.
_MIN_PREFIX = 3


def _words(name: str) -> list[str]:
    return [w for w in normalize_name(name).split() if w not in _IGNORED]


def _distinguisher(word: str) -> bool:
    """A number, Jr./Sr., or a roman numeral (a lone "i" or "l" reads as an initial)."""
    return word.isdigit() or word in _SUFFIXES or (word not in ("i", "l") and bool(_ROMAN.match(word)))


def _matches(word: str, others: list[str]) -> bool:
    for other in others:
        if word == other:
            return True
        if _distinguisher(word) or _distinguisher(other):
            continue
        short, long = sorted((word, other), key=len)
        if (len(short) == 1 or len(short) >= _MIN_PREFIX) and long.startswith(short):
            return True
    return False


def _acronym(a: list[str], b: list[str]) -> bool:
    """One name is the other's initials (connectors skipped or not)."""
    for short, long in ((a, b), (b, a)):
        if len(short) == 1 and len(long) > 1:
            content = "".join(w[0] for w in long if w not in CONNECTORS)
            if short[0] in (content, "".join(w[0] for w in long)):
                return True
    return False


def _one_side_of(short: list[str], long: list[str]) -> bool:
    """``short`` leaves out one side of an "X of Y" connector in ``long``."""
    cut = next((i for i, w in enumerate(long) if w in CONNECTORS and 0 < i < len(long) - 1), None)
    if cut is None:
        return False
    head, tail = long[:cut], long[cut + 1 :]
    content = [w for w in short if w not in CONNECTORS]
    return not (any(_matches(w, head) for w in content) and any(_matches(w, tail) for w in content))


def is_short_form(short: str, name: str) -> bool:
    """Every content word of ``short`` is a word of ``name`` (up to prefixes and initials)."""
    words = [w for w in _words(name) if w not in CONNECTORS]
    return all(_matches(w, words) for w in _words(short) if w not in CONNECTORS)


def names_compatible(
    a: str, b: str, word_df: Callable[[str], int], *, generic_df: int = DEFAULT_GENERIC_DF
) -> bool:
    """False when ``a`` and ``b`` cannot name one entity (see the module docstring); ``word_df(word)`` is
    how many node names carry a (normalized) word."""
    wa, wb = _words(a), _words(b)
    if wa == wb:
        return True
    if _acronym(wa, wb):
        return True
    ca = [w for w in wa if w not in CONNECTORS]
    cb = [w for w in wb if w not in CONNECTORS]
    only_a = [w for w in ca if not _matches(w, cb)]
    only_b = [w for w in cb if not _matches(w, ca)]
    if only_a and only_b:
        return False
    extra = only_a or only_b
    if any(_distinguisher(w) for w in extra):
        return False
    if not extra:
        return True  # the same content words, up to prefixes and initials
    short, long = (wb, wa) if only_a else (wa, wb)
    if _one_side_of(short, long):
        return False
    content = [w for w in short if w not in CONNECTORS]
    return not content or min(word_df(w) for w in content) < generic_df
