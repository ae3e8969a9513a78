"""The ``judge`` verifier: one strict entailment question per premise, asked of a chat model.

`JudgeVerifier` asks any `citemark.ChatModel` (an `OpenAIChat` on any
OpenAI-compatible endpoint, an adapter's bridge, a `RecordingChat` or a
`ReplayChat`) the binary question ALCE and AutoAIS ask: do these passages, taken
together, entail this claim? The prompt (`ENTAILMENT_PROMPT`) asks for exactly
``{"entailed": true}`` or ``{"entailed": false}``, and `parse_entailment` reads the
untrusted reply as strictly as the faithfulness judge reads its own: at most 1 MB,
optionally inside one code fence, strict JSON (`citemark._model.strictjson`), an
object with exactly the one key, a real boolean. Anything else is
``Verdict(None, "unparseable_reply")``; nothing is coerced or repaired.

Each premise is exactly one ``complete`` call, never retried, with at most
``concurrency`` calls in flight per verifier on an event loop. A failed call is a
verdict with a problem code, never an exception: ``call_failed`` (the chat raised),
``reply_not_recorded`` (a `ReplayChat` holds no reply for the prompt) or
``reply_truncated`` (the reply stopped at the token limit and is not read, as the
judge does). No passage, claim or reply reaches a message or a log record.

Recording and replay are the judge's own: wrap the chat in `RecordingChat` with
`PROMPT_SHA256` and every verifier call is filed as a `JudgeCall`; a `ReplayChat`
over those calls answers the same premises by whole-prompt hash with no network.

May import: the layers below `_judging` and `citemark._judging` itself.
"""

from __future__ import annotations

import asyncio
import weakref
from typing import TYPE_CHECKING, Final

from citemark._contract.errors import ChatError, JudgeReplyNotRecordedError, StrictJSONError
from citemark._contract.syntax import source_header
from citemark._judging.verifiers.base import Premise, Verdict, VerifierIdentity
from citemark._model.completion import is_truncated
from citemark._model.strictjson import check_size, loads_strict, strip_single_fence
from citemark._sources.render import indent_block, prompt_sha256

if TYPE_CHECKING:
    from collections.abc import Sequence

    from citemark._model.completion import ChatModel

__all__ = [
    "ENTAILMENT_PROMPT",
    "PROMPT_SHA256",
    "JudgeVerifier",
    "parse_entailment",
    "render_entailment_prompt",
]

ENTAILMENT_PROMPT: Final = """\
Decide whether the passages below entail the claim.

The claim is entailed only if someone who reads the passages, and nothing else, \
would conclude that every part of the claim is true: each fact, number, name, date \
and negation in the claim is stated in the passages or follows directly from them. \
If any part of the claim is missing from the passages, goes beyond them or \
contradicts them, the claim is not entailed, even when it is true elsewhere. Read \
the passages together, as one text.

Passages:

{passages}

Claim: {claim}

Reply with exactly one JSON object and nothing else: no prose before or after it, \
no code fence. The object has exactly one field, "entailed", whose value is the JSON \
boolean true if the passages entail the claim and false otherwise:
{{"entailed": true}}
or
{{"entailed": false}}"""
"""The entailment prompt, a `str.format` template with ``{passages}`` and ``{claim}``.
Its only other braces are the doubled ones of the two JSON examples."""

PROMPT_SHA256: Final = prompt_sha256(ENTAILMENT_PROMPT)
"""The SHA-256 hex digest of `ENTAILMENT_PROMPT`'s UTF-8 text; what `RecordingChat` records."""

KIND: Final = "judge"
UNPARSEABLE_REPLY: Final = "unparseable_reply"
CALL_FAILED: Final = "call_failed"
REPLY_NOT_RECORDED: Final = "reply_not_recorded"
REPLY_TRUNCATED: Final = "reply_truncated"

_FIELD: Final = "entailed"


class JudgeVerifier:
    """A `Verifier` that asks a chat model whether each premise's passages entail its claim.

    Args:
        chat: The model that answers; it is called once per premise.

        concurrency: The most calls in flight at once for this verifier on one event
            loop, across concurrent `verify` calls too (default 8).

    Raises:
        ValueError: ``concurrency`` is not a positive integer.
    """

    def __init__(self, chat: ChatModel, *, concurrency: int = 8) -> None:
        if type(concurrency) is not int or concurrency < 1:
            msg = "concurrency must be a positive integer"
            raise ValueError(msg)
        self._chat = chat
        self._concurrency = concurrency
        self._identity = VerifierIdentity(
            kind=KIND,
            name=chat.provider,
            version=chat.model_name,
            digest=f"sha256:{PROMPT_SHA256}",
        )
        # One bound per event loop: a semaphore must not cross loops, and
        # `verify_sync` runs each batch on a loop of its own.
        self._limits: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
            weakref.WeakKeyDictionary()
        )

    @property
    def identity(self) -> VerifierIdentity:
        """``judge``, the chat's provider and model name, and the prompt template's SHA-256."""
        return self._identity

    @property
    def chat(self) -> ChatModel:
        """The chat the verifier asks."""
        return self._chat

    @property
    def concurrency(self) -> int:
        """The most calls in flight at once on one event loop."""
        return self._concurrency

    @property
    def prompt_sha256(self) -> str:
        """The SHA-256 hex digest of the prompt template (`PROMPT_SHA256`)."""
        return PROMPT_SHA256

    def __repr__(self) -> str:
        return (
            f"JudgeVerifier(provider={self._identity.name!r}, "
            f"model={self._identity.version!r}, concurrency={self._concurrency})"
        )

    async def verify(self, premises: Sequence[Premise]) -> list[Verdict]:
        """Ask once per premise; one verdict per premise, in order; never a retry.

        A call that fails or a reply that does not parse gives ``entailed=None`` with
        a problem code (see the module); nothing raises for one premise.
        """
        count = len(premises)
        if count == 0:
            return []
        limit = self._limit()
        verdicts: list[Verdict | None] = [None] * count
        positions = iter(range(count))

        async def worker() -> None:
            # Workers share one iterator, so at most `concurrency` tasks exist however
            # long the batch; the semaphore bounds calls across concurrent batches.
            for index in positions:
                async with limit:
                    verdicts[index] = await self._ask(premises[index])

        workers = [asyncio.ensure_future(worker()) for _ in range(min(self._concurrency, count))]
        try:
            await asyncio.gather(*workers)
        finally:
            for task in workers:
                task.cancel()
        return [verdict for verdict in verdicts if verdict is not None]

    async def aclose(self) -> None:
        """Release the chat's connections when it has ``aclose`` (an `OpenAIChat` stays usable)."""
        close = getattr(self._chat, "aclose", None)
        if callable(close):
            await close()

    async def _ask(self, premise: Premise) -> Verdict:
        prompt = render_entailment_prompt(premise)
        try:
            reply = await self._chat.complete(prompt)
        except JudgeReplyNotRecordedError:
            return Verdict(None, REPLY_NOT_RECORDED)
        except ChatError:
            return Verdict(None, CALL_FAILED)
        except Exception:  # noqa: BLE001 - one premise's failure never stops the batch
            # A chat outside citemark's seam may raise its own errors; they are a failed
            # call too, and their messages (which may quote the prompt) go nowhere.
            return Verdict(None, CALL_FAILED)
        if is_truncated(reply):
            return Verdict(None, REPLY_TRUNCATED)
        return parse_entailment(reply)

    def _limit(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        limit = self._limits.get(loop)
        if limit is None:
            limit = self._limits[loop] = asyncio.Semaphore(self._concurrency)
        return limit


def render_entailment_prompt(premise: Premise) -> str:
    """Fill `ENTAILMENT_PROMPT` with a premise's passages and claim.

    Passages are numbered from 1 in their order, each sanitized and indented like
    source content (see `citemark.render_sources`), and so is the claim, so neither
    can forge a passage header.
    """
    passages = "\n\n".join(
        f"{source_header(number)} {indent_block(text)}"
        for number, text in enumerate(premise.passages, start=1)
    )
    return ENTAILMENT_PROMPT.format(passages=passages, claim=indent_block(premise.claim))


def parse_entailment(reply: str) -> Verdict:
    """Read a reply strictly: ``{"entailed": true}`` or ``{"entailed": false}``, else no verdict.

    In order: at most 1 MB; optionally exactly one fenced block, whose fence is
    removed; strict JSON (no duplicate keys, no ``NaN``); a JSON object whose only key
    is ``entailed``; a JSON boolean (``"true"``, ``1`` and ``null`` are refused).
    Anything else is ``Verdict(None, "unparseable_reply")``.
    """
    try:
        check_size(reply)
        value = loads_strict(strip_single_fence(reply))
    except StrictJSONError:
        return Verdict(None, UNPARSEABLE_REPLY)
    if type(value) is not dict or len(value) != 1:
        return Verdict(None, UNPARSEABLE_REPLY)
    entailed = value.get(_FIELD)
    if type(entailed) is not bool:
        return Verdict(None, UNPARSEABLE_REPLY)
    return Verdict(entailed)
