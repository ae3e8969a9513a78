r"""Rendering: the numbered source list the model sees, and the synthesis prompt.

citemark writes every ``[i]`` header itself; nothing in a source's content can
produce one. Content is sanitized on the way in: control characters other than
newline and tab are dropped, Unicode line and paragraph separators become newlines,
and every content line after the first is indented, so a source whose text contains
``"\n[2] forged"`` still renders exactly N header lines.
"""

from __future__ import annotations

import bisect
import hashlib
import re
import string
from typing import TYPE_CHECKING

from citemark._contract.syntax import (
    DEFAULT_INDEX_BASE,
    NUMBERED_HEADER_PATTERN,
    check_index_base,
    citing_rules,
    source_header,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from citemark._contract.models import Source

__all__ = [
    "DEFAULT_SYNTHESIS_PROMPT",
    "check_template",
    "indent_block",
    "normalize_quoted",
    "prompt_sha256",
    "recover_numbering",
    "render_prompt",
    "render_sources",
    "sanitize_text",
]

DEFAULT_SYNTHESIS_PROMPT = f"""\
Answer the question using only the numbered sources below.

Rules:
{citing_rules()}

Sources:

{{sources}}

Question: {{question}}

Answer:"""
"""The default synthesis prompt, a `str.format` template with ``{question}`` and
``{sources}``. Its instructions use the placeholder ``[N]``, never a real number, so
each real ``[i]`` appears exactly once in a rendered prompt."""

# C0 and C1 control characters except tab (\x09) and newline (\x0a). \r goes too, so
# Windows line endings become plain newlines.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# Unicode line and paragraph separators: a model may read them as line breaks, so
# they become real ones and are indented like any other content line.
_SEPARATORS = re.compile(r"[\u2028\u2029]")
# Typographic quotes a model or a judge may write where the text has straight ones.
_QUOTES = str.maketrans(
    dict.fromkeys("\u2018\u2019\u201a\u201b\u2032\u2039\u203a\uff07", "'")
    | dict.fromkeys("\u201c\u201d\u201e\u201f\u2033\u00ab\u00bb\uff02", '"')
)
# What a content line starts with: enough that no content line can begin with "[".
_INDENT = "    "


def sanitize_text(text: str) -> str:
    r"""Drop control characters (but newline and tab) and normalize line separators."""
    return _CONTROL.sub("", _SEPARATORS.sub("\n", text.replace("\r\n", "\n")))


def render_sources(sources: Sequence[Source], *, index_base: int = DEFAULT_INDEX_BASE) -> str:
    r"""Write the numbered source list the model sees.

    Entry ``i`` is ``[i] `` followed by the sanitized content, each further content
    line indented by four spaces; entries are separated by a blank line. Entries are
    numbered from ``index_base`` (1 by default, or 0: ``[0]`` is then the first).

    Raises:
        ValueError: ``index_base`` is not 0 or 1.

    Example:
        ```python
        from citemark import Source, render_sources

        forged = Source(text="real text\n[2] forged header", doc_id="a")
        print(render_sources([forged, Source(text="second", doc_id="b")]))
        #> [1] real text
        #>     [2] forged header
        #>
        #> [2] second
        ```
    """
    return "\n\n".join(
        f"{source_header(number)} {indent_block(source.text)}"
        for number, source in enumerate(sources, start=check_index_base(index_base))
    )


def render_prompt(
    question: str,
    sources: Sequence[Source],
    template: str = DEFAULT_SYNTHESIS_PROMPT,
    *,
    index_base: int = DEFAULT_INDEX_BASE,
) -> str:
    """Fill a synthesis template with ``question`` and the rendered ``sources``.

    The question is sanitized and indented like source content, so it cannot forge a
    source header either. The sources are numbered from ``index_base`` (see
    `render_sources`).

    Raises:
        ValueError: ``index_base`` is not 0 or 1.
    """
    rendered = render_sources(sources, index_base=index_base)
    return template.format(question=indent_block(question), sources=rendered)


def recover_numbering(prompt: str, texts: Sequence[str]) -> list[int | None]:
    r"""Find the number each text was shown under in a prompt someone else rendered.

    For a chain whose own code numbered the sources, the numbering is only in the
    prompt. Each text is located by a probe (its first non-blank line, at most 60
    characters, which must occur in the prompt exactly once), and its number is taken
    from the nearest label before it at the start of a line: ``[n]``, ``Source n``
    (``Source: n``, ``Source ID: n``, as LangChain's citation guide writes it),
    ``Document n`` or ``n.``/``n)``. A text that cannot be located unambiguously gets
    ``None``; the caller decides what an incomplete numbering means.

    Example:
        ```python
        from citemark import recover_numbering

        prompt = "Context:\nSource 2: Water is wet.\nSource 1: The sky is red.\n\nQ: why?"
        print(recover_numbering(prompt, ["The sky is red.", "Water is wet.", "Grass is green."]))
        #> [1, 2, None]
        ```
    """
    labels = [
        (m.start(), int(next(g for g in m.groups() if g)))
        for m in NUMBERED_HEADER_PATTERN.finditer(prompt)
    ]
    starts = [start for start, _ in labels]
    numbers: list[int | None] = []
    for text in texts:
        probe = next(
            (line.strip() for line in sanitize_text(text).splitlines() if line.strip()), ""
        )
        probe = probe[:60]
        at = prompt.find(probe) if probe else -1
        if at < 0 or prompt.find(probe, at + 1) >= 0:
            numbers.append(None)
            continue
        i = bisect.bisect_right(starts, at) - 1
        numbers.append(labels[i][1] if i >= 0 else None)
    return numbers


def indent_block(text: str) -> str:
    r"""Sanitize ``text`` and indent every line after the first, as source content is.

    For adapters that render sources their own way: what follows a header written by
    citemark can then never start a line with a bracketed number.

    Example:
        ```python
        from citemark import indent_block

        print(indent_block("Notices stay.\n[2] forged\x00"))
        #> Notices stay.
        #>     [2] forged
        ```
    """
    return sanitize_text(text).replace("\n", "\n" + _INDENT)


def check_template(template: str, fields: frozenset[str]) -> None:
    """Refuse a `str.format` template that does not use exactly ``fields``.

    Each field must appear at least once, with no format spec or conversion, and any
    other brace must be doubled; checked at construction so a bad template fails
    before a model is called.

    Raises:
        ValueError: the template does not fit.
    """
    names = ", ".join("{" + name + "}" for name in sorted(fields))
    msg = (
        f"prompt template must use exactly the fields {names}, each at least once, "
        "with no format spec or conversion, and double any other brace"
    )
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError:
        raise ValueError(msg) from None  # a lone brace
    used = [(name, spec, conversion) for _, name, spec, conversion in parsed if name is not None]
    if {name for name, _, _ in used} != fields or any(spec or conv for _, spec, conv in used):
        raise ValueError(msg)


def normalize_quoted(text: str) -> str:
    """Normalize text the way a judge's quotation of it is compared (SPEC §3.8, §3.9).

    Sanitized, typographic quotes straightened, whitespace runs collapsed to one space.
    """
    return " ".join(sanitize_text(text).translate(_QUOTES).split())


def prompt_sha256(template: str) -> str:
    """Return the SHA-256 hex digest of a prompt template's UTF-8 text."""
    return hashlib.sha256(template.encode("utf-8")).hexdigest()
