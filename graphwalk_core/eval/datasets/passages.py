"""Pooling passages from many questions into one corpus with stable, unique ids."""

from __future__ import annotations

from graphwalk_core.eval.datasets.base import Passage


class PassagePool:
    """Deduplicates (title, text) pairs; the id is the title, suffixed ``#2``, ``#3`` on a clash."""

    def __init__(self) -> None:
        self._by_content: dict[tuple[str, str], str] = {}
        self._titles: dict[str, int] = {}
        self.passages: list[Passage] = []

    def add(self, title: str, text: str) -> str:
        """The id of this passage (added when new)."""
        key = (title.strip(), text.strip())
        found = self._by_content.get(key)
        if found is not None:
            return found
        count = self._titles.get(key[0], 0) + 1
        self._titles[key[0]] = count
        pid = key[0] if count == 1 else f"{key[0]}#{count}"
        self._by_content[key] = pid
        self.passages.append(Passage(id=pid, title=key[0], text=key[1]))
        return pid
