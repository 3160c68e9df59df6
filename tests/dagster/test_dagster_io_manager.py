"""The JSON IO manager keeps every asset output under ``<warehouse>/objects``, whatever the partition key."""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg

from graphwalk_dagster.defs.ingest.partitions import SOURCES_PARTITION, source_partitions
from graphwalk_dagster.defs.shared.resources import JsonIOManager, WarehouseResource


@dg.asset(partitions_def=source_partitions)
def upstream() -> dict[str, int]:
    return {"a": 1}


@dg.asset(partitions_def=source_partitions)
def downstream(upstream: dict[str, int]) -> dict[str, int]:
    return upstream


def _failure(result: dg.ExecuteInProcessResult) -> str:
    """The step failure's error, its causes included."""
    (event,) = [e for e in result.all_events if e.is_step_failure]
    assert event.step_failure_data.error is not None
    return event.step_failure_data.error.to_string()


def test_a_partition_key_with_a_slash_reads_and_writes_nothing_outside_the_warehouse(tmp_path: Path) -> None:
    """Dagster checks no dynamic partition key (the UI and GraphQL add any): ``../../../creds`` made the
    IO manager read ``<warehouse>/../creds.json`` (its contents then shown in the run's error) and write
    there."""
    root = tmp_path / "wh"
    (root / "objects" / "upstream").mkdir(parents=True)  # as after any earlier run
    (tmp_path / "creds.json").write_text(json.dumps({"client_secret": "TOPSECRET"}), encoding="utf-8")
    key = "../../../creds"
    resources = {"io_manager": JsonIOManager(warehouse=WarehouseResource(root=str(root)))}
    expected = (
        f"partition {key!r} cannot name a file under the warehouse's objects folder (it holds a '/'): "
        "delete that partition (a source id holds no '/')"
    )
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions(SOURCES_PARTITION, [key])
        read = dg.materialize(
            [upstream.to_source_asset(), downstream],
            partition_key=key,
            instance=instance,
            resources=resources,
            raise_on_error=False,
        )
        written = dg.materialize(
            [upstream], partition_key=key, instance=instance, resources=resources, raise_on_error=False
        )
    for result in (read, written):
        assert not result.success
        text = _failure(result)
        assert expected in text
        assert "TOPSECRET" not in text
    assert json.loads((tmp_path / "creds.json").read_text(encoding="utf-8")) == {"client_secret": "TOPSECRET"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["creds.json", "wh"]


def test_outputs_never_follow_a_symlink_out_of_the_warehouse(tmp_path: Path) -> None:
    """An asset's folder under objects/ that is a symlink to another place had its outputs written there."""
    root, outside = tmp_path / "wh", tmp_path / "outside"
    outside.mkdir()
    (root / "objects").mkdir(parents=True)
    (root / "objects" / "upstream").symlink_to(outside, target_is_directory=True)
    resources = {"io_manager": JsonIOManager(warehouse=WarehouseResource(root=str(root)))}
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions(SOURCES_PARTITION, ["films"])
        result = dg.materialize(
            [upstream], partition_key="films", instance=instance, resources=resources, raise_on_error=False
        )
    assert not result.success
    assert (
        f"warehouse folder {root / 'objects' / 'upstream'} leads out of the warehouse {root}, to {outside} "
        "(a symlink?): nothing is read or written there; replace the link with a folder"
    ) in _failure(result)
    assert list(outside.iterdir()) == []


def test_a_stored_output_that_does_not_read_names_its_file_and_the_asset_to_materialize(
    tmp_path: Path,
) -> None:
    """A JSON file cut short (a full disk) or written by an older graphwalk whose model had other fields
    failed the run with pydantic's bare ValidationError, naming neither the file nor what to do."""
    root = tmp_path / "wh"
    stored = root / "objects" / "upstream" / "films.json"
    stored.parent.mkdir(parents=True)
    resources = {"io_manager": JsonIOManager(warehouse=WarehouseResource(root=str(root)))}
    errors = []
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions(SOURCES_PARTITION, ["films"])
        for text in ('{"a": ', '{"a": "one"}'):
            stored.write_text(text, encoding="utf-8")
            result = dg.materialize(
                [upstream.to_source_asset(), downstream],
                partition_key="films",
                instance=instance,
                resources=resources,
                raise_on_error=False,
            )
            assert not result.success
            errors.append(_failure(result))
    for error in errors:
        assert f"{stored} does not hold a stored upstream output this version reads" in error
        assert "materialize upstream again (the file is left as it is)" in error
    assert "EOF while parsing" in errors[0] and "Input should be a valid integer" in errors[1]
    assert stored.read_text(encoding="utf-8") == '{"a": "one"}'
