"""How a trained decider reads a live question: the path's moves, oriented as they were walked."""

from __future__ import annotations

from graphwalk_core.decisions.base import ChoiceQuestion, JSONContent
from graphwalk_core.decisions.fake import FakeDecisionBackend
from graphwalk_core.decisions.local import last_step
from graphwalk_core.decisions.views import view_of
from graphwalk_core.stores.memory import MemoryGraphStore
from graphwalk_core.traversal import prompts
from graphwalk_core.traversal.engine import Traverser


def to_nolan(question: ChoiceQuestion, state: JSONContent) -> dict[str, float]:
    """Memento's walk goes to Christopher Nolan and stops there; Avatar's is unsure."""
    assert isinstance(question.instructions, dict)
    here = question.instructions["current"]["node"]
    if here == "Avatar":
        return dict.fromkeys(question.options, 1.0)
    return {
        label: float(label == "STOP" if here == "Christopher Nolan" else label == "o1")
        for label in question.options
    }


async def test_an_entity_walk_from_the_second_start_reads_its_first_hop_as_walked() -> None:
    # edge steps were oriented from the first start's name: Memento --directed_by--> Christopher Nolan,
    # walked out of Memento (the second start), read as directed_by "in"
    triples = [
        ("Avatar", "directed_by", "James Cameron"),
        ("Memento", "directed_by", "Christopher Nolan"),
        ("Inception", "directed_by", "Christopher Nolan"),
    ]
    store = MemoryGraphStore.from_triples(triples, source_id="test")
    decider = FakeDecisionBackend(script=to_nolan)
    await Traverser(store, decider).walk("who?", ["Avatar", "Memento"])
    request = decider.requests[1]
    question = request.questions[0]
    assert question.instructions["path"] == ["Memento --directed_by--> Christopher Nolan"]  # type: ignore[index]
    assert view_of(request.state, question).path == (("directed_by", "out"),)


def test_path_steps_of_relations_with_spaces_are_read() -> None:
    # a triples file may name a relation "directed by": \S+ in the step patterns dropped such steps,
    # so the decider saw a shorter path
    relation = ChoiceQuestion(
        key="b0",
        instructions=prompts.instructions("relation", ["directed by (in)"], ["Christopher Nolan"], 1),
        options={"o1": prompts.relation_option("directed by", "out", ["x"], 1, glosses={}), "STOP": "stop"},
    )
    assert view_of({"query": "q"}, relation).path == (("directed by", "in"),)
    assert last_step(relation.instructions) == ("directed by", "in")
    entity = ChoiceQuestion(
        key="b0",
        instructions=prompts.instructions(
            "entity", ["Memento --directed by--> Christopher Nolan (in)"], ["Christopher Nolan (in)"], 1
        ),
        options={"o1": "x", "STOP": "stop"},
    )
    assert view_of({"query": "q"}, entity).path == (("directed by", "out"),)
