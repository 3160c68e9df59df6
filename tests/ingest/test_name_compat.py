"""The routing veto: which name pairs can denote one entity (issue 12 item 5's wrong merges and the
short forms routing must keep)."""

from __future__ import annotations

import pytest

from graphwalk_core.ingest.name_compat import is_short_form, names_compatible

#: "university" and "bavaria" are carried by many node names (generic); every other word by one.
DF = {"university": 50, "bavaria": 20}


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        # short forms, prefixes, initials, acronyms: may merge
        ("Chris Nolan", "Nolan", True),
        ("Nolan", "Christopher Nolan", True),
        ("Chris Nolan", "Christopher Nolan", True),
        ("J. Smith", "John Smith", True),
        ("Harvard", "Harvard University", True),
        ("Wynorski's", "Jim Wynorski", True),
        ("USA", "United States of America", True),
        ("NYC", "New York City", True),
        ("Inception", "inception", True),
        # conflicting distinctive words
        ("University of Vermont", "University of Kansas", False),
        ("Abdul Aziz Baba", "Abdul Aziz Tamit", False),
        ("Jim Bob", "Jim Wynorski", False),
        ("Pirates of the Sky", "Pirates of the Coast", False),
        # a number, a roman numeral or Jr. tells them apart
        ("Wizards of the Lost Kingdom", "Wizards of the Lost Kingdom II", False),
        ("John Middleton Murry", "John Middleton Murry Jr.", False),
        ("Dots", "3 Dots", False),
        ("Marianus I of Arborea", "Marianus V of Arborea", False),
        ("My Wife Is a Gangster 2", "My Wife is a Gangster 3", False),
        # one side of "X of Y", or a generic word alone
        ("Kansas", "University of Kansas", False),
        ("Ludwig Ferdinand", "Ludwig Ferdinand of Bavaria", False),
        ("Bavaria", "Duke of Bavaria", False),
        ("Harvard University", "University", False),
    ],
)
def test_names_compatible(a: str, b: str, expected: bool) -> None:
    df = lambda word: DF.get(word, 1)  # noqa: E731
    assert names_compatible(a, b, df) is expected
    assert names_compatible(b, a, df) is expected


def test_generic_is_relative_to_the_graph() -> None:
    assert names_compatible("Harvard University", "University", lambda word: 9)
    assert not names_compatible("Harvard University", "University", lambda word: 10)
    assert names_compatible("Harvard University", "University", lambda word: 10, generic_df=11)


def test_short_forms_of_a_name() -> None:
    assert is_short_form("PARIS", "Paris Hilton") and is_short_form("Hilton", "Paris Hilton")
    assert is_short_form("Chris Nolan", "Christopher Nolan")
    assert not is_short_form("Harvard University", "University")
    assert not is_short_form("Paris", "Kyoto")
