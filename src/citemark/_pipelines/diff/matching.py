"""Which rule pairs the rows of two runs, and the key each row is looked up by.

The default rule (``auto``) matches rows by what identifies a question across the
two runs:

1. **id**, when the two runs share at least one id. Per-run ids (a record's
   ``"id_scope": "run"``: a run, trace or span id, new every run) are never
   compared: they neither count as shared nor serve as keys. When the runs share
   ids, a row with an id is matched by its id only (a row whose id the other run
   lacks is added or removed), and a row without one by its question, else its line.
   When they share none, the ids are not used at all.
2. **question**: the digest of the row's question its record carries.
3. **line**: the row's line in its input, for a row with no question (or no digest).

Each row has exactly one key under a rule, and rows with the same key are paired
occurrence by occurrence, in order: the first old row asking a question goes with
the first new row asking it. ``id``, ``question`` and ``line`` force one rule: a row
without that key is left unmatched.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Final, Literal, NamedTuple

if TYPE_CHECKING:
    from citemark._pipelines.diff.runs import MatchKind, RowFacts

__all__ = ["MATCH_RULES", "MatchRule", "RowKeys", "kind_of", "row_keys", "shared_id_key"]

MatchRule = Literal["auto", "id", "question", "line"]
"""How rows are matched: ``auto`` (id where the runs share ids, else question, else
line), or one rule forced."""
MATCH_RULES: Final[tuple[MatchRule, ...]] = ("auto", "id", "question", "line")
_PREFIX: Final[dict[MatchKind, str]] = {"id": "i", "question": "q", "line": "l"}
_KIND: Final[dict[str, MatchKind]] = {prefix: kind for kind, prefix in _PREFIX.items()}


class RowKeys(NamedTuple):
    """A row's key when the runs' ids are compared, and when they are not."""

    with_ids: str | None
    """The key when ids are compared; None when the row has none under the rule."""
    without_ids: str | None
    """The key when they are not (the same as ``with_ids`` for a forced rule)."""


def _key(kind: MatchKind, value: str) -> str:
    # ASCII JSON: an id holding a lone surrogate is still a key SQLite can store.
    return f"{_PREFIX[kind]}:{json.dumps(value)}"


def kind_of(key: str) -> MatchKind:
    """What a key built here matches by."""
    return _KIND[key[0]]


def shared_id_key(row_id: str) -> str:
    """The key of an id, as `row_keys` builds it: to ask whether the other run has it."""
    return _key("id", row_id)


def row_keys(facts: RowFacts, rule: MatchRule) -> RowKeys:
    """The keys ``facts`` is matched by under ``rule``."""
    row_id = None if facts.id is None or facts.per_run else _key("id", facts.id)
    question = None if facts.digests is None else facts.digests.question
    by_question = None if question is None else _key("question", question)
    by_line = _key("line", str(facts.line))
    if rule == "id":
        return RowKeys(row_id, row_id)
    if rule == "question":
        return RowKeys(by_question, by_question)
    if rule == "line":
        return RowKeys(by_line, by_line)
    fallback = by_question or by_line
    return RowKeys(row_id or fallback, fallback)
