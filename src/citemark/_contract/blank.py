"""The blank-text rule: whether a text holds nothing a reader could see.

It is citemark's only such rule (public view: `citemark.text.is_blank`); the
resolver, the renderer and both adapters use it.
"""

from __future__ import annotations

import unicodedata

__all__ = ["is_blank"]

# Characters that show nothing: controls and format characters (zero-width space...).
_INVISIBLE = frozenset({"Cc", "Cf"})


def is_blank(text: str) -> bool:
    """Whether ``text`` holds nothing a reader could see.

    Whitespace, control characters and invisible format characters (a zero-width
    space, say) do not make an answer, a question or a rewrite. It is citemark's only
    blank-text rule; adapters reach it as `citemark.text.is_blank`.
    """
    stripped = text.strip()
    if not stripped or stripped[0].isprintable():  # the common cases, in C
        return not stripped
    return all(c.isspace() or unicodedata.category(c) in _INVISIBLE for c in stripped)
