"""QA and refine templates that ask the model to cite numbered nodes as ``[n]``.

Their instructions use the placeholder ``[N]``, never a real number, so every real
``[i]`` in a rendered prompt comes from a node's ``cite_as`` line (a model that
echoes its prompt cites only the sources it was shown). The question is sanitized
and indented like source content, so it cannot forge a ``cite_as`` line either.
"""

from __future__ import annotations

from typing import Any

from llama_index.core.prompts import PromptTemplate

from citemark import indent_block
from citemark.syntax import PLACEHOLDER, citing_rules

__all__ = ["CITATION_QA_TEMPLATE", "CITATION_REFINE_TEMPLATE"]

_QA = f"""\
Answer the question using only the numbered sources below, each headed \
"cite_as: {PLACEHOLDER}".

Rules:
{citing_rules(where="from the sources below")}

Sources:
---------------------
{{context_str}}
---------------------

Question: {{query_str}}

Answer: """

_REFINE = f"""\
The question is: {{query_str}}

The existing answer, with its citations:
---------------------
{{existing_answer}}
---------------------

More numbered sources, each starting with a line "cite_as: {PLACEHOLDER}":
---------------------
{{context_msg}}
---------------------

Refine the existing answer with these sources only where they help. Keep each \
citation marker of the existing answer that still applies, exactly as written. Cite \
new claims by their sources' numbers, like {PLACEHOLDER}, and never invent a source number. \
If these sources do not help, repeat the existing answer unchanged.

Refined answer: """


def _question(**kwargs: Any) -> str:
    return indent_block(str(kwargs.get("query_str", "")))


CITATION_QA_TEMPLATE = PromptTemplate(_QA, function_mappings={"query_str": _question})
"""A ``text_qa_template`` (``{context_str}``, ``{query_str}``) that asks for ``[n]``."""

CITATION_REFINE_TEMPLATE = PromptTemplate(_REFINE, function_mappings={"query_str": _question})
"""A ``refine_template`` (``{query_str}``, ``{existing_answer}``, ``{context_msg}``)
that keeps the existing answer's markers and cites new sources as ``[n]``."""
