"""`ReplayChat`: a judge that answers only from a recording, never from a live model.

A replay serves, for each prompt, the reply recorded for the same whole prompt (by
its SHA-256), or raises the error the recorded call raised, so a replayed check
re-derives the original findings without a network. A prompt the recording does not
hold is refused with `citemark.JudgeReplyNotRecordedError`; the scorer records that
row as un-assessed (``judge_reply_not_recorded``). When one prompt was recorded more
than once, its recorded calls are served in the order of the file, and the last one
again for any call past them.

`ReplayChat.from_run` reads a ``citemark check`` output folder: it checks the
``judge-calls.jsonl`` bytes against the SHA-256 ``report.json`` records for them, and
takes the judge's identity from ``report.json``. Every check failure is a
`citemark.ReplayError` naming the file, the line and the field, never a prompt or a
reply.

A recording is read as a stream: only a regular file is opened (a FIFO or a link to
``/dev/zero`` is refused at once), each line is read up to a bounded length and
parsed strictly, and a recorded reply larger than the live client accepts
(`citemark._model.completion.DEFAULT_MAX_REPLY_BYTES`) is refused, so a replay serves nothing a
live judge could not have sent.
"""

from __future__ import annotations

import hashlib
from collections import deque
from pathlib import Path
from typing import TYPE_CHECKING, Final, NoReturn

from pydantic import ValidationError

from citemark._contract.artifacts import (
    LineTooLongError,
    NotRegularFileError,
    bounded_lines,
    open_regular,
)
from citemark._contract.errors import ChatError, JudgeReplyNotRecordedError, ReplayError
from citemark._contract.sync import run_sync
from citemark._judging.replay.calls import JUDGE_CALLS_NAME, JudgeCall, full_prompt_sha256
from citemark._model.completion import DEFAULT_MAX_REPLY_BYTES, Completion
from citemark._model.strictjson import StrictJSONError, loads_strict

if TYPE_CHECKING:
    import io
    import os
    from collections.abc import Iterable, Iterator
    from typing import BinaryIO

__all__ = ["ReplayChat"]

_REPORT_NAME: Final = "report.json"
# Keys of a judge-calls.jsonl line that say which row made the call, not what it was.
_ROW_KEYS: Final = ("line", "id", "run_id")
# The longest line of a recording: the largest reply the live client takes, written
# with JSON's escapes (an astral character, four bytes in a reply, is twelve as
# \ud83d\ude00), and room for the call's other fields.
_MAX_LINE_BYTES: Final = 3 * DEFAULT_MAX_REPLY_BYTES + (1 << 16)
# The largest report.json read back; a check's report is far smaller.
_MAX_REPORT_BYTES: Final = 64 << 20


class ReplayChat:
    """A `ChatModel` that returns recorded judge replies by prompt hash, and nothing else.

    Args:
        calls: The recorded calls, in the order they were recorded.

        provider: The judge's provider; defaults to the one every call names.

        model: The judge's model name; defaults to the one every call names.

    Raises:
        ReplayError: the calls name more than one judge, or there are no calls and
            ``provider`` or ``model`` is missing.

    Example:
        ```python
        from citemark.replay import JudgeCall, ReplayChat, full_prompt_sha256

        call = JudgeCall(
            provider="openai-compatible",
            model="llama3",
            prompt_sha256="0" * 64,
            full_prompt_sha256=full_prompt_sha256("Is [1] supported?"),
            status="ok",
            reply="yes",
        )
        chat = ReplayChat([call])
        print(chat.provider, chat.model_name, chat.complete_sync("Is [1] supported?"))
        #> openai-compatible llama3 yes
        ```
    """

    def __init__(
        self,
        calls: Iterable[JudgeCall],
        *,
        provider: str | None = None,
        model: str | None = None,
    ) -> None:
        self._calls: dict[str, deque[JudgeCall]] = {}
        judges: set[tuple[str, str]] = set()
        count = 0
        for call in calls:
            self._calls.setdefault(call.full_prompt_sha256, deque()).append(call)
            judges.add((call.provider, call.model))
            count += 1
        if len(judges) > 1:
            msg = f"the recorded calls name {len(judges)} judges; a replay serves one"
            raise ReplayError(msg)
        recorded = next(iter(judges), None)
        if recorded is not None and (
            (provider is not None and provider != recorded[0])
            or (model is not None and model != recorded[1])
        ):
            msg = "the recorded calls name another judge than the one given"
            raise ReplayError(msg)
        if recorded is None and (provider is None or model is None):
            msg = "no call is recorded: give the judge's provider and model"
            raise ReplayError(msg)
        self._provider = provider if provider is not None else recorded[0]  # type: ignore[index]
        self._model = model if model is not None else recorded[1]  # type: ignore[index]
        self._count = count
        self.served = 0
        """How many calls were answered from the recording (replies and recorded errors)."""
        self.refused = 0
        """How many calls were refused because their prompt was never recorded."""

    @classmethod
    def from_file(
        cls,
        path: str | os.PathLike[str],
        *,
        provider: str | None = None,
        model: str | None = None,
    ) -> ReplayChat:
        """Read a ``judge-calls.jsonl`` file.

        Raises:
            ReplayError: the file is missing, or a line is not a recorded call.
        """
        return cls(_read_calls(Path(path)), provider=provider, model=model)

    @classmethod
    def from_run(cls, folder: str | os.PathLike[str]) -> ReplayChat:
        """Read the judge calls a ``citemark check`` run wrote to ``folder``.

        ``report.json`` must be there and record the judge and the SHA-256 of
        ``judge-calls.jsonl``; the file's bytes must have that hash.

        Raises:
            ReplayError: a file is missing, ``judge-calls.jsonl`` differs from the
                hash ``report.json`` records, the run had no judge, or a line is not a
                recorded call.
        """
        root = Path(folder)
        report = _read_report(root / _REPORT_NAME)
        check = report.get("check")
        files = check.get("files") if isinstance(check, dict) else None
        judge = check.get("judge") if isinstance(check, dict) else None
        if not isinstance(judge, dict):
            msg = f"{_REPORT_NAME} records no judge: the run made no judge call to replay"
            raise ReplayError(msg)
        recorded_hash = files.get(JUDGE_CALLS_NAME) if isinstance(files, dict) else None
        if not isinstance(recorded_hash, str):
            msg = f"{_REPORT_NAME} records no SHA-256 for {JUDGE_CALLS_NAME}"
            raise ReplayError(msg)
        path = root / JUDGE_CALLS_NAME
        provider, model = judge.get("provider"), judge.get("model")
        if not isinstance(provider, str) or not isinstance(model, str):
            msg = f"{_REPORT_NAME}'s judge has no provider and model"
            raise ReplayError(msg)
        # One open file is hashed, then read: what is checked is what is replayed.
        with _opened(path) as handle:
            try:
                actual = hashlib.file_digest(handle, "sha256").hexdigest()
                handle.seek(0)
            except OSError:
                _missing(path)
            if actual != recorded_hash:
                msg = (
                    f"{JUDGE_CALLS_NAME} has SHA-256 {actual}, but {_REPORT_NAME} records "
                    f"{recorded_hash}: the recording was changed after the run"
                )
                raise ReplayError(msg)
            return cls(_calls_in(path, handle), provider=provider, model=model)

    @property
    def provider(self) -> str:
        """The recorded judge's provider."""
        return self._provider

    @property
    def model_name(self) -> str:
        """The recorded judge's model name."""
        return self._model

    @property
    def recorded(self) -> int:
        """How many calls the recording holds."""
        return self._count

    def __repr__(self) -> str:
        return (
            f"ReplayChat(provider={self._provider!r}, model={self._model!r}, "
            f"recorded={self._count})"
        )

    async def complete(self, prompt: str) -> str:
        """Return the reply recorded for ``prompt``, or raise the error its call raised.

        Raises:
            JudgeReplyNotRecordedError: no call with this whole prompt is recorded.
            ChatError: the recorded call failed with a `ChatError`; raised again with the
                recorded facts.
            Exception: the recorded call failed with another exception; an exception of
                the recorded class name is raised (without a message).
        """
        digest = full_prompt_sha256(prompt)
        queue = self._calls.get(digest)
        if not queue:
            self.refused += 1
            raise JudgeReplyNotRecordedError(digest, provider=self._provider, model=self._model)
        call = queue.popleft() if len(queue) > 1 else queue[0]
        self.served += 1
        if call.status == "ok" and call.reply is not None:
            # A recorded finish reason is served with the reply, so a reply that was
            # cut off replays as cut off (the scorer reads it through is_truncated).
            if call.finish_reason is None:
                return call.reply
            return Completion(call.reply, finish_reason=call.finish_reason)
        raise _recorded_error(call, digest, self._provider, self._model)

    def complete_sync(self, prompt: str) -> str:
        """Run `complete` to completion, for code without an event loop."""
        return run_sync(lambda: self.complete(prompt))


_replayed_types: dict[str, type[Exception]] = {}


def _recorded_error(call: JudgeCall, digest: str, provider: str, model: str) -> Exception:
    error = call.error
    if error is None:
        msg = "recorded call has neither a reply nor an error"
        return ChatError(msg, provider=provider, model=model)
    if error.type == JudgeReplyNotRecordedError.__name__:
        return JudgeReplyNotRecordedError(digest, provider=provider, model=model)
    if error.provider is not None and error.model is not None and error.reason is not None:
        return ChatError(
            error.detail or error.reason,
            provider=error.provider,
            model=error.model,
            status=error.status,
            reason=error.reason,
            provider_code=error.provider_code,
        )
    # Another exception: the scorer records only the class name, so one of that name
    # is raised again, and the replayed row reads as the original did.
    kind = _replayed_types.get(error.type)
    if kind is None:
        kind = _replayed_types[error.type] = type(error.type, (Exception,), {})
    return kind()


def _missing(path: Path) -> NoReturn:
    msg = f"{path.name} is missing or cannot be read"
    raise ReplayError(msg)


def _opened(path: Path) -> io.BufferedReader:
    """``path`` open for reading, or a `ReplayError`: missing, unreadable, not a regular file."""
    try:
        return open_regular(path)
    except NotRegularFileError:
        msg = f"{path.name} is not a regular file"
    except OSError:
        _missing(path)
    raise ReplayError(msg)


def _read_report(path: Path) -> dict[str, object]:
    with _opened(path) as handle:
        try:
            data = handle.read(_MAX_REPORT_BYTES + 1)
        except OSError:
            _missing(path)
    if len(data) > _MAX_REPORT_BYTES:
        msg = f"{path.name} is larger than {_MAX_REPORT_BYTES} bytes: not a check report"
        raise ReplayError(msg)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        _missing(path)
    try:
        value = loads_strict(text)
    except StrictJSONError as exc:
        msg = f"{path.name} is not strict JSON: {exc.kind}"
        raise ReplayError(msg) from None
    if not isinstance(value, dict):
        msg = f"{path.name} is not a JSON object"
        raise ReplayError(msg)
    return value


def _read_calls(path: Path) -> list[JudgeCall]:
    with _opened(path) as handle:
        return list(_calls_in(path, handle))


def _calls_in(path: Path, handle: BinaryIO) -> Iterator[JudgeCall]:
    """The recorded calls of an open recording, one bounded line at a time."""
    lines = bounded_lines(handle, _MAX_LINE_BYTES)
    while True:
        problem: str | None = None
        try:
            number, raw = next(lines)
        except StopIteration:
            return
        except LineTooLongError as exc:
            number = exc.number
            problem = (
                f"is longer than {_MAX_LINE_BYTES} bytes: a recorded reply is at most "
                f"{DEFAULT_MAX_REPLY_BYTES} bytes, as the live client takes"
            )
        except OSError:
            _missing(path)
        if problem is not None:
            msg = f"{path.name} line {number} {problem}"
            raise ReplayError(msg)
        if raw.strip():
            yield _call(path, number, raw)


def _call(path: Path, number: int, raw: bytes) -> JudgeCall:
    problem: str | None = None
    value: object = None
    try:
        value = loads_strict(raw.decode("utf-8"), max_bytes=None)
    except StrictJSONError as exc:
        problem = "nested too deep" if exc.kind == "nesting too deep" else "not JSON"
    except UnicodeDecodeError:
        problem = "not JSON"
    if problem is None and not isinstance(value, dict):
        problem = "not a JSON object"
    if problem is None:
        assert isinstance(value, dict)  # noqa: S101 - narrowed just above
        fields = {key: item for key, item in value.items() if key not in _ROW_KEYS}
        try:
            call = JudgeCall.model_validate(fields)
        except ValidationError as exc:
            names = sorted({str(error["loc"][0]) for error in exc.errors() if error["loc"]})
            known = [name for name in names if name in JudgeCall.model_fields]
            problem = "fields " + ", ".join(known) if known else "an unexpected field"
        else:
            if not _within_reply_limit(call.reply):
                problem = "fields reply"
            else:
                return call
    msg = f"{path.name} line {number} is not a recorded judge call ({problem})"
    raise ReplayError(msg)


def _within_reply_limit(reply: str | None) -> bool:
    """Whether a recorded reply is no larger, in UTF-8, than the live client accepts."""
    if reply is None or len(reply) * 4 <= DEFAULT_MAX_REPLY_BYTES:
        return True
    return len(reply.encode("utf-8", "surrogatepass")) <= DEFAULT_MAX_REPLY_BYTES
