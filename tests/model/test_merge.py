"""Pure merge logic: provenance union, conflicts, surface derivation, retraction, order independence."""

from __future__ import annotations

import json
import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphwalk_core.errors import InputError
from graphwalk_core.model import (
    GENERIC_TYPE,
    AttributeConflict,
    ConflictValue,
    Edge,
    Node,
    Provenance,
    canonical_json,
)
from graphwalk_core.model.merge import (
    TYPE_CONFLICT_KEY,
    ProvenanceSet,
    TextSources,
    derive_surface,
    grown_sources,
    merge_edge_data,
    merge_node_data,
    retract_source,
    rewired,
    source_ids,
    union_provenance,
)

A = Provenance(source_id="wiki/a", content_hash="ha")
A2 = Provenance(source_id="wiki/a", content_hash="ha2")
B = Provenance(source_id="wiki/b", content_hash="hb")
C = Provenance(source_id="wiki/c", content_hash="hc")


def n(name: str, prov: tuple[Provenance, ...], **kw: object) -> Node:
    return Node(id=kw.pop("id", "n1"), name=name, provenance=prov, **kw)  # type: ignore[arg-type]


def test_union_provenance_dedups_and_sorts() -> None:
    assert union_provenance([C, A], [A, B, A2]) == (A, A2, B, C)


def test_equal_attributes_union_their_provenance() -> None:
    merged = merge_node_data(n("X", (A,), attributes={"year": 2000}), n("X", (B,), attributes={"year": 2000}))
    assert merged.attributes == {"year": 2000}
    assert merged.attribute_provenance == {"year": (A, B)}
    assert merged.conflicts == {}
    assert merged.provenance == (A, B)


def test_different_attributes_become_a_conflict_with_majority_value() -> None:
    x = n("X", (A,), attributes={"year": 2000, "lang": "en"})
    y = n("X", (B,), attributes={"year": 1999})
    z = n("X", (C,), attributes={"year": 1999})
    merged = merge_node_data(merge_node_data(x, y), z)
    assert merged.attributes == {"lang": "en", "year": 1999}
    assert merged.attribute_provenance == {"lang": (A,), "year": (B, C)}
    assert merged.conflicts == {
        "year": AttributeConflict(
            key="year",
            values=(ConflictValue(value=1999, provenance=(B, C)), ConflictValue(value=2000, provenance=(A,))),
        )
    }


def test_conflict_tie_goes_to_smallest_canonical_json() -> None:
    merged = merge_node_data(n("X", (B,), attributes={"k": "zeta"}), n("X", (A,), attributes={"k": "alpha"}))
    assert merged.attributes == {"k": "alpha"}
    assert [c.value for c in merged.conflicts["k"].values] == ["alpha", "zeta"]


def test_attribute_provenance_overrides_element_provenance() -> None:
    x = n("X", (A, B), attributes={"k": 1}, attribute_provenance={"k": (B,)})
    merged = merge_node_data(x, n("X", (C,), attributes={"k": 2}))
    assert [(c.value, c.provenance) for c in merged.conflicts["k"].values] == [(1, (B,)), (2, (C,))]


def test_generic_type_yields_to_real_type_and_real_types_conflict() -> None:
    assert merge_node_data(n("X", (A,)), n("X", (B,), type="film")).type == "film"
    assert merge_node_data(n("X", (A,), type="film"), n("X", (B,))).conflicts == {}
    both = merge_node_data(n("X", (A,), type="person"), n("X", (B,), type="film"))
    assert both.type == "film"
    assert both.conflicts[TYPE_CONFLICT_KEY].values == (
        ConflictValue(value="film", provenance=(B,)),
        ConflictValue(value="person", provenance=(A,)),
    )
    assert merge_node_data(n("X", (A,)), n("X", (B,))).type == GENERIC_TYPE


def test_names_and_summaries_are_derived_from_sources() -> None:
    x = n("Nolan", (A,), id="x", summary="A director.")
    y = n("Christopher Nolan", (B,), id="y", summary="British-American film director.")
    z = n("Nolan", (C,), id="z")
    merged = merge_node_data(merge_node_data(x, y), z)
    assert merged.id == "x"
    assert merged.name == "Nolan"
    assert merged.aliases == ("Christopher Nolan",)
    assert merged.name_sources == {"Christopher Nolan": (B,), "Nolan": (A, C)}
    assert merged.summary == "British-American film director."
    assert merged.summary_sources == {"A director.": (A,), "British-American film director.": (B,)}


def test_derive_surface_ties_longest_then_smallest() -> None:
    node = n("?", (A,), name_sources={"Bo": (A,), "Al": (B,), "Cy": (A, C), "Bob": (B,)})
    assert derive_surface(node).name == "Cy"
    tie = n("?", (A,), name_sources={"Bo": (A,), "Al": (B,), "Bob": (C,)})
    assert (derive_surface(tie).name, derive_surface(tie).aliases) == ("Bob", ("Al", "Bo"))
    assert derive_surface(n("Al", (A,), name_sources={"Al": (A,), "Ab": (B,)})).name == "Ab"
    assert derive_surface(n("Keep", (A,), aliases=("k",), summary="s")) == n(
        "Keep", (A,), aliases=("k",), summary="s"
    )
    assert derive_surface(n("Al", (A,), name_sources={"Al": (A,)}, summary="old")).summary is None


def test_support_counts_distinct_sources_not_provenance_entries() -> None:
    node = n("?", (A,), name_sources={"Short": (A, A2), "Longer": (B,)})
    assert derive_surface(node).name == "Longer"


def test_merge_edge_data() -> None:
    e1 = Edge(source="a", target="b", type="r", provenance=(A,), attributes={"w": 1})
    e2 = Edge(source="a", target="b", type="r", provenance=(B,), attributes={"w": 1, "x": True})
    merged = merge_edge_data(e1, e2)
    assert merged.provenance == (A, B)
    assert merged.attributes == {"w": 1, "x": True}
    assert merged.attribute_provenance == {"w": (A, B), "x": (B,)}
    with pytest.raises(InputError, match="cannot merge different edges: a -r-> b and a -s-> b"):
        merge_edge_data(e1, Edge(source="a", target="b", type="s"))


def test_retract_source_drops_promotes_and_rederives() -> None:
    x = n("Nolan", (A,), attributes={"year": 1970, "town": "London"}, summary="Director.")
    y = n("Christopher Nolan", (B,), attributes={"year": 1971}, summary="Filmmaker.")
    merged = merge_node_data(x, y)
    assert set(merged.conflicts) == {"year"}
    left = retract_source(merged, "wiki/a")
    assert left is not None
    assert left.provenance == (B,)
    assert left.attributes == {"year": 1971}
    assert left.attribute_provenance == {"year": (B,)}
    assert left.conflicts == {}
    assert (left.name, left.aliases, left.summary) == ("Christopher Nolan", (), "Filmmaker.")
    assert left.name_sources == {"Christopher Nolan": (B,)}
    assert retract_source(left, "wiki/b") is None
    assert retract_source(merged, "wiki/zzz") is merged
    plain = n("X", (A,), type="film")
    assert retract_source(plain, "wiki/b") is plain


def test_retract_keeps_conflict_with_two_values_left() -> None:
    merged = merge_node_data(
        merge_node_data(n("X", (A,), attributes={"k": 1}), n("X", (B,), attributes={"k": 2})),
        n("X", (C,), attributes={"k": 3}),
    )
    left = retract_source(merged, "wiki/c")
    assert left is not None
    assert [(v.value, v.provenance) for v in left.conflicts["k"].values] == [(1, (A,)), (2, (B,))]
    assert left.attributes == {"k": 1}


def test_retract_type_conflict_and_edges() -> None:
    merged = merge_node_data(n("X", (A,), type="person"), n("X", (B,), type="film"))
    left = retract_source(merged, "wiki/b")
    assert left is not None and (left.type, left.conflicts) == ("person", {})
    e = merge_edge_data(
        Edge(source="a", target="b", type="r", provenance=(A,), attributes={"w": 1}),
        Edge(source="a", target="b", type="r", provenance=(B,), attributes={"v": 2}),
    )
    kept = retract_source(e, "wiki/a")
    assert kept == Edge(
        source="a",
        target="b",
        type="r",
        provenance=(B,),
        attributes={"v": 2},
        attribute_provenance={"v": (B,)},
    )


def test_source_ids_and_rewired() -> None:
    node = n("X", (A,), attribute_provenance={"k": (B,)}, attributes={"k": 1}, name_sources={"X": (C,)})
    assert source_ids(node) == {"wiki/a", "wiki/b", "wiki/c"}
    loop = rewired(Edge(source="old", target="old", type="r"), "old", "new")
    assert (loop.source, loop.target) == ("new", "new")


provenances = st.sampled_from([A, A2, B, C])
values = st.one_of(st.integers(0, 2), st.sampled_from(["x", "y"]), st.none())
nodes = st.builds(
    lambda name, prov, attrs, kind, summary: Node(
        id="n", name=name, provenance=tuple(prov), attributes=attrs, type=kind, summary=summary
    ),
    name=st.sampled_from(["Al", "Bob", "Cy", "al"]),
    prov=st.lists(provenances, min_size=1, max_size=3),
    attrs=st.dictionaries(st.sampled_from(["k", "m"]), values, max_size=2),
    kind=st.sampled_from([GENERIC_TYPE, "film", "person"]),
    summary=st.one_of(st.none(), st.sampled_from(["s1", "s2"])),
)


@settings(max_examples=150, deadline=None)
@given(nodes, nodes)
def test_merge_is_order_independent_for_two(x: Node, y: Node) -> None:
    assert merge_node_data(x, y) == merge_node_data(y, x)


@settings(max_examples=100, deadline=None)
@given(nodes, nodes, nodes)
def test_merge_is_order_independent_for_three(x: Node, y: Node, z: Node) -> None:
    assert merge_node_data(merge_node_data(x, y), z) == merge_node_data(x, merge_node_data(y, z))
    assert merge_node_data(merge_node_data(x, y), z) == merge_node_data(merge_node_data(z, x), y)


@settings(max_examples=100, deadline=None)
@given(nodes, nodes, nodes, st.sampled_from(["wiki/a", "wiki/b"]), st.sampled_from(["wiki/b", "wiki/c"]))
def test_retraction_is_order_independent(x: Node, y: Node, z: Node, first: str, second: str) -> None:
    merged = merge_node_data(merge_node_data(x, y), z)

    def retract_both(a: str, b: str) -> Node | None:
        once = retract_source(merged, a)
        return None if once is None else retract_source(once, b)

    assert retract_both(first, second) == retract_both(second, first)
    left = retract_both(first, second)
    if left is not None:
        assert {first, second}.isdisjoint(source_ids(left))


records = st.builds(
    Provenance,
    source_id=st.sampled_from(["wiki/a", "wiki/b", "wiki/c", "wiki/d"]),
    content_hash=st.sampled_from(["", "h1", "h2"]),
    start=st.one_of(st.none(), st.integers(0, 3)),
    confidence=st.sampled_from([0.5, 1.0]),
)


@given(st.lists(records, max_size=40), st.lists(st.lists(records, max_size=4), max_size=4))
def test_provenance_set_insertions_equal_a_full_sort(
    base: list[Provenance], adds: list[list[Provenance]]
) -> None:
    grown = union_provenance(base)
    everything = list(base)
    for add in adds:
        grown = union_provenance(grown, add)  # a few records into a ProvenanceSet: inserted, not re-sorted
        everything += add
        expected = tuple(sorted(set(everything), key=Provenance.sort_key))
        assert isinstance(grown, ProvenanceSet)
        assert tuple(grown) == expected
        assert grown.support == len({p.source_id for p in expected})
        assert grown.sources == {p.source_id for p in expected}


def test_provenance_set_is_a_plain_tuple_to_models_and_json() -> None:
    many = union_provenance([C, B], [A])
    assert isinstance(many, ProvenanceSet) and many == (A, B, C) and hash(many) == hash((A, B, C))
    merged = merge_node_data(n("X", (A, B)), n("X", (C,)))
    assert isinstance(merged.provenance, ProvenanceSet)
    parsed = Node.model_validate_json(merged.model_dump_json())  # plain tuples
    assert not isinstance(parsed.provenance, ProvenanceSet)
    assert merged == parsed and parsed.provenance == (A, B, C)
    assert merged.model_dump_json() == parsed.model_dump_json()
    assert merge_node_data(parsed, n("X", (A2,))) == merge_node_data(merged, n("X", (A2,)))
    assert merge_node_data(merged, n("X", (A2,))).provenance == (A, A2, B, C)


mentions = st.builds(
    lambda prov, name, summary, kind: Node(
        id="n",
        type=kind,
        name=name,
        provenance=(prov,),
        name_sources={name: (prov,)},
        summary=summary,
        summary_sources={summary: (prov,)} if summary else {},
    ),
    prov=records,
    name=st.sampled_from(["Al", "Bob", "al", "Alan"]),
    summary=st.one_of(st.none(), st.sampled_from(["s", "s1", "s22", "t1"])),
    kind=st.sampled_from([GENERIC_TYPE, GENERIC_TYPE, "PERSON", "ORG"]),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(mentions, min_size=1, max_size=12))
def test_remembered_best_texts_equal_a_full_recount(chain: list[Node]) -> None:
    """Mentions folded one by one (name and summary sources kept as TextSources, best texts found among
    the changed ones) give exactly what folding into the re-parsed plain node gives, every step."""
    grown = merge_node_data(chain[0], chain[0])
    for mention in chain[1:]:
        plain = Node.model_validate_json(grown.model_dump_json())
        assert not isinstance(plain.summary_sources, TextSources)
        grown = merge_node_data(grown, mention)
        recounted = merge_node_data(plain, mention)
        assert isinstance(grown.name_sources, TextSources)
        assert grown == recounted and grown.model_dump_json() == recounted.model_dump_json()
        assert list(grown.summary_sources) == sorted(grown.summary_sources)
        assert grown.name == derive_surface(recounted.model_copy(update={"name": "?"})).name


@settings(max_examples=150, deadline=None)
@given(st.lists(mentions, min_size=1, max_size=12), st.lists(st.booleans(), min_size=12, max_size=12))
def test_grown_sources_are_what_a_merge_added(chain: list[Node], reparse: list[bool]) -> None:
    """After each merge, the stored node's source ids united with what ``grown_sources`` reports are the
    merged node's (a recount on the re-parsed plain node), and the report is part of them; whether the
    stored node was grown by merges or re-parsed from its JSON (then nothing is shared)."""
    stored = merge_node_data(chain[0], chain[0])
    for step, mention in enumerate(chain[1:]):
        if reparse[step]:
            stored = Node.model_validate_json(stored.model_dump_json())
        merged = merge_node_data(stored, mention)
        grown = grown_sources(stored, merged)
        recount = source_ids(Node.model_validate_json(merged.model_dump_json()))
        assert recount == source_ids(merged)
        if grown is None:  # only when a value's backing changed hands (a conflict): compared in full
            assert merged.conflicts
        else:
            assert source_ids(stored) | grown == recount and grown <= recount
        stored = merged


def test_a_merge_into_a_hub_shares_its_sets_and_reports_only_what_it_added() -> None:
    """A mention merged into a node of 2,000 mentions appends to the node's record list and summary log
    (the older version still sees only its own), and ``grown_sources`` reports the mention's source."""
    mentions = [mention_of(i) for i in range(2001)]
    hub = merge_node_data(mentions[0], mentions[0])
    for mention in mentions[1:2000]:
        hub = merge_node_data(hub, mention)
    before = hub.model_dump_json()
    grown = merge_node_data(hub, mentions[2000])
    assert grown.provenance.since(hub.provenance) is not None  # shared: appended, not copied
    assert grown.summary_sources.since(hub.summary_sources) == ["about 2000"]
    assert grown_sources(hub, grown) == {"wiki/2000"}
    assert hub.model_dump_json() == before  # the older version is unchanged
    assert len(hub.provenance) == 2000 and len(grown.provenance) == 2001
    assert "about 2000" not in hub.summary_sources and len(hub.summary_sources) == 2000
    again = merge_node_data(hub, mentions[2000].model_copy(update={"summary": "other"}))  # from the older
    assert again.provenance == grown.provenance
    assert again.summary_sources["about 2000"] == grown.provenance[-1:]
    assert again.provenance.since(hub.provenance) is None  # copied: the list has a newer version
    assert grown.model_dump_json() == Node.model_validate_json(grown.model_dump_json()).model_dump_json()


def mention_of(i: int) -> Node:
    prov = (Provenance(source_id=f"wiki/{i:04d}", content_hash=f"h{i}"),)
    summary = f"about {i}"
    return Node(
        id="hub",
        name="Hub",
        provenance=prov,
        name_sources={"Hub": prov},
        summary=summary,
        summary_sources={summary: prov},
    )


def test_grown_sources_refuses_what_is_not_a_merge() -> None:
    stored = merge_node_data(n("X", (A, B)), n("X", (C,)))
    assert grown_sources(stored, retract_source(stored, "wiki/a")) is None  # a source left
    assert grown_sources(stored, n("X", (C,))) is None  # another node
    assert grown_sources(stored, stored) == set()
    edge = Edge(source="a", target="b", type="r", provenance=(A,))
    assert grown_sources(stored, edge) is None
    merged = merge_edge_data(edge, edge.model_copy(update={"provenance": (B,)}))
    assert grown_sources(edge, merged) == {"wiki/a", "wiki/b"}  # a plain tuple grew: its whole new set
    assert grown_sources(merged, merge_edge_data(merged, edge.model_copy(update={"provenance": (C,)}))) == {
        "wiki/c"
    }


def test_text_sources_are_plain_dicts_to_models_json_and_pickle() -> None:
    merged = merge_node_data(n("X", (A,), summary="s"), n("Y", (B, C), summary="t"))
    assert isinstance(merged.summary_sources, TextSources)
    assert merged.summary_sources == {"s": (A,), "t": (B, C)} and merged.summary == "t"
    assert merged.name == "Y" and merged.aliases == ("X",)
    assert pickle.loads(pickle.dumps(merged)) == merged
    parsed = Node.model_validate_json(merged.model_dump_json())
    assert merged == parsed and merged.model_dump_json() == parsed.model_dump_json()


@pytest.mark.parametrize(
    ("incoming", "order"),
    [
        ({"z": (B,), "b": (C,)}, ["b", "m", "z"]),  # new texts before and after, given out of order
        ({"n": (B,), "o": (C,)}, ["m", "n", "o"]),  # every new text after the last one: no re-sort needed
        ({"o": (B,), "n": (C,)}, ["m", "n", "o"]),  # after the last one, but given out of order
        ({"m": (B,)}, ["m"]),  # no new text
    ],
)
def test_merged_summaries_stay_in_text_order(
    incoming: dict[str, tuple[Provenance, ...]], order: list[str]
) -> None:
    stored = merge_node_data(n("X", (A,), summary="m"), n("X", (A,), summary="m"))
    assert isinstance(stored.summary_sources, TextSources)
    mention = n("X", (B, C), summary_sources=incoming, summary=next(iter(incoming)))
    merged = merge_node_data(stored, mention)
    assert list(merged.summary_sources) == order
    assert merged.summary_sources["m"] == ((A, B) if "m" in incoming else (A,))


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        st.text(),
        st.text(alphabet=st.characters(max_codepoint=0x40)),
        st.sampled_from(["", '"\\\n\t\x00', "é✓😀"]),
    )
)
def test_canonical_json_of_a_string_is_what_json_dumps_gives(text: str) -> None:
    expected = json.dumps(text, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    assert canonical_json(text) == expected
    assert canonical_json([text]) == f"[{expected}]"


@settings(max_examples=200, deadline=None)
@given(
    st.lists(records, max_size=6),
    st.lists(st.tuples(st.integers(0, 50), st.lists(records, min_size=1, max_size=3)), max_size=12),
)
def test_provenance_set_versions_never_see_each_others_records(
    base: list[Provenance], steps: list[tuple[int, list[Provenance]]]
) -> None:
    """Sets grown from any earlier version (the newest appends in place, others copy) each equal a full
    sort of what they were given, also after every later version was made; and equal, hash, pickle and
    serialize as that tuple."""
    versions = [(union_provenance(base), list(base))]
    for pick, add in steps:
        parent, given_so_far = versions[pick % len(versions)]
        versions.append((union_provenance(parent, add), given_so_far + add))
    for version, given_records in versions:
        expected = tuple(sorted(set(given_records), key=Provenance.sort_key))
        assert isinstance(version, ProvenanceSet)
        assert version == expected and expected == version and tuple(version) == expected
        assert len(version) == len(expected) and list(version) == list(expected)
        assert hash(version) == hash(expected) and version.support == len({p.source_id for p in expected})
        assert version[-1:] == expected[-1:] and (not expected or version[0] == expected[0])
        assert pickle.loads(pickle.dumps(version)) == expected
        node = n("X", expected or (A,)).model_copy(update={"provenance": version})
        assert (
            node.model_dump_json()
            == n("X", expected or (A,)).model_copy(update={"provenance": expected}).model_dump_json()
        )


texts = st.sampled_from(["a", "b", "c", "m", "z", "é"])


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(texts, st.lists(records, min_size=1, max_size=2).map(tuple), max_size=3),
    st.lists(
        st.tuples(
            st.integers(0, 50), st.dictionaries(texts, st.lists(records, min_size=1, max_size=2).map(tuple))
        ),
        max_size=10,
    ),
)
def test_text_sources_versions_are_plain_sorted_dicts(
    base: dict[str, tuple[Provenance, ...]],
    steps: list[tuple[int, dict[str, tuple[Provenance, ...]]]],
) -> None:
    """Maps grown from any earlier version (the newest appends to the shared log, others copy it) each
    equal the plain dict in text order their changes give, also after every later version; and equal,
    pickle and serialize as that dict."""
    first = TextSources((k, base[k]) for k in sorted(base))
    versions = [(first, dict(sorted(base.items())))]
    for pick, changed in steps:
        parent, plain = versions[pick % len(versions)]
        if pick % 3 == 0:
            list(parent)  # its text order known before it grows
        versions.append((parent.changing(changed), dict(sorted({**plain, **changed}.items()))))
    for version, plain in versions:
        assert list(version) == list(plain) and list(version.items()) == list(plain.items())
        assert version == plain and plain == version and len(version) == len(plain)
        assert version.as_dict() == plain and list(version.as_dict()) == list(plain)
        assert all(version.get(k) == v and k in version for k, v in plain.items())
        assert "absent" not in version and version.get("absent") is None
        assert pickle.loads(pickle.dumps(version)) == plain
        node = n("X", (A,), summary_sources=plain, summary=next(iter(plain), None))
        grown = node.model_copy(update={"summary_sources": version})
        assert grown.model_dump_json() == node.model_dump_json()


def _reference_fold(chain: list[Node]) -> dict[str, object]:
    """What folding ``chain`` gives, computed plainly: sorted sets, sorted dicts, best texts recounted."""

    def union(groups: list[tuple[Provenance, ...]]) -> tuple[Provenance, ...]:
        return tuple(sorted({p for g in groups for p in g}, key=Provenance.sort_key))

    def texts(field: str) -> dict[str, tuple[Provenance, ...]]:
        found: dict[str, list[tuple[Provenance, ...]]] = {}
        for node in chain:
            for text, group in getattr(node, field).items():
                found.setdefault(text, []).append(group)
        return {text: union(found[text]) for text in sorted(found)}

    def best(sources: dict[str, tuple[Provenance, ...]]) -> str:
        return min(sources, key=lambda t: (-len({p.source_id for p in sources[t]}), -len(t), t))

    names, summaries = texts("name_sources"), texts("summary_sources")
    name = best(names)
    return {
        "provenance": union([node.provenance for node in chain]),
        "name_sources": names,
        "summary_sources": summaries,
        "name": name,
        "aliases": tuple(sorted(t for t in names if t != name)),
        "summary": best(summaries) if summaries else None,
    }


def _from_document(mention: Node, document: int) -> Node:
    """``mention`` as document ``document`` gives it (every value backed by its one record)."""
    prov = (mention.provenance[0].model_copy(update={"source_id": f"w/{document:02d}"}),)
    summaries = {mention.summary: prov} if mention.summary else {}
    return mention.model_copy(
        update={"provenance": prov, "name_sources": {mention.name: prov}, "summary_sources": summaries}
    )


@settings(max_examples=150, deadline=None)
@given(
    st.lists(mentions, min_size=1, max_size=14).map(
        lambda chain: [_from_document(m, i) if i % 3 else m for i, m in enumerate(chain)]
    )
)
def test_folding_mentions_gives_what_plain_sorted_sets_give(chain: list[Node]) -> None:
    """Provenance, name and summary sources, name, aliases and summary of mentions folded one by one (most
    of them from later documents: appended to the shared sets) equal a plain recount, in JSON too."""
    folded = merge_node_data(chain[0], chain[0])
    for mention in chain[1:]:
        folded = merge_node_data(folded, mention)
    expected = _reference_fold(chain)
    assert {key: getattr(folded, key) for key in expected} == expected
    plain = folded.model_copy(update={k: v for k, v in expected.items() if k.endswith("sources")})
    assert folded.model_dump_json() == plain.model_dump_json()
    assert list(folded.summary_sources) == list(expected["summary_sources"])  # type: ignore[arg-type]
