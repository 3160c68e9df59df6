"""``python -m graphwalk_core.ingest SOURCE --graph G``: the ingest command without the rest of the CLI."""

import typer

from graphwalk_core.cli.ingest import ingest

if __name__ == "__main__":
    typer.run(ingest)
