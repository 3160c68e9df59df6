"""Default locations of the sample data shipped with the repository."""

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[3]
DATA_DIR = REPO_ROOT / "data"
SOURCES_FILE = DATA_DIR / "sources.yaml"
