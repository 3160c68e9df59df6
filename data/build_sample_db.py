"""Build data/sample.sqlite: a tiny film database (people, studios, films, film_cast) with foreign keys.

Run: ``python data/build_sample_db.py [OUT]`` (rewrites OUT, by default data/sample.sqlite; the content is
fixed, so the output is stable).
"""

from __future__ import annotations

import argparse
import sqlite3
from pathlib import Path

SCHEMA = """
CREATE TABLE people (id INTEGER PRIMARY KEY, name TEXT NOT NULL, born INTEGER, birthplace TEXT);
CREATE TABLE studios (id INTEGER PRIMARY KEY, name TEXT NOT NULL, founded INTEGER);
CREATE TABLE films (
    id INTEGER PRIMARY KEY,
    title TEXT NOT NULL,
    year INTEGER,
    director_id INTEGER REFERENCES people(id),
    studio_id INTEGER REFERENCES studios(id)
);
CREATE TABLE film_cast (
    film_id INTEGER NOT NULL REFERENCES films(id),
    person_id INTEGER NOT NULL REFERENCES people(id),
    role TEXT,
    PRIMARY KEY (film_id, person_id)
);
"""

PEOPLE = [
    (1, "Christopher Nolan", 1970, "London"),
    (2, "Leonardo DiCaprio", 1974, "Los Angeles"),
    (3, "Tom Hardy", 1977, "London"),
    (4, "Matthew McConaughey", 1969, "Uvalde"),
    (5, "Anne Hathaway", 1982, "Brooklyn"),
    (6, "Cillian Murphy", 1976, "Cork"),
    (7, "Denis Villeneuve", 1967, "Gentilly"),
    (8, "Timothée Chalamet", 1995, "New York City"),
]
STUDIOS = [
    (1, "Warner Bros. Pictures", 1923),
    (2, "Universal Pictures", 1912),
    (3, "Legendary Pictures", 2000),
]
FILMS = [
    (1, "Inception", 2010, 1, 1),
    (2, "Interstellar", 2014, 1, 1),
    (3, "Oppenheimer", 2023, 1, 2),
    (4, "Dunkirk", 2017, 1, 1),
    (5, "Dune", 2021, 7, 3),
    (6, "The Revenant", 2015, None, None),
]
CAST = [
    (1, 2, "Dom Cobb"),
    (1, 3, "Eames"),
    (2, 4, "Cooper"),
    (2, 5, "Brand"),
    (3, 6, "J. Robert Oppenheimer"),
    (4, 3, "Farrier"),
    (5, 8, "Paul Atreides"),
    (6, 2, "Hugh Glass"),
    (6, 3, "John Fitzgerald"),
]


def build(path: Path) -> None:
    """Write the sample database to ``path`` (replacing it)."""
    path.unlink(missing_ok=True)
    with sqlite3.connect(path) as conn:
        conn.executescript(SCHEMA)
        conn.executemany("INSERT INTO people VALUES (?, ?, ?, ?)", PEOPLE)
        conn.executemany("INSERT INTO studios VALUES (?, ?, ?)", STUDIOS)
        conn.executemany("INSERT INTO films VALUES (?, ?, ?, ?, ?)", FILMS)
        conn.executemany("INSERT INTO film_cast VALUES (?, ?, ?)", CAST)
    conn.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, nargs="?", default=Path(__file__).with_name("sample.sqlite"))
    build(parser.parse_args().out)
