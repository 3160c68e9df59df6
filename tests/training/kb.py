"""A small movie graph and labeled questions shared by the training tests."""

from __future__ import annotations

from graphwalk_core.stores.memory import MemoryGraphStore
from graphwalk_core.training.examples import LabeledQuestion

#: 12 films: film i is directed by director i % 4, stars actors i % 5 and (i + 1) % 5, released 1990 + i % 3.
TRIPLES = [
    triple
    for i in range(12)
    for triple in (
        (f"Film {i}", "directed_by", f"Director {i % 4}"),
        (f"Film {i}", "starred_actors", f"Actor {i % 5}"),
        (f"Film {i}", "starred_actors", f"Actor {(i + 1) % 5}"),
        (f"Film {i}", "release_year", str(1990 + i % 3)),
    )
]


def store() -> MemoryGraphStore:
    return MemoryGraphStore.from_triples(TRIPLES, source_id="test/kb")


def directed(film: int) -> list[str]:
    return [f"Director {film % 4}"]


def films_of_director(d: int) -> list[str]:
    return [f"Film {i}" for i in range(12) if i % 4 == d]


def year(film: int) -> list[str]:
    return [str(1990 + film % 3)]


def questions(films: range, split: str = "dev") -> list[LabeledQuestion]:
    """Three templates per film: its director, its year, the director's other films (2 hops)."""
    out = []
    for i in films:
        name = f"Film {i}"
        same = [f for f in films_of_director(i % 4) if f != name]
        out += [
            LabeledQuestion(f"dir-{i}", f"who directed {name}", [name], directed(i), split, [name]),
            LabeledQuestion(f"year-{i}", f"when was {name} released", [name], year(i), split, [name]),
            LabeledQuestion(f"same-{i}", f"which films share the director of {name}", [name], same, split),
        ]
    return out
