"""Benchmarks for parsing and resolving markers (SPEC §7, issue 2).

Printed as ratios against a baseline measured in the same process, never as
absolute pass/fail timings:

1. ``resolve`` (parse + validate + build the CitedAnswer) over realistic answers
   of about 2 KB, against a bare pass over the same texts that turns each
   ``\\[([0-9]+)\\]`` match into an int and range-checks it (what a naive citation
   validator does), per answer kind (plain prose, with a fence, with a block quote,
   with a table) and over 10,000 answers of which one in five holds a fence and one
   in ten a quote or a table. The floor is the cheapest such pass (``findall``, no
   match objects); the ``finditer`` pass that earlier figures were measured against
   costs about 1.5x as much, and the ratio against it is printed too. The contender
   is timed right after the floor in each repetition, and the second floor right
   after it, so machine load hits all three alike. Target: ratio <= 2.0 on the mix.
   Then the two scans every answer needs, the masking read and the scan for groups,
   are timed alone on the mix against the same floor: a bound no result-building
   speed-up can go below.
2. The reference implementations doing the same job on the mix (issue 24):
   markdown-it-py (parse, then a token walk to the visible text) and cmark
   (cmark-gfm's C parser with its table extension, then its C renderer: cmarkgfm
   binds no AST walk, see `cmark_pass`), each followed by the group scan, beside the
   ``findall`` floor. Targets: markdown-it-py at least 2x slower than ``resolve``,
   ``resolve`` at most 1.2x cmark.
3. Linearity: a 2 MB answer against a 1 MB answer. Target: ratio <= 2.3.
4. ReDoS probes of 1 MB each: every one under 1 s.
"""

from __future__ import annotations

import contextlib
import random
import re
import time
from typing import TYPE_CHECKING

import cmarkgfm
from markdown_it import MarkdownIt

from citemark import Source, SynthesisError, masked_spans, parse_markers, resolve
from citemark._markers.fast import quick_spans
from citemark._markers.grammar import OPENERS, _may_mask

if TYPE_CHECKING:
    from collections.abc import Callable

BARE = re.compile(r"\[([0-9]+)\]")
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


def _sentence(rng: random.Random) -> str:
    sentence = " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 20)))
    roll = rng.random()
    if roll < 0.54:
        sentence += f" [{rng.randint(1, 5)}]"
    elif roll < 0.6:
        sentence += f" [{rng.randint(1, 5)}, {rng.randint(1, 5)}]"
    return sentence[0].upper() + sentence[1:] + "."


def _paragraph(rng: random.Random) -> str:
    return " ".join(_sentence(rng) for _ in range(rng.randint(2, 4)))


def _extra(kind: str, rng: random.Random) -> str:
    if kind == "fence":
        body = "\n".join(
            f"    total += items[{rng.randint(0, 9)}]  # step {i}" for i in range(rng.randint(4, 9))
        )
        return f"```python\ndef f(items):\n    total = 0\n{body}\n    return total\n```"
    if kind == "quote":
        return "\n".join(f"> {_sentence(rng)}" for _ in range(rng.randint(2, 4)))
    if kind == "table":
        rows = [
            f"| {rng.choice(WORDS)} | {rng.randint(1, 99)}% | {_sentence(rng)[:40]} [{rng.randint(1, 5)}] |"
            for _ in range(rng.randint(3, 6))
        ]
        return "\n".join(["| term | rate | note |", "|---|---|---|", *rows])
    return ""


def realistic_answers(count: int, seed: int = 7, kind: str = "mix") -> list[str]:
    """About 2 KB each: paragraphs of sentences of which 60% end in a citation (10% of
    those cite two sources), now and then a bulleted list, an inline code span or a
    link. ``kind`` adds one block to every answer: ``"plain"`` none, ``"fence"`` a
    fenced code block, ``"quote"`` a block quote, ``"table"`` a GFM table; ``"mix"``
    draws it per answer: one in five a fence, one in ten a quote or a table."""
    rng = random.Random(seed)
    answers = []
    for _ in range(count):
        this = kind
        if kind == "mix":
            roll = rng.random()
            this = (
                "fence"
                if roll < 0.2
                else "quote"
                if roll < 0.25
                else "table"
                if roll < 0.3
                else "plain"
            )
        blocks: list[str] = []
        size = 0
        while size < 2000:
            roll = rng.random()
            if roll < 0.15:
                block = "\n".join(f"- {_sentence(rng)}" for _ in range(rng.randint(2, 4)))
            else:
                block = _paragraph(rng)
            blocks.append(block)
            size += len(block) + 2
        roll = rng.random()
        if roll < 0.1:
            blocks[0] += f" Call `items[{rng.randint(0, 9)}]` first."
        elif roll < 0.1 + 1 / 30:
            blocks[0] += f" See [{rng.randint(1, 5)}](https://e.org/doc)."
        if this != "plain":
            blocks.insert(rng.randrange(1, len(blocks) + 1), _extra(this, rng))
        answers.append("\n\n".join(blocks))
    return answers


def bare_pass(texts: list[str], count: int) -> int:
    """The floor: each `\\[([0-9]+)\\]` match turned into an int and range-checked."""
    bad = 0
    for text in texts:
        for digits in BARE.findall(text):
            if not 0 < int(digits) <= count:
                bad += 1
    return bad


def bare_pass_finditer(texts: list[str], count: int) -> int:
    """The same pass through match objects: the floor of the figures before issue 11 closed."""
    bad = 0
    for text in texts:
        for m in BARE.finditer(text):
            if not 0 < int(m.group(1)) <= count:
                bad += 1
    return bad


def interleaved(repeats: int, *passes: Callable[[], object]) -> list[float]:
    """Best time of each pass, the passes timed one right after another in each repetition."""
    best = [float("inf")] * len(passes)
    for _ in range(repeats):
        for i, run in enumerate(passes):
            start = time.perf_counter()
            run()
            best[i] = min(best[i], time.perf_counter() - start)
    return best


def bench_resolve() -> float:
    sources = [Source(text=f"source {i}", doc_id=f"d{i}") for i in range(5)]
    ratio = 0.0
    for kind, count in (
        ("plain", 4000),
        ("fence", 2000),
        ("quote", 2000),
        ("table", 2000),
        ("mix", 10_000),
    ):
        texts = realistic_answers(count, kind=kind)

        def ours(texts: list[str] = texts) -> None:
            for text in texts:
                resolve(text, sources)

        base, mine, older = interleaved(
            7,
            lambda texts=texts: bare_pass(texts, len(sources)),
            ours,
            lambda texts=texts: bare_pass_finditer(texts, len(sources)),
        )
        ratio = mine / base
        masking = [t for t in texts if _may_mask(t)]
        quick = sum(quick_spans(t) is not None for t in masking)
        print(
            f"resolve, {kind:5}: {count:6,} answers of ~2 KB ({len(masking):,} may mask, "
            f"{quick:,} of them read by the quick path): {mine * 1e3:7.1f} ms; "
            f"bare pass {base * 1e3:6.1f} ms; ratio {ratio:.2f} "
            f"(finditer pass {older * 1e3:6.1f} ms; ratio {mine / older:.2f})"
        )
    print(f"resolve over the mix: ratio {ratio:.2f} (target <= 2.0)")

    def scans_alone(texts: list[str] = texts) -> None:
        for text in texts:
            if _may_mask(text):
                masked_spans(text)
            OPENERS.findall(text)

    base, scans = interleaved(7, lambda texts=texts: bare_pass(texts, len(sources)), scans_alone)
    print(f"the masking read and the group scan alone, over the mix: ratio {scans / base:.2f}")
    return ratio


_MD = MarkdownIt("commonmark").enable("table")


def markdown_it_pass(texts: list[str]) -> int:
    """markdown-it-py: parse, then walk the tokens to the visible text, and find groups.

    Visible text is what `citemark.parse_markers` reads markers from: the ``text``
    children of inline tokens and the content of HTML blocks; code, raw HTML and
    link destinations are left out, as they are by the marker parser.
    """
    found = 0
    for text in texts:
        pieces = []
        for token in _MD.parse(text):
            if token.type == "inline":
                pieces.extend(c.content for c in token.children or () if c.type == "text")
            elif token.type == "html_block":
                pieces.append(token.content)
        found += len(BARE.findall("\x00".join(pieces)))
    return found


def cmark_pass(texts: list[str]) -> int:
    """cmark (cmark-gfm's C core with its table extension): parse and render, in C.

    cmarkgfm exposes no AST walk to Python (of the node API only the parse and
    ``cmark_node_get_type`` are bound), so the closest honest equivalent is the
    parse followed by the HTML renderer, which is itself a walk over the whole AST,
    in C; the markers are then found in the rendered text by one ``findall``. A
    Python walk would cost more, so this is the hardest cmark figure to meet.
    """
    found = 0
    for text in texts:
        html = cmarkgfm.markdown_to_html_with_extensions(text, extensions=["table"])
        found += len(BARE.findall(html))
    return found


def bench_contenders() -> tuple[float, float]:
    """resolve against markdown-it-py and cmark doing the same job on the mix."""
    sources = [Source(text=f"source {i}", doc_id=f"d{i}") for i in range(5)]
    texts = realistic_answers(3000)

    def ours() -> None:
        for text in texts:
            resolve(text, sources)

    def scan() -> None:
        for text in texts:
            parse_markers(text)

    base, mine, parse, mdit, cmark = interleaved(
        5,
        lambda: bare_pass(texts, len(sources)),
        ours,
        scan,
        lambda: markdown_it_pass(texts),
        lambda: cmark_pass(texts),
    )
    print(
        f"contenders over 3,000 answers of the mix: findall floor {base * 1e3:.1f} ms; "
        f"resolve {mine * 1e3:.1f} ms; parse_markers {parse * 1e3:.1f} ms; "
        f"markdown-it-py {mdit * 1e3:.1f} ms; cmark {cmark * 1e3:.1f} ms"
    )
    print(
        f"  markdown-it-py / resolve: {mdit / mine:.2f}x (target >= 2.0); "
        f"resolve / cmark: {mine / cmark:.2f}x (target <= 1.2); "
        f"parse_markers / cmark: {parse / cmark:.2f}x; resolve / floor: {mine / base:.2f}"
    )
    return mdit / mine, mine / cmark


def best_of(repeats: int, func: Callable[[], object]) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        func()
        best = min(best, time.perf_counter() - start)
    return best


def bench_linearity() -> float:
    one = "".join(realistic_answers(500, seed=3))[: 1 << 20]
    two = one + one
    t1 = best_of(9, lambda: parse_markers(one))
    t2 = best_of(9, lambda: parse_markers(two))
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
    # Raw HTML that never closes, scanned from every start (an HTML block and a
    # paragraph): cmark's piecewise reading must not be redone for each.
    "unclosed comments in an HTML block": "<div>\n" + "<!-- ---> " * (1 << 17),
    "unclosed instructions and CDATA": "x " + "<? ??> <![CDATA[ ]]]> " * (1 << 15),
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
    bench_contenders()
    bench_linearity()
    bench_probes()


if __name__ == "__main__":
    main()
