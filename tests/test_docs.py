"""What the docs name is what the code reads: every setting in the README's table, every field of a
sources.yaml entry in docs/dagster.md's example (which loads as written), every mapping field in
docs/mappings.md's example (which maps a CSV with its columns), and the eval run config it shows."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import yaml

from graphwalk_core.ingest.pipeline import ingest
from graphwalk_core.ingest.sources.mapping import RecordMapping, RelationColumn
from graphwalk_core.ingest.sources.specs import SourceSpec, load_sources, source_from_arg
from graphwalk_core.settings import GraphwalkSettings
from graphwalk_core.stores import MemoryGraphStore

REPO = Path(__file__).resolve().parents[1]


def section(doc: str, heading: str) -> str:
    """The text under ``## heading`` up to the next ``## `` heading."""
    text = (REPO / doc).read_text(encoding="utf-8")
    return text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]


def yaml_blocks(text: str) -> list[str]:
    """The ```yaml blocks of a doc's text."""
    return re.findall(r"```yaml\n(.*?)```", text, re.S)


def test_readme_configuration_table_names_every_variable_the_code_reads() -> None:
    table = section("README.md", "Configuration").split("\n\n")[1]
    documented = set(re.findall(r"`(GRAPHWALK_[A-Z0-9_]+)`", table))
    settings = {f"GRAPHWALK_{name.upper()}" for name in GraphwalkSettings.model_fields}
    code = "\n".join(
        path.read_text(encoding="utf-8")
        for folder in ("graphwalk_core", "graphwalk_dagster")
        for path in sorted((REPO / folder).rglob("*.py"))
    )
    read = {name for name in re.findall(r"GRAPHWALK_[A-Z0-9_]+", code) if not name.endswith("_")}
    assert sorted((settings | read) - documented) == []
    # the intro says the last three rows are read from the environment only, not from .env
    last_rows = [re.findall(r"`(GRAPHWALK_[A-Z0-9_]+)`", row)[0] for row in table.splitlines()[-3:]]
    assert sorted(last_rows) == sorted(read - settings)
    assert "except the last three rows" in section("README.md", "Configuration")


def test_dagster_doc_sources_example_loads_and_names_every_field(tmp_path: Path) -> None:
    [example] = re.findall(
        r"```yaml\n(.*?)```", section("docs/dagster.md", "Declaring sources (`sources.yaml`)"), re.S
    )
    (tmp_path / "sources.yaml").write_text(example, encoding="utf-8")
    [spec] = load_sources(tmp_path / "sources.yaml")
    fields = set(re.findall(r"^\s*-?\s*(\w+):", example, re.M))
    assert fields == set(SourceSpec.model_fields) - {"base_dir"}
    defaults = SourceSpec(id="x", kind="files", path_or_url="x")
    assert (spec.routing, spec.max_bytes, spec.allow_empty) == (
        defaults.routing,
        defaults.max_bytes,
        defaults.allow_empty,
    )
    assert spec.resolve(spec.path_or_url) == tmp_path.resolve() / "films"


def test_mappings_doc_example_ingests_a_csv_with_its_columns(tmp_path: Path) -> None:
    """docs/mappings.md's example names every mapping field and maps a CSV holding its columns, no skip."""
    [example] = re.findall(
        r"```yaml\n(.*?)```", (REPO / "docs" / "mappings.md").read_text(encoding="utf-8"), re.S
    )
    fields = set(re.findall(r"^\s*(\w+):", example, re.M)) | set(re.findall(r"[{,]\s*(\w+):", example))
    assert fields - {"films.csv"} == set(RecordMapping.model_fields) | set(RelationColumn.model_fields)
    (tmp_path / "mapping.yaml").write_text(example, encoding="utf-8")
    (tmp_path / "films").mkdir()
    (tmp_path / "films" / "films.csv").write_text(
        "id,title,year,genre,director,stars,summary\n"
        'f1,Heat,1995,crime,Michael Mann,Al Pacino|Robert De Niro,"A thief, a detective."\n',
        encoding="utf-8",
    )
    source = source_from_arg(str(tmp_path / "films"), mapping=str(tmp_path / "mapping.yaml"))
    report = asyncio.run(ingest(source, MemoryGraphStore(), routing="exact"))
    assert (report.new, report.skipped) == (1, [])
    assert source.mappings["films.csv"].key == "id"  # type: ignore[attr-defined]


def test_dagster_doc_hf_run_config_passes_dagsters_config_check() -> None:
    """docs/dagster.md's ``eval_questions`` run config is what Dagster accepts (a misspelled key is not)."""
    from dagster._config import process_config, resolve_to_config_type

    from graphwalk_dagster.defs.eval.assets import EvalQuestionsConfig

    blocks = re.findall(
        r"```yaml\n(.*?)```", (REPO / "docs" / "dagster.md").read_text(encoding="utf-8"), re.S
    )
    [config] = [
        yaml.safe_load(block)["ops"]["eval_questions"]["config"] for block in blocks if "ops:" in block
    ]
    schema = resolve_to_config_type(EvalQuestionsConfig.to_config_schema().as_field().config_type)
    checked = process_config(schema, config)
    assert checked.success, checked.errors
    assert checked.value["hf"]["columns"] == {
        "question": "question",
        "answers": "answer",
        "passages": "context",
        "supporting": "supporting_facts",
    }
    assert not process_config(schema, {**config, "hf": {**config["hf"], "colums": {}}}).success
