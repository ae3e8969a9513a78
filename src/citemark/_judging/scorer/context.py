"""Which row of a batch is being scored: a context variable `CitationScorer.score_many` sets.

Each of ``score_many``'s workers is its own asyncio task, and sets `ROW_INDEX` to the
position of the row it is about to score. Whatever the row's scoring calls (the
judge's ``complete``) reads the position of its own row, however the calls of the
other workers interleave. ``citemark check`` uses it to file every recorded judge call
under the row that made it.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Final

__all__ = ["ROW_INDEX"]

ROW_INDEX: Final[ContextVar[int | None]] = ContextVar("citemark_row_index", default=None)
"""The 0-based position, in the batch ``score_many`` was given, of the row being scored."""
