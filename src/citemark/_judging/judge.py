"""The faithfulness judge: a second model's opinion, parsed as strictly as any input.

`FaithfulnessJudge` asks a `ChatModel` whether an answer is supported by its sources
and turns the reply into a `FaithfulnessVerdict`: a boolean, the unsupported claims
quoted from the answer, and prose. There is no score, because a number invites a
threshold and a threshold invites a gate that nothing has calibrated (SPEC §1,
contract 3). The reply is untrusted, so `parse_verdict` accepts exactly one JSON
object (optionally inside one code fence), parsed by `citemark._model.strictjson`, checked
against the schema with no coercion, and checked against the answer: a verdict that
quotes a claim the answer never made is rejected, not trusted. Every failure is one
`JudgeError` after exactly one model call, whose message names the kind of failure
and the schema's own field names only, never reply, answer, question or source text.
A verdict is advisory: nothing here, or anywhere, turns it into an exit code.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator, model_validator
from pydantic_core import PydanticCustomError

from citemark._contract.errors import JudgeError
from citemark._contract.sync import run_sync
from citemark._contract.validation import describe_validation_error
from citemark._judging.observe import observed_verdict
from citemark._model.completion import is_truncated
from citemark._model.strictjson import (
    MAX_TEXT_BYTES,
    StrictJSONError,
    check_size,
    loads_strict,
    strip_single_fence,
)
from citemark._sources.render import (
    check_template,
    indent_block,
    normalize_quoted,
    prompt_sha256,
    render_sources,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from citemark._contract.models import Source
    from citemark._model.completion import ChatModel

__all__ = [
    "DEFAULT_JUDGE_PROMPT",
    "FaithfulnessJudge",
    "FaithfulnessVerdict",
    "parse_verdict",
    "render_judge_prompt",
]

DEFAULT_JUDGE_PROMPT = """\
You are checking whether an answer is faithful to the numbered sources it was \
written from. A claim is supported only if the sources below state it or directly \
imply it; a claim that is true but not in the sources is unsupported.

Sources:

{sources}

Question: {question}

Answer: {answer}

Reply with exactly one JSON object and nothing else: no prose before or after it, \
no code fence. The object has exactly these three fields:
- "faithful": true if every claim in the answer is supported by the sources, \
otherwise false.
- "unsupported_claims": a list of strings, one per unsupported claim, each copied \
word for word from the answer. It must be empty when "faithful" is true.
- "reasoning": one or two sentences saying why.

For example:
{{"faithful": false, "unsupported_claims": ["The license lasts ten years."], \
"reasoning": "No source states how long the license lasts."}}"""
"""The default judge prompt, a `str.format` template with ``{question}``,
``{answer}`` and ``{sources}``. Its only other braces are the doubled ones of the
JSON example."""


class FaithfulnessVerdict(BaseModel):
    """A judge's opinion of one answer: a boolean and prose, never a score.

    Strict: ``faithful`` must be a real boolean (``"true"`` is refused), claims must
    be strings, and no field may be missing or added. ``unsupported_claims`` takes a
    tuple, or a list as JSON gives it. A verdict that says ``faithful`` and still
    lists unsupported claims is incoherent and refused. `parse_verdict` also checks
    that each claim is quoted from the answer; constructing the model directly does
    not, because the model does not know the answer.

    Example:
        ```python
        from citemark import FaithfulnessVerdict

        verdict = FaithfulnessVerdict(
            faithful=False,
            unsupported_claims=["It lasts ten years."],
            reasoning="No source gives a term.",
        )
        print(verdict.unsupported_claims)
        #> ('It lasts ten years.',)
        ```
    """

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        strict=True,
        hide_input_in_errors=True,
        use_attribute_docstrings=True,
    )

    faithful: bool
    """Whether the judge found every claim of the answer supported by the sources."""

    unsupported_claims: tuple[str, ...]
    """The claims the judge found unsupported, quoted from the answer; empty when faithful."""

    reasoning: str
    """The judge's explanation, in its own words; untrusted text, never parsed."""

    @field_validator("unsupported_claims", mode="before")
    @classmethod
    def _json_array_is_a_tuple(cls, value: object) -> object:
        # Strict mode accepts only a tuple from Python, but JSON has arrays: take a
        # list (exactly, not a str or a set) as the array it was; everything else goes
        # on to strict validation and fails there.
        return tuple(value) if type(value) is list else value

    @model_validator(mode="after")
    def _check_coherent(self) -> FaithfulnessVerdict:
        if self.faithful and self.unsupported_claims:
            raise PydanticCustomError(_INCOHERENT, _INCOHERENT_MESSAGE)
        return self


class FaithfulnessJudge:
    """Ask a model whether an answer is faithful to its sources; advisory only.

    The judge's identity (`provider`, `model_name`) and `prompt_sha256` are what a
    report records beside each verdict: a different model or a different prompt is a
    different instrument. Each `judge` call is exactly one model call, and there is no
    retry or repair: a reply that fails `parse_verdict` raises `JudgeError`.

    Example:
        ```python
        from citemark import FaithfulnessJudge, Source
        from citemark.testing import ScriptedChat

        reply = '{"faithful": true, "unsupported_claims": [], "reasoning": "Stated in [1]."}'
        judge = FaithfulnessJudge(ScriptedChat([reply]))
        verdict = judge.judge_sync(
            "How long does the license last?",
            "It is perpetual [1].",
            [Source(text="The license is perpetual.", doc_id="LICENSE")],
        )
        print(verdict.faithful, verdict.unsupported_claims)
        #> True ()
        ```
    """

    def __init__(self, chat: ChatModel, prompt_template: str = DEFAULT_JUDGE_PROMPT) -> None:
        """Create a judge.

        Args:
            chat: The model that judges.

            prompt_template: A `str.format` template using exactly the fields
                ``{question}``, ``{answer}`` and ``{sources}``, each at least once;
                any other literal brace is doubled.

        Raises:
            ValueError: the template is malformed or uses other fields, a format
                spec or a conversion.
        """
        check_template(prompt_template, _TEMPLATE_FIELDS)
        self._chat = chat
        self._template = prompt_template
        self._prompt_sha256 = prompt_sha256(prompt_template)

    @property
    def provider(self) -> str:
        """Who serves the judging model, as the chat reports it."""
        return self._chat.provider

    @property
    def model_name(self) -> str:
        """The judging model's name, as the chat reports it."""
        return self._chat.model_name

    @property
    def prompt_template(self) -> str:
        """The prompt template the judge fills."""
        return self._template

    @property
    def prompt_sha256(self) -> str:
        """The SHA-256 hex digest of the prompt template's UTF-8 text."""
        return self._prompt_sha256

    @observed_verdict
    async def judge(
        self, question: str, answer: str, sources: Sequence[Source]
    ) -> FaithfulnessVerdict:
        """Ask the model once for a verdict on ``answer`` and validate the reply.

        Args:
            question: The question the answer responds to.

            answer: The answer text, markers and all.

            sources: The sources the answer was written from, numbered as it cites
                them.

        Returns:
            The validated verdict. It is an opinion to record, never a gate.

        Raises:
            ChatError: the model call failed; raised unchanged, with no retry.
            JudgeError: the reply is not exactly one strict-JSON verdict whose
                unsupported claims all occur in the answer (see `parse_verdict`), or
                it was cut off at the model's token limit (``reason`` is then
                ``judge_reply_truncated``; the reply is not read).
        """
        prompt = render_judge_prompt(question, answer, sources, self._template)
        reply = await self._chat.complete(prompt)
        if is_truncated(reply):
            raise _truncated_reply()
        return parse_verdict(reply, answer)

    def judge_sync(
        self, question: str, answer: str, sources: Sequence[Source]
    ) -> FaithfulnessVerdict:
        """Run `judge` to completion with `asyncio.run`, for code without an event loop.

        Args:
            question: The question the answer responds to.

            answer: The answer text, markers and all.

            sources: The sources the answer was written from.

        Returns:
            The validated verdict.

        Raises:
            ChatError: the model call failed.
            JudgeError: the reply failed validation.
        """
        return run_sync(lambda: self.judge(question, answer, sources))


def render_judge_prompt(
    question: str,
    answer: str,
    sources: Sequence[Source],
    template: str = DEFAULT_JUDGE_PROMPT,
) -> str:
    """Fill a judge template with the question, the answer and the rendered sources.

    The question and the answer are sanitized and indented like source content (see
    `citemark.render_sources`), so neither can forge a source header.

    Args:
        question: The question.
        answer: The answer text.
        sources: The sources, rendered with `citemark.render_sources`.
        template: A template with ``{question}``, ``{answer}`` and ``{sources}``.

    Returns:
        The prompt.
    """
    return template.format(
        question=indent_block(question),
        answer=indent_block(answer),
        sources=render_sources(sources),
    )


def parse_verdict(reply: str, answer: str) -> FaithfulnessVerdict:
    """Validate a judge reply into a verdict, or reject it; nothing is repaired.

    In order: the reply must be at most 1 MB; it may be exactly one fenced block,
    whose fence is removed; it must be strict JSON (no duplicate keys, no ``NaN`` or
    ``Infinity``) and a JSON object; it must pass `FaithfulnessVerdict` with no
    coercion; and every unsupported claim must be non-blank and occur in ``answer``
    once both are normalized (control characters dropped as in the prompt, runs of
    whitespace collapsed to one space, curly quotes made straight; case is kept).

    Args:
        reply: The judge model's reply, untrusted.
        answer: The answer the judge was shown.

    Returns:
        The verdict.

    Raises:
        JudgeError: the reply failed any of the checks above. The message names the
            failure (for a schema failure: pydantic's error types and the schema's
            own field names, an unexpected key only as "unexpected field"; for a
            claim: its 1-based number), and the error has no cause or context, so no
            pydantic or json error text travels with it.
    """
    outcome = _parse(reply, answer)
    if isinstance(outcome, str):
        # Raised here, outside every except block, so __context__ stays None too.
        raise JudgeError(outcome) from None
    return outcome


_FIELDS: Final = frozenset(FaithfulnessVerdict.model_fields)
_INCOHERENT = "incoherent_verdict"
_INCOHERENT_MESSAGE = "faithful is true but unsupported_claims is not empty"
# A reply with thousands of unexpected keys still gets a one-line message.
_MAX_LISTED = 5
# What each common error type requires, in the reply's (JSON's) terms.
_REQUIREMENTS: Final = {
    "bool_type": "must be true or false",
    "string_type": "must be a string",
    "tuple_type": "must be a list",
}
_TEMPLATE_FIELDS: Final = frozenset({"question", "answer", "sources"})


def _parse(reply: str, answer: str) -> FaithfulnessVerdict | str:
    """Return the verdict, or the fixed message of the first check the reply fails."""
    try:
        check_size(reply)
        value = loads_strict(strip_single_fence(reply))
    except StrictJSONError as exc:
        if exc.kind == "too large":
            return f"judge reply is too large: it must be at most {MAX_TEXT_BYTES} bytes"
        return f"judge reply is not strict JSON: {exc.kind}"
    if not isinstance(value, dict):
        return "judge reply is not a JSON object"
    try:
        verdict = FaithfulnessVerdict.model_validate(value)
    except ValidationError as exc:
        return f"judge reply failed its schema: {_describe(exc)}"
    claimed = normalize_quoted(answer)
    for number, claim in enumerate(verdict.unsupported_claims, start=1):
        quoted = normalize_quoted(claim)
        if not quoted:
            return f"judge reply is not usable: unsupported claim {number} is blank"
        if quoted not in claimed:
            return (
                f"judge reply is not usable: unsupported claim {number} "
                "does not occur in the answer"
            )
    return verdict


def _describe(exc: ValidationError) -> str:
    """Describe a validation failure by error types and the schema's field names only."""
    return describe_validation_error(
        exc,
        _FIELDS,
        own_types=(_INCOHERENT,),
        phrasing="sentence",
        requirements=_REQUIREMENTS,
        most=_MAX_LISTED,
    )


def _truncated_reply() -> JudgeError:
    error = JudgeError(
        "the judge's reply was cut off at its token limit (finish_reason length); it is not read"
    )
    error.reason = "judge_reply_truncated"
    return error
