"""Evaluation datasets: MetaQA, HotpotQA, 2Wiki, 2Wiki retrieval and custom question files."""

from graphwalk_core.eval.datasets.base import Dataset, Knowledge, Passage, Question, seeded_subset
from graphwalk_core.eval.datasets.registry import DATASET_NAMES, load_dataset

__all__ = ["DATASET_NAMES", "Dataset", "Knowledge", "Passage", "Question", "load_dataset", "seeded_subset"]
