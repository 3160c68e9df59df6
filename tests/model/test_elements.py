"""Element models: instances that set every field share one fields set, with pydantic's behaviour kept."""

from __future__ import annotations

import pickle

from pydantic import TypeAdapter

from graphwalk_core.model import Edge, Node, Provenance

RECORD = {
    "source_id": "docs/a",
    "content_hash": "c" * 64,
    "extractor": "nlp",
    "confidence": 0.5,
    "start": 3,
    "end": 9,
}


def test_records_setting_every_field_share_one_fields_set() -> None:
    parsed = TypeAdapter(tuple[Provenance, ...]).validate_json(
        f"[{Provenance(**RECORD).model_dump_json()}, {Provenance(**RECORD | {'start': 4}).model_dump_json()}]"
    )
    built = Provenance(**RECORD)
    assert parsed[0].__pydantic_fields_set__ is parsed[1].__pydantic_fields_set__
    assert built.__pydantic_fields_set__ is parsed[0].__pydantic_fields_set__
    assert built.model_fields_set == set(RECORD)


def test_a_record_setting_some_fields_keeps_its_own() -> None:
    partial = Provenance(source_id="docs/a", confidence=0.5)
    assert partial.model_fields_set == {"source_id", "confidence"}
    assert partial.model_dump(exclude_unset=True) == {"source_id": "docs/a", "confidence": 0.5}
    assert Provenance(**RECORD).model_dump(exclude_unset=True) == RECORD


def test_copies_get_their_own_set_and_leave_the_shared_one_alone() -> None:
    shared = Provenance(**RECORD)
    copy = shared.model_copy(update={"confidence": 0.25})
    assert copy.__pydantic_fields_set__ is not shared.__pydantic_fields_set__
    assert (copy.confidence, shared.confidence) == (0.25, 0.5)
    assert shared.model_fields_set == set(RECORD)
    grown = Provenance(source_id="docs/b").model_copy(update={"end": 1})
    assert grown.model_fields_set == {"source_id", "end"}


def test_nodes_and_edges_parsed_from_their_json_share_theirs() -> None:
    prov = Provenance(**RECORD)
    node = Node(id="n1", name="Ada", provenance=(prov,), name_sources={"Ada": (prov,)})
    again = [Node.model_validate_json(node.model_dump_json()) for _ in range(2)]
    assert again[0].__pydantic_fields_set__ is again[1].__pydantic_fields_set__
    assert again[0] == node and again[0].model_dump_json() == node.model_dump_json()
    edge = Edge(source="n1", target="n2", type="knows", provenance=(prov,))
    parsed = Edge.model_validate_json(edge.model_dump_json(exclude={"id"}))
    assert parsed == edge and parsed.model_fields_set == set(Edge.model_fields)
    assert pickle.loads(pickle.dumps(again[0])) == node
