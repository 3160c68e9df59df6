"""Dataset loaders on the shared data (exact counts and records) and on small bad files."""

from __future__ import annotations

import csv
import json
import random
from pathlib import Path

import pytest
from conftest import shared_path

from graphwalk_core.errors import InputError
from graphwalk_core.eval.datasets import load_dataset, seeded_subset


@pytest.fixture
def data_dir() -> Path:
    return shared_path("data")


def test_metaqa_full_split_and_first_record(data_dir: Path) -> None:
    ds = load_dataset("metaqa-2hop", data_dir=data_dir)
    assert (ds.name, ds.split, len(ds.questions), ds.match) == ("metaqa-2hop", "dev", 14872, "exact")
    q = ds.questions[0]
    assert q.id == "metaqa-2hop-dev-00001"
    assert q.text == "what are the languages spoken in the films directed by Joel Zwick"
    assert (q.gold, q.hops, q.qtype, q.topic, q.gold_start) == (
        ["Greek"],
        2,
        "director_to_movie_to_language",
        "Joel Zwick",
        "Joel Zwick",
    )
    assert ds.knowledge.kb_path == data_dir / "metaqa" / "kb.txt"
    assert len(load_dataset("metaqa-1hop", split="test", data_dir=data_dir).questions) == 9947


def test_seeded_subset_is_stable_and_seed_dependent(data_dir: Path) -> None:
    ids = [q.id for q in load_dataset("metaqa-2hop", n=3, seed=1, data_dir=data_dir).questions]
    assert ids == ["metaqa-2hop-dev-14603", "metaqa-2hop-dev-13061", "metaqa-2hop-dev-11769"]
    more = [q.id for q in load_dataset("metaqa-2hop", n=10, seed=1, data_dir=data_dir).questions]
    assert more[:3] == ids  # a larger subset extends a smaller one
    other = [q.id for q in load_dataset("metaqa-2hop", n=3, seed=2, data_dir=data_dir).questions]
    assert other != ids
    full = load_dataset("metaqa-2hop", data_dir=data_dir).questions
    shuffled = full[::-1]
    random.Random(3).shuffle(shuffled)
    assert [q.id for q in seeded_subset(shuffled, 3, 1)] == ids  # independent of file order


def test_hotpotqa_both_formats(data_dir: Path) -> None:
    ds = load_dataset("hotpotqa", data_dir=data_dir)
    assert (len(ds.questions), len(ds.knowledge.passages), ds.match) == (300, 2923, "token")
    q = ds.questions[0]
    assert (q.id, q.gold, q.extra["supporting"]) == (
        "5a85ea095542994775f606a8",
        ["Animorphs"],
        ["The Hork-Bajir Chronicles", "Animorphs"],
    )
    orig = load_dataset("hotpotqa", path=data_dir / "hotpotqa" / "hipporag_hotpotqa_train100.json")
    assert (len(orig.questions), len(orig.knowledge.passages)) == (100, 994)
    first = orig.questions[0]
    assert (first.gold, first.qtype, first.extra["supporting"]) == (
        ["a spirit"],
        "bridge",
        ["Lilu (mythology)", "Alû"],
    )
    small = load_dataset("hotpotqa", n=2, data_dir=data_dir)
    assert len(small.questions) == 2 and len(small.knowledge.passages) == 20  # pooled over the subset only


def test_a_dev_only_dataset_refuses_another_split_unless_its_file_is_given(data_dir: Path) -> None:
    """The shared HotpotQA and 2Wiki files are dev questions: a test run of them would be dev data
    labelled test. The error names the options by load_dataset's parameters (the CLI by its flags)."""
    for name, files in (
        ("hotpotqa", "hotpotqa/hotpotqa_dev_ircotfmt_300.jsonl"),
        ("2wiki", "2wiki/format_sample_2.json"),
        ("2wiki-retrieval", "2wiki/corpus.json, 2wiki/retrieval_questions_51.json"),
    ):
        with pytest.raises(InputError) as error:
            load_dataset(name, split="test", data_dir=data_dir)
        assert str(error.value) == (
            f"{name} has dev questions only in the data folder ({files}): split=test needs a question "
            "file of that split (path)"
        )
    own = load_dataset(
        "hotpotqa", split="test", n=2, path=data_dir / "hotpotqa" / "hipporag_hotpotqa_train100.json"
    )
    assert (own.split, len(own.questions)) == ("test", 2)


def test_twowiki_official_format_and_pooled_graph(data_dir: Path) -> None:
    ds = load_dataset("2wiki", data_dir=data_dir)
    assert [q.qtype for q in ds.questions] == ["compositional", "comparison"]
    q = ds.questions[0]
    assert (q.text, q.gold, q.hops, q.gold_start) == (
        "When did Lothair Ii's mother die?",
        ["20 March 851"],
        2,
        "Lothair II",
    )
    assert ds.knowledge.triples == (
        ("Lothair II", "mother", "Ermengarde of Tours"),
        ("Ermengarde of Tours", "date of death", "20 March 851"),
        ("Aas Ka Panchhi", "publication date", "1961"),
        ("Phoolwari", "publication date", "1946"),
    )
    assert len(ds.knowledge.passages) == 20


def test_twowiki_retrieval(data_dir: Path) -> None:
    ds = load_dataset("2wiki-retrieval", data_dir=data_dir)
    assert (len(ds.questions), len(ds.knowledge.passages)) == (51, 6119)
    assert ds.questions[0].text == "Where was the performer of song B Boy (Song) detained?"
    assert ds.questions[0].extra["supporting"] == ["B Boy (song)", "Meek Mill"]


def test_custom_csv_and_jsonl(tmp_path: Path) -> None:
    kb = tmp_path / "kb.txt"
    kb.write_text("A|r|B\n")
    csv_file = tmp_path / "q.csv"
    csv_file.write_text("question,answers,start\nwho is r of A,B|C,A\nwhat,D,\n")
    ds = load_dataset("custom", path=csv_file, kb=kb)
    assert [(q.id, q.gold, q.gold_start) for q in ds.questions] == [
        ("q00001", ["B", "C"], "A"),
        ("q00002", ["D"], None),
    ]
    jl = tmp_path / "q.jsonl"
    jl.write_text('{"id": "x", "question": "who", "answers": ["B"], "hops": 1}\n\n')
    ds = load_dataset("custom", path=jl, kb=kb)
    assert [(q.id, q.gold, q.hops) for q in ds.questions] == [("x", ["B"], 1)]


def test_custom_csv_reads_a_field_longer_than_the_csv_modules_default_limit(tmp_path: Path) -> None:
    """The limit is the process's: it must not matter whether a large CSV was ingested before."""
    kb = tmp_path / "kb.txt"
    kb.write_text("A|r|B\n")
    long_question = "who is " + "very " * 30_000 + "r of A"  # 150,013 characters
    csv_file = tmp_path / "q.csv"
    csv_file.write_text(f'question,answers\n"{long_question}",B\n')
    limit = csv.field_size_limit(131_072)  # the module's default, as in a fresh process
    try:
        ds = load_dataset("custom", path=csv_file, kb=kb)
    finally:
        csv.field_size_limit(limit)
    assert [(len(q.text), q.gold) for q in ds.questions] == [(len(long_question), ["B"])]


def test_custom_supporting_passages_over_a_corpus(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.json"
    corpus.write_text(json.dumps([{"title": "Alpha", "text": "Alpha is B."}, {"title": "Beta", "text": "x"}]))
    jl = tmp_path / "q.jsonl"
    jl.write_text(
        '{"id": "a", "question": "who", "answers": ["B"], "supporting": ["Alpha", "Beta"]}\n'
        '{"id": "b", "question": "what", "answers": "B", "supporting": "Beta"}\n'
        '{"id": "c", "question": "why", "answers": "B"}\n'
    )
    ds = load_dataset("custom", path=jl, corpus=corpus)
    assert [q.extra.get("supporting") for q in ds.questions] == [["Alpha", "Beta"], ["Beta"], None]
    jl.write_text('{"id": "a", "question": "who", "answers": "B", "supporting": ["Gamma"]}\n')
    with pytest.raises(InputError, match=r"q\.jsonl: question a: supporting titles not in .*: \['Gamma'\]"):
        load_dataset("custom", path=jl, corpus=corpus)
    kb = tmp_path / "kb.txt"
    kb.write_text("A|r|B\n")
    with pytest.raises(InputError, match=r"question a: 'supporting' passages need corpus, not kb$"):
        load_dataset("custom", path=jl, kb=kb)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("question,answers\n,B\n", r"q\.csv:2: 'question' is missing"),
        ("question\nwho\n", r"q\.csv:2: 'answers' is missing"),
        ("question,answers,hops\nwho,B,two\n", r"q\.csv:2: 'hops' must be an integer"),
        ("id,question,answers\n1,a,b\n1,c,d\n", r"q\.csv:3: question id '1' repeats the one at line 2$"),
        ("question,answers\nwho,B\nwhat, | \n", r"q\.csv:3: 'answers' is empty"),
        ("", r"^no questions in .*q\.csv$"),
        ("\n\n", r"^no questions in .*q\.csv$"),
        ("question,answers,start\n", r"^no questions in .*q\.csv$"),
        # the line of the row itself, past blank lines and a quoted field spanning two lines
        ('question,answers\nwho,B\n\n"multi\nline",C\nwhat,\n', r"q\.csv:6: 'answers' is empty$"),
        # an unquoted comma in the answers ("Smith, John") dropped the field after it
        ("question,answers\nwho,B\nwho wrote it,Smith, John\n", r"q\.csv:3: malformed CSV row: 3 fields"),
        ('question,answers\n"who,B\nwhat,C\n', r"q\.csv:2: malformed CSV: a quote opened on this line"),
    ],
)
def test_custom_bad_rows_name_file_and_line(tmp_path: Path, content: str, message: str) -> None:
    kb = tmp_path / "kb.txt"
    kb.write_text("A|r|B\n")
    path = tmp_path / "q.csv"
    path.write_text(content)
    with pytest.raises(InputError, match=message):
        load_dataset("custom", path=path, kb=kb)


def test_custom_jsonl_errors_name_file_and_line(tmp_path: Path) -> None:
    kb = tmp_path / "kb.txt"
    kb.write_text("A|r|B\n")
    path = tmp_path / "q.jsonl"
    path.write_text('{"question": "who", "answers": ["B"]}\n{"question": "what", "answers": []}\n')
    with pytest.raises(InputError, match=r"q\.jsonl:2: 'answers' is empty$"):
        load_dataset("custom", path=path, kb=kb)
    path.write_text("\n  \n")
    with pytest.raises(InputError, match=r"^no questions in .*q\.jsonl$"):
        load_dataset("custom", path=path, kb=kb)
    path.write_text('{"question": "who", "answers": ["B"]}\n{"question": "wh')  # cut mid-write
    with pytest.raises(InputError) as cut:
        load_dataset("custom", path=path, kb=kb)
    assert str(cut.value) == f"{path}:2: invalid JSON: Unterminated string starting at column 14"


@pytest.mark.parametrize(
    ("row", "message"),
    [
        # a gold set a system could only match by answering nothing: every metric would be 1 for an
        # empty prediction
        ('"answers": ["", " "]', "'answers' is empty"),
        (
            '"answers": ["The", "?"]',
            "'answers' ['The', '?'] are nothing once normalized (compared "
            "lowercased, without punctuation and the words a/an/the)",
        ),
        # a JSON value of the wrong type: a clear error, not a pydantic traceback
        ('"answers": ["B"], "start": 5', "'start' must be a string, got 5"),
        ('"answers": ["B"], "qtype": ["x"]', "'qtype' must be a string, got ['x']"),
        # int() cut 2.5 to 2 and read true as 1: the question was grouped under another hop count
        ('"answers": ["B"], "hops": 2.5', "'hops' must be an integer, got 2.5"),
        ('"answers": ["B"], "hops": true', "'hops' must be an integer, got True"),
    ],
)
def test_custom_jsonl_bad_values_name_file_and_line(tmp_path: Path, row: str, message: str) -> None:
    kb = tmp_path / "kb.txt"
    kb.write_text("A|r|B\n")
    path = tmp_path / "q.jsonl"
    path.write_text('{"question": "who", "answers": ["B"]}\n{"question": "who", ' + row + "}\n")
    with pytest.raises(InputError) as error:
        load_dataset("custom", path=path, kb=kb)
    assert str(error.value) == f"{path}:2: {message}"


@pytest.mark.parametrize(
    ("name", "content", "line"),
    [
        ("q.csv", "question,answers\nwho,B\nqui est-ce,Andr\xe9\n", 3),
        ("q.jsonl", '{"question": "who", "answers": "B"}\n{"question": "qui", "answers": "Andr\xe9"}\n', 2),
    ],
)
def test_custom_non_utf8_file_names_file_and_line(tmp_path: Path, name: str, content: str, line: int) -> None:
    """A Latin-1 file (é is byte 0xe9) is a clean error, not a UnicodeDecodeError traceback."""
    kb = tmp_path / "kb.txt"
    kb.write_text("A|r|B\n")
    path = tmp_path / name
    path.write_bytes(content.encode("latin-1"))
    with pytest.raises(
        InputError, match=rf"{name}:{line}: not UTF-8 text \(byte 0xe9\); save the file as UTF-8$"
    ):
        load_dataset("custom", path=path, kb=kb)


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("bom.csv", "\ufeffquestion,answers,start\r\nwho is r of A,B,A\r\n"),  # Excel's "CSV UTF-8"
        ("Q.CSV", "question,answers,start\nwho is r of A,B,A\n"),
        ("q.JSONL", '{"question": "who is r of A", "answers": ["B"], "start": "A"}\n'),
    ],
)
def test_custom_bom_and_upper_case_suffixes_load(tmp_path: Path, name: str, content: str) -> None:
    kb = tmp_path / "kb.txt"
    kb.write_text("A|r|B\n")
    path = tmp_path / name
    path.write_bytes(content.encode("utf-8"))
    questions = load_dataset("custom", path=path, kb=kb).questions
    assert [(q.text, q.gold, q.gold_start) for q in questions] == [("who is r of A", ["B"], "A")]


def test_missing_files_and_bad_names(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"MetaQA QA file not found: .*qa_dev\.txt"):
        load_dataset("metaqa-1hop", data_dir=tmp_path)
    with pytest.raises(InputError, match="unknown dataset 'webqsp'"):
        load_dataset("webqsp", data_dir=tmp_path)
    with pytest.raises(InputError, match=r"exactly one of kb \(triples\) or corpus \(passages\)$"):
        (tmp_path / "q.csv").write_text("question,answers\nq,a\n")
        load_dataset("custom", path=tmp_path / "q.csv")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question_id": "1"}\n{oops\n')
    with pytest.raises(InputError, match=r"bad\.jsonl:1: not an IRCoT HotpotQA record"):
        load_dataset("hotpotqa", path=bad)
    record = {"question_id": "1", "question_text": None, "answers_objects": [], "contexts": []}
    bad.write_text(json.dumps(record) + "\n")  # a value of the wrong type: no pydantic traceback
    with pytest.raises(InputError) as error:
        load_dataset("hotpotqa", path=bad)
    assert str(error.value) == (
        f"{bad}:1: not an IRCoT HotpotQA record (question_text: Input should be a valid string)"
    )
    with pytest.raises(InputError, match=r"^n must be at least 1, got 0$"):
        (tmp_path / "w.json").write_text(json.dumps([]))
        load_dataset("2wiki", path=tmp_path / "w.json", n=0)


def test_metaqa_bad_line_names_file_and_line(tmp_path: Path) -> None:
    root = tmp_path / "metaqa"
    (root / "1-hop" / "vanilla").mkdir(parents=True)
    (root / "1-hop" / "vanilla" / "qa_dev.txt").write_text("who directed [X]\tY\nno topic here\tZ\n")
    (root / "1-hop" / "qa_dev_qtype.txt").write_text("movie_to_director\nmovie_to_director\n")
    (root / "kb.txt").write_text("X|directed_by|Y\n")
    with pytest.raises(InputError, match=r"qa_dev\.txt:2: expected one \[bracketed\] topic entity, found 0"):
        load_dataset("metaqa-1hop", data_dir=tmp_path)


def test_a_benchmark_file_that_is_not_utf8_names_file_and_line(tmp_path: Path) -> None:
    hop = tmp_path / "metaqa" / "1-hop"
    (hop / "vanilla").mkdir(parents=True)
    qa = hop / "vanilla" / "qa_dev.txt"
    qa.write_bytes(b"who directed [Heat]\tMichael Mann\nwho wrote [Caf\xe9]\tNobody\n")
    (hop / "qa_dev_qtype.txt").write_text("movie_to_director\nmovie_to_writer\n")
    (tmp_path / "metaqa" / "kb.txt").write_text("Heat|directed_by|Michael Mann\n")
    with pytest.raises(InputError) as error:
        load_dataset("metaqa-1hop", data_dir=tmp_path)
    assert str(error.value) == f"{qa}:2: not UTF-8 text (byte 0xe9); save the file as UTF-8"


def _ircot(qid: str, answer: str) -> str:
    ctx = [{"title": answer, "paragraph_text": f"{answer} text", "is_supporting": True}]
    record = {"question_id": qid, "question_text": f"q {answer}", "answers_objects": [{"spans": [answer]}]}
    return json.dumps({**record, "contexts": ctx}) + "\n"


def _official(qid: str, answer: str) -> dict:
    return {"_id": qid, "question": f"q {answer}", "answer": answer, "context": [[answer, ["s."]]],
            "supporting_facts": [[answer, 0]], "evidences": [[answer, "r", "o"]]}  # fmt: skip


def test_a_repeated_question_id_is_an_error_naming_file_and_record(tmp_path: Path) -> None:
    """Not one question silently kept (a seeded subset chooses by id) or two with one's passages."""
    jl = tmp_path / "h.jsonl"
    jl.write_text(_ircot("a", "A") + _ircot("b", "B") + _ircot("a", "C"))
    for n in (None, 3):
        with pytest.raises(InputError) as error:
            load_dataset("hotpotqa", path=jl, n=n)
        assert str(error.value) == f"{jl}:3: question id 'a' repeats the one at line 1"
    orig = tmp_path / "h.json"
    orig.write_text(json.dumps([_official("a", "A"), _official("a", "C")]))
    with pytest.raises(InputError) as error:
        load_dataset("hotpotqa", path=orig)
    assert str(error.value) == f"{orig}: record 1: question id 'a' repeats the one at record 0"
    wiki = tmp_path / "w.json"
    wiki.write_text(json.dumps([_official("x", "A"), _official("y", "B"), _official("x", "C")]))
    with pytest.raises(InputError) as error:
        load_dataset("2wiki", path=wiki, n=2)
    assert str(error.value) == f"{wiki}: record 2: question id 'x' repeats the one at record 0"
