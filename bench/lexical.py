"""Benchmark of the ``lexical`` verifier (issue 36): claims per second on one core.

The corpus is built here, seeded: rows of five passages of 150-300 words each
(prose with numbers, years, percentages and negations, a fenced code block, a
block quote, a Markdown table), and six claims per row of about 25 words, each
citing one to three of the row's passages. A claim is drawn from a cited passage's
sentences, then perturbed as answers are: some words swapped for others, a number
changed, a negation added, or left as is.

Two corpora are timed:

* ``rows``: as above, so a row's passages are shared by its claims (each cited
  about 2.4 times); the passage cache is cleared before every timed run, so each
  passage is read once per run.
* ``cold``: every premise has passages no other premise has, so every passage is
  read anew (the worst case for the cache).

The contender is ``LexicalVerifier.verify`` through `verify_sync`, in batches of
256 premises. The floor, run in the same process and interleaved with it, is the
cheapest code doing the same job: the same tokenizer (``_claim``, ``_normalise``,
``_table``, ``_sentences``) and the same number, coverage and negation tests inline in
one loop over plain tuples, with a plain dict as its passage cache, and no
`Premise`, `Verdict`, protocol or event loop. Each figure is the best of three runs,
the two alternating which goes first.
Rates are over the process's CPU time (`time.process_time`), so a shared machine's
other load does not count against them; a bare loop of ten million integer
additions is timed the same way and printed, as a scale for the machine.
Target (issue 36): at least 5,000 claims/s for the contender.

Run: ``nice .venv/bin/python bench/lexical.py``
"""

from __future__ import annotations

import gc
import random
import time
from functools import partial
from itertools import chain
from typing import TYPE_CHECKING, Any

from citemark._judging.verifiers import lexical
from citemark._judging.verifiers.base import Premise, verify_sync
from citemark._judging.verifiers.lexical import LexicalVerifier

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

SEED = 36
ROWS = 1700  # 10,200 claims
PASSAGES_PER_ROW = 5
CLAIMS_PER_ROW = 6
BATCH = 256
REPEATS = 3

FUNCTION_WORDS = [
    "the",
    "a",
    "of",
    "and",
    "to",
    "in",
    "is",
    "was",
    "for",
    "on",
    "that",
    "with",
    "as",
    "by",
    "it",
    "from",
    "at",
    "are",
    "this",
    "which",
    "be",
    "an",
    "has",
    "have",
    "were",
    "not",
    "its",
    "their",
    "or",
    "but",
    "also",
    "than",
    "more",
    "most",
    "into",
    "about",
    "after",
]
NEGATION_WORDS = ("not", "never", "no", "doesn't", "without")


def vocabulary(rng: random.Random) -> list[str]:
    """A few thousand pseudo-words with English-like suffixes."""
    syllables = [
        "ka",
        "lo",
        "mi",
        "ne",
        "ra",
        "ti",
        "su",
        "ve",
        "do",
        "pe",
        "ga",
        "hu",
        "li",
        "mo",
        "sa",
        "te",
        "ri",
        "no",
        "ba",
        "co",
    ]
    suffixes = ("", "", "", "s", "ed", "ing", "ly", "tion", "er", "es")
    words: set[str] = set()
    while len(words) < 3000:
        stem = "".join(rng.choice(syllables) for _ in range(rng.randint(2, 4)))
        words.add(stem + rng.choice(suffixes))
    return sorted(words)


def number(rng: random.Random) -> str:
    """A number as prose writes it."""
    kind = rng.randrange(5)
    if kind == 0:
        return f"{rng.randint(1000, 999_999):,}"
    if kind == 1:
        return f"{rng.uniform(0, 100):.1f}%"
    if kind == 2:
        return str(rng.randint(1950, 2026))
    if kind == 3:
        return f"{rng.uniform(0, 10):.2f}"
    return str(rng.randint(2, 500))


def sentence(rng: random.Random, vocab: Sequence[str]) -> str:
    """One prose sentence of 10-22 words."""
    words = []
    for _ in range(rng.randint(10, 22)):
        roll = rng.random()
        if roll < 0.4:
            words.append(rng.choice(FUNCTION_WORDS))
        elif roll < 0.46:
            words.append(number(rng))
        elif roll < 0.48:
            words.append(rng.choice(NEGATION_WORDS))
        else:
            words.append(rng.choice(vocab))
    words[0] = words[0].capitalize()
    return " ".join(words) + rng.choice(".....!?")


def passage(rng: random.Random, vocab: Sequence[str]) -> tuple[str, list[str]]:
    """A passage of 150-300 words and its prose sentences."""
    target = rng.randint(150, 300)
    parts: list[str] = []
    prose: list[str] = []
    count = 0
    while count < target:
        roll = rng.random()
        if roll < 0.08:
            name = rng.choice(vocab).replace("-", "_")
            block = f"```python\n{name} = load({rng.randint(1, 99)})\nprint({name}[0])\n```"
        elif roll < 0.14:
            block = "> " + sentence(rng, vocab)
        elif roll < 0.2:
            cells = [rng.choice(vocab) for _ in range(3)]
            values = [number(rng) for _ in range(3)]
            block = (
                f"| {' | '.join(cells)} |\n|---|---|---|\n| {' | '.join(values)} |\n"
                f"| {' | '.join(rng.choice(vocab) for _ in range(3))} |"
            )
        else:
            text = " ".join(sentence(rng, vocab) for _ in range(rng.randint(1, 3)))
            prose.append(text)
            block = text
        parts.append(block)
        count += len(block.split())
    return "\n\n".join(parts), prose


def claim(rng: random.Random, vocab: Sequence[str], sources: Sequence[list[str]]) -> str:
    """About 25 words drawn from the cited passages' prose, perturbed as answers are."""
    words: list[str] = []
    while len(words) < 22:
        words.extend(rng.choice(rng.choice(sources)).split())
    words = words[: rng.randint(22, 28)]
    roll = rng.random()
    if roll < 0.3:
        for _ in range(rng.randint(2, 8)):
            words[rng.randrange(len(words))] = rng.choice(vocab)
    elif roll < 0.45:
        words[rng.randrange(len(words))] = number(rng)
    elif roll < 0.6:
        words.insert(rng.randrange(len(words)), "not")
    return " ".join(words).rstrip(".!?") + "."


def corpus(*, shared: bool) -> list[Premise]:
    """The premises of ``ROWS`` rows; ``shared``: a row's claims share its passages."""
    rng = random.Random(SEED)
    vocab = vocabulary(rng)
    premises = []
    for _ in range(ROWS):
        row = [passage(rng, vocab) for _ in range(PASSAGES_PER_ROW)]
        for _ in range(CLAIMS_PER_ROW):
            if not shared:
                row = [passage(rng, vocab) for _ in range(PASSAGES_PER_ROW)]
            cited = rng.sample(range(PASSAGES_PER_ROW), rng.randint(1, 3))
            text = claim(rng, vocab, [row[index][1] for index in cited])
            premises.append(Premise(text, tuple(row[index][0] for index in cited)))
    return premises


def floor(pairs: Sequence[tuple[str, tuple[str, ...]]], threshold: float) -> list[bool | None]:
    """The same rule inline: same tokenizer, plain tuples, a plain dict cache."""
    claim_of = lexical._claim  # noqa: SLF001
    normalise = lexical._normalise  # noqa: SLF001
    sentences_of = lexical._sentences  # noqa: SLF001
    table_of = lexical._table  # noqa: SLF001
    cache: dict[str, list[Any]] = {}  # text -> [tokens, normalised text, sentences]
    out: list[bool | None] = []
    for text, passages in pairs:
        claim_tokens = claim_of(text)
        negated = "!" in claim_tokens
        claim_tokens.discard("!")
        if not claim_tokens:
            out.append(None)
            continue
        read = []
        for source in passages:
            entry = cache.get(source)
            if entry is None:
                normalised = normalise(source)
                pieces = set(normalised.split())
                get = table_of(pieces).__getitem__
                entry = [set(chain.from_iterable(map(get, pieces))), normalised, None]
                cache[source] = entry
            read.append(entry)
        found_all: set[str] = set()
        for entry in read:
            found_all |= claim_tokens & entry[0]
        missing = claim_tokens - found_all
        content = sum(1 for token in claim_tokens if token[0] != "#")
        if any(token[0] == "#" for token in missing) or (
            content and (content - len(missing)) / content < threshold
        ):
            out.append(False)
            continue
        if not any("!" in entry[0] for entry in read):
            out.append(not negated)
            continue
        best, statuses = -1, set()
        for entry in read:
            if entry[2] is None:
                groups = sentences_of(entry[1])
                get = table_of(chain.from_iterable(groups)).__getitem__
                entry[2] = [
                    found
                    for pieces in groups
                    if (found := frozenset(chain.from_iterable(map(get, pieces))))
                ]
            for part in entry[2]:
                shared = len(claim_tokens & part)
                if shared > best:
                    best, statuses = shared, {"!" in part}
                elif shared == best:
                    statuses.add("!" in part)
        out.append(negated in statuses)
    return out


def contender(premises: Sequence[Premise], verifier: LexicalVerifier) -> list[bool | None]:
    """``LexicalVerifier.verify`` through `verify_sync`, ``BATCH`` premises a call."""
    out: list[bool | None] = []
    for start in range(0, len(premises), BATCH):
        out.extend(v.entailed for v in verify_sync(verifier, premises[start : start + BATCH]))
    return out


def best_rate(run: Callable[[], list[bool | None]], count: int) -> tuple[float, list[bool | None]]:
    """Claims per second of one run, after clearing the passage cache and collecting."""
    lexical._passage.cache_clear()  # noqa: SLF001
    gc.collect()
    started = time.process_time()
    result = run()
    return count / (time.process_time() - started), result


def main() -> None:
    """Time the contender against the floor on both corpora and print the figures."""
    started = time.process_time()
    total = 0
    for value in range(10_000_000):
        total += value
    print(f"machine scale: 10M integer additions in {time.process_time() - started:.2f} s CPU")
    verifier = LexicalVerifier()
    for name, shared in (("rows", True), ("cold", False)):
        premises = corpus(shared=shared)
        pairs = [(p.claim, p.passages) for p in premises]
        words = sum(len(p.claim.split()) for p in premises) / len(premises)
        passage_words = sum(len(t.split()) for p in premises for t in p.passages)
        cited = sum(len(p.passages) for p in premises)
        floors, contenders = [], []
        for repeat in range(REPEATS):
            # Alternate which runs first, so neither always pays for the other's garbage.
            for which in (0, 1) if repeat % 2 else (1, 0):
                if which == 0:
                    rate, floor_result = best_rate(
                        partial(floor, pairs, verifier.threshold), len(pairs)
                    )
                    floors.append(rate)
                else:
                    rate, verdicts = best_rate(
                        partial(contender, premises, verifier), len(premises)
                    )
                    contenders.append(rate)
            if verdicts != floor_result:
                message = "the floor and the verifier disagree"
                raise AssertionError(message)
        entailed = sum(1 for v in verdicts if v)
        print(
            f"{name}: {len(premises)} claims of {words:.1f} words, "
            f"{cited / len(premises):.2f} passages of {passage_words / cited:.0f} words each; "
            f"{entailed} entailed"
        )
        print(f"  floor (inline, same tokenizer)  {max(floors):>9,.0f} claims/s")
        print(f"  LexicalVerifier.verify          {max(contenders):>9,.0f} claims/s")
        print(f"  ratio verifier/floor            {max(contenders) / max(floors):9.2f}")


if __name__ == "__main__":
    main()
