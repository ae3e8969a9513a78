"""The text rules citemark applies, public so that every adapter applies the same ones.

`is_blank` is the one blank-text rule: the core refuses a blank question, treats a
blank answer as an abstention and a blank rewrite as a failure by it, and the
LangChain and LlamaIndex adapters ask it too, so an input is blank to all of them or
to none. A question of zero-width spaces is blank; ``str.strip`` alone says it is not.

`counted` is the one wording of a count in a message or a comment: ``1 source``,
``2 sources``, never ``source(s)``.
"""

from __future__ import annotations

from citemark._contract.blank import is_blank
from citemark._contract.words import counted

__all__ = ["counted", "is_blank"]
