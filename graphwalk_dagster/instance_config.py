"""An instance folder's dagster.yaml, kept up to date with the one the repository ships.

``graphwalk demo`` and ``make ui`` copy ``dagster.yaml`` into the instance folder once. A copy of an
earlier version (before the run queue's one-run-per-partition limit) was kept as it was, and two runs
of one source partition could then start at once, the one overtaken failing with StaleDiffError.
Such a copy, unedited, is replaced by the current file; an edited one is left as it is, with a
warning naming the file and the missing setting.

Run: ``python -m graphwalk_dagster.instance_config HOME [SHIPPED]`` (``make ui`` does).
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from graphwalk_core.files import write_text_atomic

REPO = Path(__file__).resolve().parents[1]
#: The run queue's limit every shipped config sets: one run of a partition at a time (docs/dagster.md).
PARTITION_LIMIT = {"key": "dagster/partition", "value": {"applyLimitPerUniqueValue": True}, "limit": 1}
#: That setting as a message names it.
SETTING = (
    "concurrency.runs.tag_concurrency_limits: "
    "[{key: dagster/partition, value: {applyLimitPerUniqueValue: true}, limit: 1}]"
)
#: sha256 of each earlier version of a shipped config -> that config's file name in the repository
#: (changing dagster.yaml or dagster.postgres.yaml: add the sha256 of the version it replaces).
EARLIER = {
    "614c60baeb91f8ad39e028b6e818084592c754bfc0840291882224d45001e3c9": "dagster.yaml",
    "3ec8994e06383828ae4587092a917e478a354e697206a4a9a75e80e42b1c7c01": "dagster.yaml",
    "603f09b4fcf791a9be5291e3c2b7cef60f96f4fd60f5152b166d471920954f79": "dagster.postgres.yaml",
    "778c1be76327af996bf3fac2007c93726c5e6d5df736761853fdad203227803f": "dagster.postgres.yaml",
    "67d93e65e58aa30fc0fad17311a0f535306be80b95476df323ac4157cf45907b": "dagster.postgres.yaml",
}


def has_partition_limit(config: Any) -> bool:
    """Whether an instance config limits the run queue to one run per partition (as
    ``concurrency.runs``, or Dagster's older ``run_queue`` / ``run_coordinator.config``)."""
    if not isinstance(config, dict):
        return False
    places = [
        (config.get("concurrency") or {}).get("runs"),
        config.get("run_queue"),
        (config.get("run_coordinator") or {}).get("config"),
    ]
    return any(
        PARTITION_LIMIT in (p.get("tag_concurrency_limits") or []) for p in places if isinstance(p, dict)
    )


def prepare(home: Path, shipped: Path = REPO / "dagster.yaml") -> str | None:
    """Make ``home/dagster.yaml`` (a copy of ``shipped`` when there is none; an unedited copy of an
    earlier shipped config replaced by the current one); a line to show when it was replaced, or when
    it lacks the one-run-per-partition limit and is left as it is (None otherwise)."""
    home.mkdir(parents=True, exist_ok=True)
    file = home / "dagster.yaml"
    if not file.exists():
        if shipped.is_file():
            shutil.copyfile(shipped, file)
        return None
    data = file.read_bytes()
    name = EARLIER.get(hashlib.sha256(data).hexdigest())
    if name is not None and (REPO / name).is_file():
        write_text_atomic((REPO / name).read_text(encoding="utf-8"), file)
        return f"updated {file}: it was an earlier {name}, without the limit of one run per partition"
    try:
        config = yaml.safe_load(data)
    except yaml.YAMLError:
        return None  # opening the instance names the error
    if has_partition_limit(config):
        return None
    return (
        f"warning: {file} lacks the run queue's limit of one run per partition ({SETTING}; {shipped} has "
        "it): two runs of one source can start at once, and the one overtaken fails with StaleDiffError. "
        "It is no copy of a dagster.yaml graphwalk shipped (edited?), so it is left as it is: add the "
        "setting (docs/dagster.md)"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m graphwalk_dagster.instance_config",
        description=__doc__.splitlines()[0].replace("``", "`"),
    )
    parser.add_argument("home", type=Path, help="the instance folder (DAGSTER_HOME)")
    parser.add_argument(
        "shipped", type=Path, nargs="?", default=REPO / "dagster.yaml", help="the config to copy there"
    )
    args = parser.parse_args(argv)
    if not args.shipped.is_file():
        parser.error(f"{args.shipped} is not a file: give a shipped instance config (dagster.postgres.yaml)")
    note = prepare(args.home, args.shipped)
    if note is not None:
        print(note, file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
