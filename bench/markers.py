"""Benchmarks for parsing and resolving markers (SPEC §7, issue 2).

Printed as ratios against a baseline measured in the same process, never as
absolute pass/fail timings:

1. ``resolve`` (parse + validate + build the CitedAnswer) over 10,000 realistic
   answers of about 2 KB, against a bare ``re.finditer(r"\\[[0-9]+\\]")`` pass over
   the same texts that collects the integers (what a naive citation parser does).
   Target: ratio <= 2.0.
2. Linearity: a 2 MB answer against a 1 MB answer. Target: ratio <= 2.3.
3. ReDoS probes of 1 MB each: every one under 1 s.
"""

from __future__ import annotations

import contextlib
import random
import re
import time
from typing import TYPE_CHECKING

from citemark import Source, SynthesisError, masked_spans, parse_markers, resolve
from citemark._markers import _may_mask

if TYPE_CHECKING:
    from collections.abc import Callable

BARE = re.compile(r"\[[0-9]+\]")
WORDS = [
    "the",
    "license",
    "grants",
    "you",
    "a",
    "perpetual",
    "worldwide",
    "non-exclusive",
    "royalty-free",
    "patent",
    "license",
    "to",
    "make",
    "use",
    "sell",
    "offer",
    "import",
    "and",
    "transfer",
    "the",
    "work",
    "where",
    "such",
    "license",
    "applies",
    "only",
    "to",
    "claims",
    "necessarily",
    "infringed",
    "by",
    "the",
    "contribution",
    "alone",
    "or",
    "in",
    "combination",
    "with",
    "the",
    "work",
    "to",
    "which",
    "it",
    "was",
    "submitted",
]


def realistic_answers(count: int, seed: int = 7) -> list[str]:
    """About 2 KB each: sentences of which 60% end in a citation (10% of those cite two
    sources); one answer in ten also shows an inline code span and one in thirty a
    Markdown link, which take the slower CommonMark path."""
    rng = random.Random(seed)
    answers = []
    for _ in range(count):
        parts: list[str] = []
        size = 0
        while size < 2000:
            sentence = " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 20)))
            roll = rng.random()
            if roll < 0.54:
                sentence += f" [{rng.randint(1, 5)}]"
            elif roll < 0.6:
                sentence += f" [{rng.randint(1, 5)}, {rng.randint(1, 5)}]"
            sentence = sentence[0].upper() + sentence[1:] + ". "
            parts.append(sentence)
            size += len(sentence)
        roll = rng.random()
        if roll < 0.1:
            parts.insert(rng.randrange(len(parts)), f"Call `items[{rng.randint(0, 9)}]` first. ")
        elif roll < 0.1 + 1 / 30:
            parts.insert(
                rng.randrange(len(parts)), f"See [{rng.randint(1, 5)}](https://e.org/doc). "
            )
        answers.append("".join(parts))
    return answers


def bare_pass(texts: list[str]) -> int:
    total = 0
    for text in texts:
        total += len([int(m.group()[1:-1]) for m in BARE.finditer(text)])
    return total


def best_of(repeats: int, func: Callable[[], object]) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        func()
        best = min(best, time.perf_counter() - start)
    return best


def bench_resolve() -> float:
    texts = realistic_answers(10_000)
    sources = [Source(text=f"source {i}", doc_id=f"d{i}") for i in range(5)]

    def ours() -> None:
        for text in texts:
            resolve(text, sources)

    base = best_of(5, lambda: bare_pass(texts))
    mine = best_of(5, ours)
    ratio = mine / base
    slow = sum(_may_mask(t) for t in texts)
    print(
        f"resolve over 10,000 answers of ~2 KB ({slow} take the CommonMark path): "
        f"{mine * 1e3:.1f} ms; bare finditer pass {base * 1e3:.1f} ms; "
        f"ratio {ratio:.2f} (target <= 2.0)"
    )
    return ratio


def bench_linearity() -> float:
    one = "".join(realistic_answers(500, seed=3))[: 1 << 20]
    two = one + one
    t1 = best_of(3, lambda: parse_markers(one))
    t2 = best_of(3, lambda: parse_markers(two))
    print(
        f"parse_markers 1 MB: {t1 * 1e3:.1f} ms, 2 MB: {t2 * 1e3:.1f} ms; "
        f"ratio {t2 / t1:.2f} (target <= 2.3)"
    )
    return t2 / t1


PROBES = {
    "all [": "[" * (1 << 20),
    "all backticks": "`" * (1 << 20),
    "repeated ~~~\\n": "~~~\n" * (1 << 18),
    "all digits": "1" * (1 << 20),
    "[1 with no closers": "[1" * (1 << 19),
    "alternating ` and [1]": "`[1]" * (1 << 18),
    "backtick runs of growing length": "".join("`" * n + "x" for n in range(1, 1449)),
    "nested brackets": "[" * (1 << 19) + "]" * (1 << 19),
    "](( link tails": "[a](" * (1 << 18),
    '[x](a \\" titles': '[x](a "' * (1 << 17),
    "list items with fences": "- ```\n" * (1 << 17),
    "block quotes": "> `a\n" * (1 << 17),
}


def bench_probes() -> float:
    worst = 0.0
    sources = [Source(text="s", doc_id="d")]
    for name, text in PROBES.items():

        def probe(text: str = text) -> None:
            masked_spans(text)  # the masking path, even where no marker exists
            with contextlib.suppress(SynthesisError):  # a rejection is fine: time is measured
                resolve(text, sources)

        elapsed = best_of(1, probe)
        worst = max(worst, elapsed)
        print(f"  probe {name!r:36} {len(text) / 1e6:.2f} MB: {elapsed * 1e3:7.1f} ms")
    print(f"slowest ReDoS probe: {worst * 1e3:.1f} ms (target < 1000 ms)")
    return worst


def main() -> None:
    bench_resolve()
    bench_linearity()
    bench_probes()


if __name__ == "__main__":
    main()
