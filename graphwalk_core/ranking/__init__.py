"""Passage rankers over ingested text: Personalized PageRank and bounded typed-path ranking.

Both rank the corpus passages for a question over one :class:`PassageGraph` (passages and the entity
nodes ingestion extracted from them) and return a :class:`RankResult` naming the versioned profile
that produced it.
"""
