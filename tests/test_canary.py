"""Untrusted text never reaches an error message or a log record (SPEC §8)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import pydantic
import pytest

import citemark
from citemark import (
    BM25Retriever,
    Citation,
    CitedAnswer,
    FileReader,
    Source,
    render_prompt,
    resolve,
    verify_citation,
)

if TYPE_CHECKING:
    from pathlib import Path

CANARY = "CANARY-7f3a9c1e-do-not-leak"


def raised_errors() -> list[BaseException]:
    """Provoke every error the foundation raises with the canary in every input."""
    errors: list[BaseException] = []

    def attempt(action):
        try:
            action()
        except Exception as exc:  # noqa: BLE001 - collecting every error is the point
            errors.append(exc)
        else:
            pytest.fail("expected an error")

    sources = [Source(text=f"{CANARY} source text", doc_id=f"doc-{CANARY}")]
    answer = f"{CANARY} answer cites [7] and [{CANARY}]"
    attempt(lambda: resolve(answer, sources))
    attempt(lambda: resolve(answer, []))
    attempt(lambda: resolve(f"[{'9' * 40}] {CANARY}", sources))
    attempt(lambda: Source(text=CANARY, doc_id="d", start=0, end=1))
    attempt(lambda: Source(text=CANARY, doc_id="d", start=0))
    attempt(
        lambda: Citation(
            marker=-1, doc_id=CANARY, chunk_id=None, start=None, end=None, uri=None, text=CANARY
        )
    )
    attempt(lambda: CitedAnswer(text=CANARY, citations=CANARY))  # type: ignore[arg-type]
    attempt(lambda: resolve(f"{CANARY} [1-2] [^{CANARY}]", sources, strict=True))
    attempt(lambda: render_prompt(CANARY, [{"text": CANARY}]))  # type: ignore[list-item]
    return errors


class TestCanary:
    def test_errors_never_carry_untrusted_text(self, caplog, tmp_path: Path):
        """The canary placed in answers, sources and queries never appears in str or repr."""
        caplog.set_level(logging.DEBUG)
        errors = raised_errors()
        reader = FileReader(tmp_path)
        citation = Citation(
            marker=1, doc_id=CANARY, chunk_id=None, start=0, end=6, uri=f"../{CANARY}", text="x" * 6
        )
        verify_citation(citation, reader)
        BM25Retriever.from_texts({CANARY: f"{CANARY} words"}).retrieve(f"{CANARY} query")
        assert len(errors) >= 7
        leaked = [type(e).__name__ for e in errors if CANARY in str(e) or CANARY in repr(e)]
        assert [] == leaked
        assert [] == [r for r in caplog.records if CANARY in r.getMessage()]

    def test_errors_are_typed(self):
        """Every provoked error is a citemark error or a pydantic ValidationError (a ValueError)."""
        kinds = {type(e) for e in raised_errors()}
        allowed = (citemark.CitemarkError, pydantic.ValidationError, TypeError, AttributeError)
        assert all(issubclass(k, allowed) for k in kinds), kinds

    def test_default_pydantic_config_would_leak(self):
        """Without hide_input_in_errors a validation error echoes the input: the guard matters."""

        class Leaky(pydantic.BaseModel):
            text: str
            end: int

            @pydantic.model_validator(mode="after")
            def check(self) -> Leaky:
                if self.end != len(self.text):
                    msg = "end must equal len(text)"
                    raise ValueError(msg)
                return self

        with pytest.raises(pydantic.ValidationError) as info:
            Leaky(text=CANARY, end=1)
        assert CANARY in str(info.value)
