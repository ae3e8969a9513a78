"""Redaction: personal data leaves the process as tokens and comes back restored.

`RedactingChat` wraps any `citemark.ChatModel`. Before a prompt is sent, e-mail
addresses, phone numbers, IPv4 and IPv6 addresses, card-like numbers (Luhn-checked)
and caller-supplied terms become tokens such as ``[EMAIL_1]``; within one call the
same value always gets the same token. The completion's tokens are restored before
anything else reads it, so marker parsing sees the real values, and a restored
token is never a citation: tokens contain letters, markers are ASCII digits only.

What was replaced is counted per kind in a `RedactionReport`; the values themselves
are never recorded anywhere.
"""

from __future__ import annotations

import bisect
import ipaddress
import re
import threading
from collections import Counter
from collections.abc import Mapping
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from citemark._contract.syntax import GROUP_PATTERN
from citemark._model.completion import Completion, finish_reason_of

if TYPE_CHECKING:
    from collections.abc import Iterable

    from citemark._model.completion import ChatModel

__all__ = ["RedactingChat", "RedactionReport", "redact"]

# Each detector finds candidates with a bounded pattern (every repetition has an
# upper limit, so no input makes a pattern backtrack more than a constant per
# position), and a validator where the pattern alone over-matches.
# The local part takes every character RFC 5322 allows unquoted, so a value such as
# o'brien@example.org is replaced whole, never in part.
_LOCAL = r"A-Za-z0-9.!#$%&'*+/=?^_`{|}~-"
_EMAIL = re.compile(
    rf"(?<![{_LOCAL}])[{_LOCAL}]{{1,64}}@[A-Za-z0-9-]{{1,63}}(?:\.[A-Za-z0-9-]{{1,63}}){{1,8}}"
    r"(?![A-Za-z0-9-])"
)
_CARD = re.compile(r"(?<![0-9])[0-9](?:[ -]?[0-9]){12,18}(?![0-9])")
# An IPv6 candidate, possibly ending in an embedded IPv4 address (::ffff:192.0.2.1),
# so the address is replaced whole; ipaddress decides whether it is one.
_IPV6 = re.compile(
    r"(?<![0-9A-Fa-f:.])[0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){1,7}"
    r"(?:\.[0-9]{1,3}){0,3}(?![0-9A-Fa-f:.])"
)
_IPV4 = re.compile(
    r"(?<![0-9.])(?:(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])\.){3}"
    r"(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])(?!\.?[0-9])"
)
# A phone number: an optional +country code, an optional (area) code, then one to
# five groups of digits separated by a space, dot or dash. Validated by digit count.
_PHONE = re.compile(
    r"(?<![\w+])(?:\+[0-9]{1,3}[ .-]?)?(?:\([0-9]{1,4}\)[ .-]?)?[0-9]{2,15}(?:[ .-][0-9]{2,8}){0,4}"
    r"(?![\w])"
)
_KIND = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*")
_TOKEN = re.compile(r"\[([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*)_([1-9][0-9]*)\]")


class RedactionReport(BaseModel):
    """What redaction did: whether it ran and how many values of each kind it replaced."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    applied: bool
    """Whether prompts passed through redaction before leaving the process."""

    calls: int = 0
    """How many prompts were redacted."""

    replaced: dict[str, int] = {}
    """Distinct values replaced, per kind (``EMAIL``, ``PHONE``, ``IPV4``, ``IPV6``,
    ``CARD`` and the caller's own kinds), summed over calls. Never the values."""


def redact(
    text: str, terms: Mapping[str, str] | None = None
) -> tuple[str, dict[str, str], Counter[str]]:
    """Replace personal data in ``text`` with tokens.

    Args:
        text: The text to redact.
        terms: Caller-supplied exact strings mapped to their kind, e.g.
            ``{"Jane Roe": "PERSON"}``; they take precedence over the detectors.

    Returns:
        The redacted text, the map from each token to the value it replaced, and
        the number of distinct values replaced per kind.

    Example:
        ```python
        from citemark._model.redaction import redact

        text, tokens, counts = redact("Mail jane@example.org or jane@example.org, 10.0.0.7")
        print(text)
        #> Mail [EMAIL_1] or [EMAIL_1], [IPV4_1]
        print(dict(counts))
        #> {'EMAIL': 1, 'IPV4': 1}
        ```
    """
    spans = _find(text, terms or {})
    if not spans:
        return text, {}, Counter()
    tokens: dict[str, str] = {}
    by_value: dict[tuple[str, str], str] = {}
    numbers: Counter[str] = Counter()
    out: list[str] = []
    pos = 0
    for start, end, kind in spans:
        value = text[start:end]
        token = by_value.get((kind, value))
        if token is None:
            # Skip numbers whose token already occurs in the text, so restoring
            # never turns a literal "[EMAIL_1]" of the original into a value.
            while True:
                numbers[kind] += 1
                token = f"[{kind}_{numbers[kind]}]"
                if token not in text:
                    break
            by_value[(kind, value)] = token
            tokens[token] = value
        out.append(text[pos:start])
        out.append(token)
        pos = end
    out.append(text[pos:])
    counts = Counter(kind for kind, _ in by_value)
    return "".join(out), tokens, counts


def restore(text: str, tokens: Mapping[str, str]) -> str:
    """Put the original values back for every token issued in this call.

    A restored value must never become part of a citation marker: a model that
    wrote ``[[TERM_1]]`` for the term ``"2"`` must not thereby cite source 2. Where
    restoring a token would put it inside a bracket group, that token stays as the
    model wrote it.
    """
    while tokens:
        out: list[str] = []
        restored: list[tuple[int, int, str]] = []  # (start, end, token) in the output
        pos = length = 0
        for m in _TOKEN.finditer(text):
            value = tokens.get(m.group())
            if value is None:
                continue
            out.append(text[pos : m.start()])
            length += m.start() - pos
            restored.append((length, length + len(value), m.group()))
            out.append(value)
            length += len(value)
            pos = m.end()
        out.append(text[pos:])
        result = "".join(out)
        clashing = _inside_groups(result, restored)
        if not clashing:
            return result
        tokens = {k: v for k, v in tokens.items() if k not in clashing}
    return text


def _inside_groups(text: str, spans: list[tuple[int, int, str]]) -> set[str]:
    """Tokens whose restored span overlaps a marker group of ``text``."""
    starts = [start for start, _, _ in spans]
    clashing = set()
    for group in GROUP_PATTERN.finditer(text):
        i = bisect.bisect_left(starts, group.end())
        while i > 0 and spans[i - 1][1] > group.start():
            clashing.add(spans[i - 1][2])
            i -= 1
    return clashing


class RedactingChat:
    """A `citemark.ChatModel` wrapper that redacts prompts and restores completions.

    Example:
        ```python
        import asyncio

        from citemark import RedactingChat
        from citemark.testing import ScriptedChat

        inner = ScriptedChat([lambda prompt: f"Write to {prompt.split()[-1]} [1]."])
        chat = RedactingChat(inner)
        print(asyncio.run(chat.complete("Contact: jane@example.org")))
        #> Write to jane@example.org [1].
        print(inner.prompts)
        #> ['Contact: [EMAIL_1]']
        print(chat.report().replaced)
        #> {'EMAIL': 1}
        ```
    """

    def __init__(self, inner: ChatModel, terms: Mapping[str, str] | Iterable[str] = ()) -> None:
        """Wrap ``inner``.

        Args:
            inner: The model prompts are sent to after redaction.
            terms: Extra strings to redact: a mapping of string to kind (an
                uppercase name such as ``"PERSON"``), or plain strings, which get
                the kind ``TERM``.
        """
        self.inner = inner
        pairs = terms.items() if isinstance(terms, Mapping) else ((t, "TERM") for t in terms)
        self.terms: dict[str, str] = {}
        for term, kind in pairs:
            if not _KIND.fullmatch(kind):
                msg = "redaction kinds must be uppercase names such as PERSON"
                raise ValueError(msg)
            if term:
                self.terms[term] = kind
        self._lock = threading.Lock()
        self._calls = 0
        self._replaced: Counter[str] = Counter()

    @property
    def provider(self) -> str:
        """The wrapped model's provider."""
        return self.inner.provider

    @property
    def model_name(self) -> str:
        """The wrapped model's name."""
        return self.inner.model_name

    async def complete(self, prompt: str) -> str:
        """Redact ``prompt``, ask the wrapped model once, restore its completion."""
        redacted, tokens, counts = redact(prompt, self.terms)
        with self._lock:
            self._calls += 1
            self._replaced.update(counts)
        completion = await self.inner.complete(redacted)
        restored = restore(completion, tokens)
        # The finish reason travels with the text (see `citemark.Completion`).
        finish = finish_reason_of(completion)
        return restored if finish is None else Completion(restored, finish)

    def report(self) -> RedactionReport:
        """Summarize redaction so far: applied, calls, and counts per kind."""
        with self._lock:
            return RedactionReport(
                applied=True, calls=self._calls, replaced=dict(sorted(self._replaced.items()))
            )


def _find(text: str, terms: Mapping[str, str]) -> list[tuple[int, int, str]]:
    """Return non-overlapping ``(start, end, kind)`` spans, earlier detectors first."""
    taken: list[tuple[int, int, str]] = []  # kept sorted by start

    def claim(start: int, end: int, kind: str) -> None:
        # Free if it ends before the next claimed span starts and starts after the
        # previous one ends; claimed spans never overlap, so neighbours suffice.
        i = bisect.bisect_left(taken, (start,))
        if i < len(taken) and taken[i][0] < end:
            return
        if i > 0 and taken[i - 1][1] > start:
            return
        taken.insert(i, (start, end, kind))

    if terms:
        # Longest first, so "Jane Roe" wins over "Jane". A term never matches inside
        # a marker group: citemark's own "[2]" headers stay intact for a term "2".
        groups = [m.span() for m in GROUP_PATTERN.finditer(text)]
        pattern = "|".join(re.escape(t) for t in sorted(terms, key=len, reverse=True))
        for m in re.finditer(pattern, text):
            i = bisect.bisect_right(groups, (m.start(), len(text)))
            if i and groups[i - 1][1] > m.start():
                continue
            claim(m.start(), m.end(), terms[m.group()])
    for m in _EMAIL.finditer(text):
        claim(m.start(), m.end(), "EMAIL")
    for m in _CARD.finditer(text):
        if _luhn(m.group()):
            claim(m.start(), m.end(), "CARD")
    if ":" in text:
        for m in _IPV6.finditer(text):
            if _is_ipv6(m.group()):
                claim(m.start(), m.end(), "IPV6")
    for m in _IPV4.finditer(text):
        claim(m.start(), m.end(), "IPV4")
    for m in _PHONE.finditer(text):
        if _is_phone(m.group()):
            claim(m.start(), m.end(), "PHONE")
    return taken


def _luhn(candidate: str) -> bool:
    digits = [int(c) for c in candidate if c.isdigit()]
    total = 0
    for i, digit in enumerate(reversed(digits)):
        # Every second digit from the right is doubled, and 9 subtracted past 9.
        doubled = digit * 2 if i % 2 else digit
        total += doubled - 9 if doubled > 9 else doubled  # noqa: PLR2004 - the Luhn rule
    return total % 10 == 0


def _is_ipv6(candidate: str) -> bool:
    if candidate.count(":") < 2 or not candidate.strip(":"):  # noqa: PLR2004
        return False
    try:
        ipaddress.IPv6Address(candidate)
    except ValueError:
        return False
    return True


def _is_phone(candidate: str) -> bool:
    # Ten to fifteen digits (E.164 allows at most 15), or seven and more after an
    # explicit "+country" prefix. Dates (8 digits) and version strings stay.
    digits = sum(c.isdigit() for c in candidate)
    if candidate.startswith("+"):
        return 7 <= digits <= 15  # noqa: PLR2004
    return 10 <= digits <= 15  # noqa: PLR2004
