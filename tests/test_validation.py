"""The one validation-error describer never prints input, keys outside the schema or pydantic's wording."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ConfigDict, ValidationError, model_validator
from pydantic_core import PydanticCustomError

from citemark._contract.validation import describe_validation_error

CANARY = "canary-7c1e"


class Row(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    end: int
    tags: list[str] = []

    @model_validator(mode="after")
    def _check(self) -> Row:
        if self.end < 0:
            msg = "end must not be negative"
            raise ValueError(msg)
        if self.end == 1:
            raise PydanticCustomError("odd_row", "end 1 is refused")
        return self


def failure(value: object) -> ValidationError:
    with pytest.raises(ValidationError) as info:
        Row.model_validate(value)
    return info.value


LEAKY = {"end": CANARY, "tags": ["ok", 3], f"{CANARY}=1": CANARY}


class TestDescribe:
    def test_no_input_or_unknown_key_is_printed(self):
        """Neither a value nor a key outside the schema appears; pydantic's own message leaks both."""
        exc = failure(LEAKY)
        described = describe_validation_error(exc, Row.model_fields)
        assert "end (int_type), tags (string_type), unexpected field" == described
        assert CANARY in str(exc)  # the naive variant

    def test_sentence_phrasing(self):
        """The sentence phrasing names items by position and says what a type requires."""
        described = describe_validation_error(
            failure({"tags": ["ok", 3]}),
            Row.model_fields,
            phrasing="sentence",
            requirements={"string_type": "must be a string"},
        )
        assert (
            "missing field 'end'; field 'tags' item 2 must be a string (string_type)" == described
        )

    def test_citemarks_own_whole_model_sentences_are_kept(self):
        """A ValueError from a validator, and a listed custom type, keep their messages."""
        fields = Row.model_fields
        assert ("end must not be negative", "end 1 is refused", "odd_row") == (
            describe_validation_error(failure({"end": -1}), fields),
            describe_validation_error(failure({"end": 1}), fields, own_types=("odd_row",)),
            describe_validation_error(failure({"end": 1}), fields),
        )

    def test_a_whole_model_type_error_is_named_by_its_type(self):
        """Input that is not an object is named by pydantic's error type, not its wording."""
        assert "model_type" == describe_validation_error(failure([CANARY]), Row.model_fields)

    def test_many_parts_are_capped(self):
        """With most=N a long list ends in 'and K more'."""
        described = describe_validation_error(
            failure(LEAKY), Row.model_fields, unknown="extra", most=1
        )
        assert "end (int_type), and 2 more" == described
