"""graphwalk: question answering over knowledge graphs by decision-guided walks."""

__version__ = "0.1.0"
