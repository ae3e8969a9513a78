"""Synthesis and query rewriting: the two places citemark asks a model to write.

`Synthesizer` renders the numbered source list, asks the model once, and resolves
the completion's markers against the very list it rendered. `QueryRewriter` asks a
model to rewrite a query for retrieval. Both fail instead of degrading: no sources,
a blank question, a blank completion, an out-of-range marker or a blank rewrite
each raise a typed error after at most one model call, and nothing is retried,
repaired or replaced by a default.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from citemark._contract.blank import is_blank
from citemark._contract.errors import (
    BlankQueryError,
    NoSourcesError,
    QueryRewriteError,
    SynthesisError,
    TruncatedAnswerError,
)
from citemark._contract.sync import run_sync
from citemark._markers.resolve import resolve
from citemark._model.completion import is_truncated
from citemark._sources.render import (
    DEFAULT_SYNTHESIS_PROMPT,
    check_template,
    prompt_sha256,
    render_prompt,
    sanitize_text,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from citemark._contract.models import CitedAnswer, Source
    from citemark._model.completion import ChatModel

__all__ = ["DEFAULT_REWRITE_PROMPT", "QueryRewriter", "Synthesizer"]

DEFAULT_REWRITE_PROMPT = """\
Rewrite the search query below so that a keyword search engine finds the passages \
that answer it. Keep every name, number and technical term. Reply with the rewritten \
query only, on one line, with no quotes and no explanation.

Query: {query}

Rewritten query:"""
"""The default rewrite prompt, a `str.format` template with ``{query}``."""


class Synthesizer:
    """Answers a question from numbered sources, with citations citemark resolves.

    Example:
        ```python
        from citemark import Source, Synthesizer
        from citemark.testing import ScriptedChat

        chat = ScriptedChat(["It terminates when litigation is filed [1]."])
        synthesizer = Synthesizer(chat)
        clause = "...terminate as of the date such litigation is filed."
        sources = [Source(text=clause, doc_id="Apache-2.0")]
        answer = synthesizer.synthesize_sync("When does the patent license end?", sources)
        print([c.doc_id for c in answer.citations], len(chat.prompts))
        #> ['Apache-2.0'] 1
        ```
    """

    def __init__(self, chat: ChatModel, prompt_template: str = DEFAULT_SYNTHESIS_PROMPT) -> None:
        """Use ``chat`` for completions and ``prompt_template`` (``{question}``, ``{sources}``).

        Raises:
            ValueError: the template does not use exactly ``{question}`` and ``{sources}``.
        """
        check_template(prompt_template, frozenset({"question", "sources"}))
        self.chat = chat
        self.prompt_template = prompt_template

    @property
    def prompt_sha256(self) -> str:
        """SHA-256 of the prompt template, recorded in reports."""
        return prompt_sha256(self.prompt_template)

    async def synthesize(self, question: str, sources: Sequence[Source]) -> CitedAnswer:
        """Ask the model once and resolve its answer against ``sources``.

        Returns:
            The answer as the model wrote it, with its citations. An answer without
            markers is a valid abstention (``citations == ()``).

        Raises:
            NoSourcesError: ``sources`` is empty; raised before any model call.
            SynthesisError: the question is blank (before any model call) or the
                completion is blank.
            MarkerOutOfRangeError: the answer cites a marker outside ``1..N``.
            TruncatedAnswerError: the chat reported ``finish_reason == "length"``:
                the answer was cut off at the token limit, and is not resolved.
            ChatError: the model call failed; it is not retried.
        """
        if not sources:
            raise NoSourcesError
        if is_blank(question):
            msg = "the question is blank: there is nothing to answer"
            raise SynthesisError(msg)
        completion = await self.chat.complete(
            render_prompt(question, sources, self.prompt_template)
        )
        if is_truncated(completion):
            raise TruncatedAnswerError
        return resolve(completion, sources)

    def synthesize_sync(self, question: str, sources: Sequence[Source]) -> CitedAnswer:
        """Run `synthesize` to completion from synchronous code."""
        return run_sync(lambda: self.synthesize(question, sources))


class QueryRewriter:
    """Rewrites a query for retrieval, or fails; it never falls back to the original.

    A rewriter that quietly returned its input on a blank reply would make a run with
    rewriting on indistinguishable from one with it off.
    """

    def __init__(self, chat: ChatModel, prompt_template: str = DEFAULT_REWRITE_PROMPT) -> None:
        """Use ``chat`` for completions and ``prompt_template`` (``{query}``).

        Raises:
            ValueError: the template does not use exactly ``{query}``.
        """
        check_template(prompt_template, frozenset({"query"}))
        self.chat = chat
        self.prompt_template = prompt_template

    @property
    def prompt_sha256(self) -> str:
        """SHA-256 of the prompt template, recorded in reports."""
        return prompt_sha256(self.prompt_template)

    async def rewrite(self, query: str) -> str:
        """Return the model's rewrite of ``query``, stripped of surrounding whitespace.

        Raises:
            BlankQueryError: ``query`` is blank; no model call is made.
            QueryRewriteError: the model's rewrite is blank.
            ChatError: the model call failed; it is not retried.
        """
        if is_blank(query):
            msg = "the query is blank: there is nothing to rewrite"
            raise BlankQueryError(msg)
        completion = await self.chat.complete(
            self.prompt_template.format(query=sanitize_text(query))
        )
        rewritten = completion.strip()
        if is_blank(rewritten):
            msg = "the query rewrite came back blank; the original query is not used instead"
            raise QueryRewriteError(msg)
        return rewritten

    def rewrite_sync(self, query: str) -> str:
        """Run `rewrite` to completion from synchronous code."""
        return run_sync(lambda: self.rewrite(query))
