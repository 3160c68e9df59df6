"""The real MetaQA KB (../shared): counts from ../shared/data/README.md, hubs, Parquet round trip."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from conftest import shared_path

from graphwalk_core.eval.datasets.metaqa import metaqa_node_type
from graphwalk_core.model import Provenance
from graphwalk_core.stores import Adjacent, MemoryGraphStore
from graphwalk_core.stores.triples import read_triples

#: Relation counts over the KB's 134,741 lines (duplicates included), as the README lists them.
README_LINE_COUNTS = {
    "starred_actors": 33_735,
    "has_tags": 28_944,
    "written_by": 19_543,
    "release_year": 16_726,
    "directed_by": 15_966,
    "has_genre": 15_895,
    "in_language": 3_482,
    "has_imdb_rating": 328,
    "has_imdb_votes": 122,
}


@pytest.fixture(scope="module")
def kb() -> MemoryGraphStore:
    triples = read_triples(shared_path("data", "metaqa", "kb.txt"))
    return MemoryGraphStore.from_triples(triples, source_id="metaqa/kb", node_type_for=metaqa_node_type)


@pytest.mark.shared
def test_kb_lines_match_readme() -> None:
    triples = list(read_triples(shared_path("data", "metaqa", "kb.txt")))
    assert len(triples) == 134_741
    assert len(set(triples)) == 133_582
    assert dict(Counter(r for _, r, _ in triples)) == README_LINE_COUNTS


@pytest.mark.shared
async def test_kb_store_counts_hubs_and_lookup(kb: MemoryGraphStore) -> None:
    assert await kb.counts() == (43_234, 133_582)
    unique = Counter(relation for _, relation, _ in kb.triples())
    assert sum(unique.values()) == 133_582
    assert all(unique[r] <= README_LINE_COUNTS[r] for r in README_LINE_COUNTS)
    assert await kb.degree("Drama", direction="in") == 4_176
    assert await kb.degree("Drama", direction="out") == 0
    drama = await kb.adjacent("Drama", edge_types={"has_genre"})
    assert len(drama) == 4_176 and drama[0].direction == "in"
    assert sorted(await kb.adjacent("Kismet", direction="out", edge_types=["starred_actors"])) == [
        Adjacent("starred_actors", "Edward Arnold", "out"),
        Adjacent("starred_actors", "James Craig", "out"),
        Adjacent("starred_actors", "Marlene Dietrich", "out"),
        Adjacent("starred_actors", "Ronald Colman", "out"),
    ]
    assert [(n.id, n.type) for n in await kb.find_nodes(name="CLINT EASTWOOD")] == [
        ("Clint Eastwood", "person"),
        ("clint eastwood", "tag"),
    ]
    kismet = await kb.get_node("Kismet")
    assert kismet is not None and kismet.provenance == (Provenance(source_id="metaqa/kb"),)


@pytest.mark.shared
async def test_kb_parquet_round_trip(kb: MemoryGraphStore, tmp_path: Path) -> None:
    kb.save(tmp_path / "kb")
    loaded = MemoryGraphStore.load(tmp_path / "kb")
    assert await loaded.counts() == (43_234, 133_582)
    assert sorted(await loaded.adjacent("Drama")) == sorted(await kb.adjacent("Drama"))
    assert await loaded.get_node("Kismet") == await kb.get_node("Kismet")
    assert sorted(loaded.triples()) == sorted(kb.triples())
