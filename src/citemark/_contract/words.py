"""Counted nouns, for every message and label that says how many: ``1 row``, ``2 rows``.

A module of its own, importing nothing, so that the adapters and the telemetry
paths can word a count without loading the report machinery.
"""

from __future__ import annotations

__all__ = ["counted"]


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """``count`` and its noun, plural unless it is 1: ``1 row``, ``2 rows``.

    Example:
        ```python
        from citemark._contract.words import counted

        print(counted(1, "row"), counted(3, "source"), counted(0, "reply", "replies"))
        #> 1 row 3 sources 0 replies
        ```
    """
    return f"{count} {noun if count == 1 else plural or noun + 's'}"
