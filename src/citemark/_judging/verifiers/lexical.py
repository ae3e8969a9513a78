r"""The ``lexical`` verifier: a deterministic entailment rule that needs no model.

It owns the rule, its word lists and its identity. It is a heuristic, and says so:
it reads which words, numbers and negations a claim shares with its passages, not
what they mean, so its agreement with people is measured and published like any
other verifier's.

The rule (version ``1``)
------------------------

Tokens. A text is casefolded, typographic apostrophes become ``'`` and ``%`` reads
as the word ``percent``. Its tokens are

* numbers: ``\d{1,3}(?:,\d{3})+(?:\.\d+)?`` or ``\d+(?:\.\d+)?``, written in
  one normal form (thousands commas, leading zeros and trailing decimal zeros
  dropped: ``1,000`` = ``1000``, ``3.50`` = ``3.5``, ``7.0`` = ``7``), and the
  words ``two`` to ``twelve`` as their digits;
* words: runs of Unicode letters, with inner apostrophes (``doesn't``).

A word is a negation cue when it is in `NEGATIONS` or ends in ``n't``; otherwise it
is dropped when it is in `STOP_WORDS`; otherwise a trailing ``'s`` goes, and it is
stemmed by `stem` (a few suffix rules, no dictionary) into a content stem (a stem
that is itself a stop word is dropped too).

Passages. The passages are read together (joined). Each passage is also split into
sentences, over its lines and the white-space pieces of each line: a blank line ends
a sentence; a line whose first piece starts with ``-``, ``*``, ``+``, ``|``, ``#`` or
``>``, or is digits followed by ``.`` or ``)``, starts one (a list item, table row,
heading or quote); and a piece ending in ``.``, ``!`` or ``?``, optionally followed
by closing quotes or brackets, ends one. A sentence with no token is left out.

Verdict. Let ``C`` be the claim's content stems and ``N`` its numbers.

1. ``C`` and ``N`` both empty: no verdict (``entailed=None``, problem
   ``no_content_words``); there is nothing the rule could match.
2. Numbers: every number in ``N`` occurs in the passages.
3. Coverage: the fraction of ``C`` found in the passages is at least the threshold
   (`THRESHOLD`, 0.7, unless the verifier is built with another); an empty ``C``
   counts as covered.
4. Negation: the best-matching sentences are the passage sentences sharing the most
   tokens of ``C`` and ``N`` with the claim (ties all count). The claim holds a
   negation cue exactly when at least one best-matching sentence does: an added
   negation and a dropped one both fail.

The claim is entailed when 2, 3 and 4 all hold, and not entailed otherwise (no
passages at all, or only blank ones, entail nothing).

Why 0.7. A claim carries about a dozen content stems. A faithful paraphrase keeps
most of them and swaps a few for synonyms the rule cannot see ("lowers" for
"reduces"); a claim that adds an unsupported fact adds two or three stems of its
own. "Regular exercise lowers blood pressure in adults" against "In adults,
regular exercise reduces blood pressure" covers 5 of 6 (0.83); "Regular exercise
lowers blood pressure and cures diabetes in adults" against the same covers 5 of
8 (0.63). 0.7 keeps the first and rejects the second; 0.6 would accept both. It
was chosen on such examples, never fitted to a labelled split.

Identity: kind ``lexical``, name ``lexical``, version `RULE_VERSION`, digest the
SHA-256 of `rule_text` (the version, the threshold, the stop words, the negation
cues, the number words and the stemming rules), so changing any of them changes the
identity; a change to the rule's code changes the version.

Speed. A passage's tokens are computed once and kept in a bounded cache keyed by
its text (`functools.lru_cache`, 4,096 passages), so the passages a row's claims
share are read once, and its sentences only when the negation test needs them. The
classes of the white-space pieces already seen are kept in a memo of at most 100,000
pieces, replaced by an empty one when full. Neither cache changes a verdict.
"""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache
from itertools import chain
from typing import TYPE_CHECKING, Final

from citemark._judging.verifiers.base import Premise, Verdict, VerifierIdentity

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

__all__ = [
    "NEGATIONS",
    "RULE_VERSION",
    "STOP_WORDS",
    "THRESHOLD",
    "LexicalVerifier",
    "rule_text",
    "stem",
]

RULE_VERSION: Final = "1"
"""The rule's version: changed whenever the rule's code changes what it answers."""

THRESHOLD: Final = 0.7
"""The least fraction of the claim's content stems the passages must hold."""

STOP_WORDS: Final = frozenset(
    (
        "a",
        "an",
        "the",
        "and",
        "or",
        "but",
        "if",
        "then",
        "than",
        "so",
        "as",
        "of",
        "in",
        "on",
        "at",
        "to",
        "from",
        "by",
        "for",
        "with",
        "into",
        "onto",
        "over",
        "under",
        "about",
        "after",
        "before",
        "between",
        "through",
        "during",
        "above",
        "below",
        "up",
        "down",
        "out",
        "off",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "am",
        "do",
        "does",
        "did",
        "doing",
        "done",
        "has",
        "have",
        "had",
        "having",
        "will",
        "would",
        "shall",
        "should",
        "can",
        "could",
        "may",
        "might",
        "must",
        "it",
        "its",
        "itself",
        "this",
        "that",
        "these",
        "those",
        "there",
        "here",
        "which",
        "who",
        "whom",
        "whose",
        "what",
        "when",
        "where",
        "why",
        "how",
        "i",
        "me",
        "my",
        "we",
        "us",
        "our",
        "ours",
        "you",
        "your",
        "yours",
        "he",
        "him",
        "his",
        "she",
        "her",
        "hers",
        "they",
        "them",
        "their",
        "theirs",
        "one",
        "also",
        "such",
        "both",
        "each",
        "any",
        "all",
        "some",
        "more",
        "most",
        "other",
        "another",
        "only",
        "very",
        "just",
        "own",
        "same",
        "too",
        "while",
        "because",
        "since",
        "until",
        "whether",
        "per",
        "via",
        "upon",
        "within",
        "among",
        "across",
        "s",
        "t",
        "according",
        "say",
        "says",
        "said",
    )
)
"""Words that carry no claim of their own; dropped before stemming."""

NEGATIONS: Final = frozenset(
    (
        "not",
        "no",
        "never",
        "none",
        "nor",
        "neither",
        "nobody",
        "nothing",
        "nowhere",
        "without",
        "cannot",
    )
)
"""Negation cues, besides any word ending in ``n't``."""

_NUMBER_WORDS: Final = {
    word: str(value)
    for value, word in enumerate(
        (
            "two",
            "three",
            "four",
            "five",
            "six",
            "seven",
            "eight",
            "nine",
            "ten",
            "eleven",
            "twelve",
        ),
        start=2,
    )
}

_NUMBER = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?")
_WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)*")
# A piece that ends a sentence, and the characters such a piece can end with.
_SENTENCE_END = re.compile(r"[.!?][\"')\]\u201d]*\Z")
_LAST_CHARACTERS: Final = frozenset(".!?\"')]\u201d")
_BLOCK_OPENERS: Final = frozenset("-*+|#>")

# A token's class in a token set: a content stem, ``#<number>``, or the cue below.
_NEG: Final = "!"
_NO_CONTENT: Final = "no_content_words"

Classes = tuple[str, ...]

# The classes of each white-space piece already seen: a pure memo, bounded so that
# untrusted text cannot grow it without end. When a passage would take it past its
# bound, a fresh memo replaces it. No entry is ever removed from a memo, so a table
# handed to a reader on another thread keeps every entry it was handed with.
_MEMO: list[dict[str, Classes]] = [{}]
_CLASS_BOUND: Final = 100_000
_PASSAGE_CACHE: Final = 4096


def rule_text(threshold: float = THRESHOLD) -> str:
    """The text the identity's digest is taken over: version, threshold, word lists.

    Besides the version and the threshold it holds the stop words, the negation
    cues, the number words and the stemming rules, so editing any list changes the
    digest; a change to the rule's code changes `RULE_VERSION`.
    """
    return "\n".join(
        (
            f"citemark lexical rule {RULE_VERSION}",
            f"threshold {threshold!r}",
            "stop " + " ".join(sorted(STOP_WORDS)),
            "negations " + " ".join(sorted(NEGATIONS)) + " *n't",
            "numbers " + " ".join(f"{w}={d}" for w, d in _NUMBER_WORDS.items()),
            "plural " + repr(_PLURAL_RULES),
            "verb " + repr(_VERB_RULES),
        )
    )


def stem(word: str) -> str:
    """A casefolded word's light stem: a plural rule, a verb rule, then a final e.

    Each of `_PLURAL_RULES` and `_VERB_RULES` is read in order, and its first rule
    whose suffix ends the word and whose length bound the word meets applies
    (a rule whose replacement is its own suffix keeps the word). Then a final ``e``
    goes from a word of more than 3 letters. Words of 3 letters or fewer are kept.
    ``studies``/``studied`` -> ``study``; ``increases``/``increased``/``increasing``
    -> ``increas``; ``running`` -> ``run``; ``regularly`` -> ``regular``.
    """
    if len(word) <= _SHORT:
        return word
    word = _apply(_apply(word, _PLURAL_RULES), _VERB_RULES)
    if word.endswith("e") and len(word) > _SHORT:
        word = word[:-1]
    return word


# (suffix, least word length, replacement, undouble the consonant left).
_PLURAL_RULES: Final = (
    ("ies", 5, "y", False),
    ("ses", 5, "s", False),
    ("xes", 5, "x", False),
    ("zes", 5, "z", False),
    ("ches", 6, "ch", False),
    ("shes", 6, "sh", False),
    ("ss", 0, "ss", False),
    ("us", 0, "us", False),
    ("is", 0, "is", False),
    ("s", 4, "", False),
)
_VERB_RULES: Final = (
    ("ied", 5, "y", False),
    ("eed", 0, "eed", False),
    ("ing", 6, "", True),
    ("ed", 5, "", True),
    ("ly", 6, "", False),
)
_SHORT: Final = 3


def _apply(word: str, rules: tuple[tuple[str, int, str, bool], ...]) -> str:
    """The first applicable rule of ``rules`` applied to ``word``."""
    for suffix, least, replacement, undouble in rules:
        if word.endswith(suffix) and len(word) >= least:
            word = word[: -len(suffix)] + replacement
            # ``runn`` -> ``run``, ``stopp`` -> ``stop``; ``call`` and ``miss`` stay.
            if (
                undouble
                and len(word) > _SHORT
                and word[-1] == word[-2]
                and word[-1] not in "aeiouylsz"
            ):
                word = word[:-1]
            return word
    return word


def _word_class(word: str) -> str | None:
    """A word's class: ``!`` for a negation cue, None for a stop word, else its stem."""
    if word.endswith("n't") or word in NEGATIONS:
        return _NEG
    bare = word.removesuffix("'s")
    if bare in STOP_WORDS:
        return None
    digits = _NUMBER_WORDS.get(bare)
    if digits is not None:
        return "#" + digits
    result = stem(bare)
    return None if result in STOP_WORDS else result


def _number(token: str) -> str:
    """A number token in its normal form, with the ``#`` class prefix."""
    whole, _, fraction = token.replace(",", "").partition(".")
    whole = whole.lstrip("0") or "0"
    fraction = fraction.rstrip("0")
    return f"#{whole}.{fraction}" if fraction else "#" + whole


def _classify(piece: str) -> Classes:
    """The classes of the tokens in one white-space piece of normalised text.

    No token spans white space, so the tokens of a text are those of its pieces.
    """
    found = [c for word in _WORD.findall(piece) if (c := _word_class(word)) is not None]
    found.extend(map(_number, _NUMBER.findall(piece)))
    return tuple(dict.fromkeys(found))


def _table(pieces: Iterable[str]) -> dict[str, Classes]:
    """A memo that holds the classes of every piece in ``pieces``."""
    wanted = pieces if isinstance(pieces, set) else set(pieces)
    table = _MEMO[0]
    missing = wanted.difference(table)
    if missing:
        if len(table) + len(missing) > _CLASS_BOUND:
            table = {}
            _MEMO[0] = table
            missing = wanted
        table.update({piece: _classify(piece) for piece in missing})
    return table


def _read(text: str) -> set[str]:
    """The token set of a whole normalised text."""
    pieces = set(text.split())
    return set(chain.from_iterable(map(_table(pieces).__getitem__, pieces)))


def _token_set(pieces: list[str], table: dict[str, Classes]) -> frozenset[str]:
    return frozenset(chain.from_iterable(map(table.__getitem__, pieces)))


def _normalise(text: str) -> str:
    return text.casefold().replace("\u2019", "'").replace("%", " percent ")


def _claim(text: str) -> set[str]:
    """The token set of a claim."""
    return _read(_normalise(text))


def _sentences(text: str) -> list[list[str]]:
    """The white-space pieces of normalised ``text``, grouped into sentences."""
    sentences: list[list[str]] = []
    current: list[str] = []
    for line in text.split("\n"):
        pieces = line.split()
        if not pieces:
            if current:
                sentences.append(current)
                current = []
            continue
        first = pieces[0]
        if current and (
            first[0] in _BLOCK_OPENERS or (first[-1] in ".)" and first[:-1].isdecimal())
        ):
            sentences.append(current)
            current = []
        start = 0
        for index in [i for i, piece in enumerate(pieces) if piece[-1] in _LAST_CHARACTERS]:
            if _SENTENCE_END.search(pieces[index]):
                current.extend(pieces[start : index + 1])
                sentences.append(current)
                current = []
                start = index + 1
        current.extend(pieces[start:])
    if current:
        sentences.append(current)
    return sentences


class _Passage:
    """A passage's token set, and its sentences' token sets once they are asked for."""

    __slots__ = ("_normalised", "_sentences", "tokens")

    def __init__(self, text: str) -> None:
        self._normalised = _normalise(text)
        self.tokens = frozenset(_read(self._normalised))
        self._sentences: tuple[frozenset[str], ...] | None = None

    def sentences(self) -> tuple[frozenset[str], ...]:
        """The token sets of the passage's sentences, empty ones left out."""
        if self._sentences is None:
            groups = _sentences(self._normalised)
            table = _table(chain.from_iterable(groups))
            self._sentences = tuple(
                tokens for pieces in groups if (tokens := _token_set(pieces, table))
            )
        return self._sentences


@lru_cache(maxsize=_PASSAGE_CACHE)
def _passage(text: str) -> _Passage:
    """The passage read from ``text``, kept for the next premise that cites it."""
    return _Passage(text)


def _judge(premise: Premise, threshold: float) -> Verdict:
    """The rule of the module docstring, for one premise."""
    claim = _claim(premise.claim)
    negated = _NEG in claim
    claim.discard(_NEG)
    if not claim:
        return Verdict(entailed=None, problem=_NO_CONTENT)
    passages = [_passage(text) for text in premise.passages]
    found: set[str] = set()
    for passage in passages:
        found |= claim & passage.tokens
    missing = claim - found
    if any(token[0] == "#" for token in missing):
        return Verdict(entailed=False)
    content = sum(1 for token in claim if token[0] != "#")
    if content and (content - len(missing)) / content < threshold:
        return Verdict(entailed=False)
    if not any(_NEG in passage.tokens for passage in passages):
        return Verdict(entailed=not negated)
    best = -1
    statuses: set[bool] = set()
    for passage in passages:
        for sentence in passage.sentences():
            shared = len(claim & sentence)
            if shared > best:
                best, statuses = shared, {_NEG in sentence}
            elif shared == best:
                statuses.add(_NEG in sentence)
    return Verdict(entailed=negated in statuses)


class LexicalVerifier:
    """The ``lexical`` verifier: the module's rule, with a threshold (default 0.7).

    Args:
        threshold: The least fraction of the claim's content stems the passages
            must hold, in (0, 1]; part of the identity.

    Raises:
        ValueError: When the threshold is not a number in (0, 1].
    """

    def __init__(self, threshold: float = THRESHOLD) -> None:
        if (
            isinstance(threshold, bool)
            or not isinstance(threshold, int | float)
            or not 0.0 < threshold <= 1.0
        ):
            raise ValueError("the lexical verifier's threshold must be a number in (0, 1]")
        self._threshold = float(threshold)
        digest = hashlib.sha256(rule_text(self._threshold).encode()).hexdigest()
        self._identity = VerifierIdentity(
            kind="lexical", name="lexical", version=RULE_VERSION, digest=f"sha256:{digest}"
        )

    @property
    def identity(self) -> VerifierIdentity:
        """Kind ``lexical``; the digest covers the rule version, threshold and word lists."""
        return self._identity

    @property
    def threshold(self) -> float:
        """The coverage threshold this verifier applies."""
        return self._threshold

    async def verify(self, premises: Sequence[Premise]) -> list[Verdict]:
        """One verdict per premise, in order, computed synchronously on this thread.

        Raises:
            TypeError: When a premise's claim or one of its passages is not a str
                (the message names the premise's index only).
        """
        threshold = self._threshold
        verdicts: list[Verdict] = []
        for index, premise in enumerate(premises):
            if not isinstance(premise.claim, str) or not all(
                isinstance(text, str) for text in premise.passages
            ):
                message = f"premise {index}: the claim and every passage must be str"
                raise TypeError(message)
            verdicts.append(_judge(premise, threshold))
        return verdicts

    async def aclose(self) -> None:
        """Nothing to release: the rule holds no session or file."""
