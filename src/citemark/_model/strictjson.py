"""Strict JSON for model replies: one parser that refuses what Python's ``json`` forgives.

A judge model's reply is untrusted input, and Python's `json.loads` is lenient in
three ways that matter for it: a duplicate key silently keeps the last value (so a
reply can say ``"faithful": false`` and then ``"faithful": true``), and ``NaN``,
``Infinity`` and ``-Infinity`` parse into floats no JSON standard allows. This module
rejects all of them, and a reply over `MAX_TEXT_BYTES`, before any schema sees the
value. It is deliberately generic and the only strict JSON parser in citemark: the
faithfulness judge and the citation scorer parse their replies here, then validate
the shape themselves; a label set file is read here too (with its own, larger size
cap), and so is each line of ``citemark check`` input (with none). A failure is a
`StrictJSONError` whose message and `StrictJSONError.kind` name the kind of failure
only, never a character of the text, and which carries no chained exception (the
standard library's ``JSONDecodeError`` keeps the whole document in ``.doc``).
"""

from __future__ import annotations

import json
import math
from typing import Final

from citemark._contract.errors import StrictJSONError

__all__ = [
    "MAX_TEXT_BYTES",
    "StrictJSONError",
    "check_size",
    "line_reason",
    "loads_strict",
    "strip_single_fence",
]

MAX_TEXT_BYTES: Final = 1_000_000
"""The largest text, in UTF-8 bytes, that is parsed at all (1 MB)."""

# The fixed failure kinds; each is the whole message of the StrictJSONError it names.
_TOO_LARGE = "too large"
_NOT_JSON = "not JSON"
_DUPLICATE_KEY = "duplicate key"
_NON_FINITE = "non-finite number"
_TOO_DEEP = "nesting too deep"

_FENCE = "```"
_OPENERS = frozenset({_FENCE, _FENCE + "json"})
# An opening line, at least one content line, and a closing line.
_FENCED_LINES = 3


# What a recorded line that fails strict parsing is called, per kind (malformed-line
# reasons in citemark check and every --from reader).
_LINE_REASONS: Final = {
    _DUPLICATE_KEY: "not strict JSON: an object gives a key twice",
    _NON_FINITE: "not strict JSON: it holds NaN or Infinity",
    _TOO_DEEP: "not valid JSON: nested too deep",
}


def line_reason(error: StrictJSONError) -> str:
    """The malformed-line reason for a recorded line that failed strict parsing."""
    return _LINE_REASONS.get(error.kind, "not valid JSON")


def check_size(text: str, max_bytes: int = MAX_TEXT_BYTES) -> None:
    """Reject a text longer than ``max_bytes`` in UTF-8, before any work is done on it.

    Args:
        text: The text about to be parsed.
        max_bytes: The cap; `MAX_TEXT_BYTES` (a model reply) unless a caller with
            larger documents, such as a label set, names its own.

    Raises:
        StrictJSONError: ``kind == "too large"``.
    """
    # A character is at least one UTF-8 byte, so the length check alone settles most
    # oversized texts without encoding them; lone surrogates (which a str may hold)
    # are counted as the three bytes "surrogatepass" writes for them.
    if len(text) > max_bytes or len(text.encode("utf-8", "surrogatepass")) > max_bytes:
        raise StrictJSONError(_TOO_LARGE)


def loads_strict(text: str, *, max_bytes: int | None = MAX_TEXT_BYTES) -> object:
    """Parse ``text`` as JSON, refusing duplicate keys and non-finite numbers.

    Args:
        text: The whole text; surrounding whitespace is allowed, anything else is not.
        max_bytes: The size cap `check_size` applies before parsing; ``None`` for
            none (a line of ``citemark check`` input, which is read one at a time).

    Returns:
        The parsed value: a dict, list, str, int, float, bool or None.

    Raises:
        StrictJSONError: the text is over a ``max_bytes`` (checked before parsing),
            is not JSON, holds an object with a key given twice (at any depth), holds
            ``NaN``, ``Infinity``, ``-Infinity`` or a number too large for a finite
            float (``1e999``), or nests deeper than the parser's recursion allows.

    Example:
        ```python
        from citemark._model.strictjson import StrictJSONError, loads_strict

        print(loads_strict('{"faithful": true}'))
        #> {'faithful': True}
        try:
            loads_strict('{"faithful": false, "faithful": true}')
        except StrictJSONError as exc:
            print(exc)
        #> duplicate key
        ```
    """
    if max_bytes is not None:
        check_size(text, max_bytes)
    kind: str
    try:
        value = _DECODER.decode(text)
    except StrictJSONError as exc:
        kind = exc.kind
    except RecursionError:
        kind = _TOO_DEEP
    except ValueError:
        # json.JSONDecodeError, and the ValueError int() raises past the interpreter's
        # digit limit (sys.get_int_max_str_digits).
        kind = _NOT_JSON
    else:
        return value
    # Raised outside the except block so the new error has no __context__ either: the
    # standard library's JSONDecodeError keeps the whole input in its .doc attribute.
    raise StrictJSONError(kind)


def strip_single_fence(text: str) -> str:
    r"""Return the content of ``text`` if it is exactly one fenced code block.

    After surrounding whitespace is stripped, the text must be an opening line of
    ```` ``` ```` or ```` ```json ```` (any case), content, and a closing line of
    ```` ``` ````, with no other fence line in between. Anything else is returned
    unchanged, so prose around a fence, two fences or an unclosed fence go on to
    fail JSON parsing instead of being "repaired".

    Args:
        text: A model reply.

    Returns:
        The fenced content without its fence lines, or ``text`` itself.

    Example:
        ```python
        from citemark._model.strictjson import strip_single_fence

        print(strip_single_fence('```json\n{"faithful": true}\n```'))
        #> {"faithful": true}
        print(strip_single_fence('Here you go:\n```\n{}\n```'))
        #> Here you go:
        #> ```
        #> {}
        #> ```
        ```
    """
    lines = text.strip().split("\n")
    if len(lines) < _FENCED_LINES:
        return text
    opener, *content, closer = (line.rstrip() for line in lines)
    if opener.lower() not in _OPENERS or closer != _FENCE:
        return text
    # Any other fence line means more than one block (or a block inside prose); a
    # line of valid JSON can never start with a backtick, so nothing real is lost.
    if any(line.lstrip().startswith(_FENCE) for line in content):
        return text
    return "\n".join(lines[1:-1])


def _unique_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    """Build an object, refusing a key given twice (json keeps the last one)."""
    result = dict(pairs)
    if len(result) != len(pairs):
        raise StrictJSONError(_DUPLICATE_KEY)
    return result


def _reject_constant(_name: str) -> float:
    """Refuse ``NaN``, ``Infinity`` and ``-Infinity``, which json accepts by default."""
    raise StrictJSONError(_NON_FINITE)


def _finite_float(literal: str) -> float:
    """Parse a float literal, refusing one that overflows to infinity (``1e999``)."""
    value = float(literal)
    if not math.isfinite(value):
        raise StrictJSONError(_NON_FINITE)
    return value


# One decoder for every call: json.loads would build a new one (and its scanner) each
# time, which is a quarter of the cost of parsing a small record.
_DECODER: Final = json.JSONDecoder(
    object_pairs_hook=_unique_keys, parse_constant=_reject_constant, parse_float=_finite_float
)
