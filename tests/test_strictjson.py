"""Strict JSON parsing and single-fence stripping for model replies, SPEC §3.8."""

from __future__ import annotations

import json
import pickle

import pytest

from citemark._model.strictjson import (
    MAX_TEXT_BYTES,
    StrictJSONError,
    check_size,
    loads_strict,
    strip_single_fence,
)

# Texts Python's json accepts and strict JSON refuses, with the kind of each failure.
LENIENT = [
    ('{"a": 1, "a": 2}', "duplicate key"),
    ('{"outer": {"a": 1, "a": 1}}', "duplicate key"),
    ('[{"ok": 1}, {"b": true, "b": false}]', "duplicate key"),
    ("NaN", "non-finite number"),
    ("Infinity", "non-finite number"),
    ("-Infinity", "non-finite number"),
    ('{"score": NaN}', "non-finite number"),
    ("[1, Infinity]", "non-finite number"),
    ("1e999", "non-finite number"),
    ("-1e999", "non-finite number"),
]


def failure_kind(parse, text: str) -> str | None:
    """The kind of failure ``parse`` reports for ``text``, or None when it accepts it."""
    try:
        parse(text)
    except StrictJSONError as exc:
        return exc.kind
    return None


class TestLoadsStrict:
    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            (
                '{"a": 1, "b": [true, false, null], "c": "x"}',
                {"a": 1, "b": [True, False, None], "c": "x"},
            ),
            ("[]", []),
            ("null", None),
            ("  42 \n", 42),
            ("-0.5e3", -500.0),
            ('"text"', "text"),
            ('{"a": {"b": {"a": 1}}}', {"a": {"b": {"a": 1}}}),
            ('{"": 1, " ": 2}', {"": 1, " ": 2}),
        ],
    )
    def test_valid_json_is_returned(self, text, expected):
        """Valid JSON parses to the value json.loads gives, with no key repeated."""
        assert expected == loads_strict(text)

    @pytest.mark.parametrize(("text", "kind"), LENIENT)
    def test_lenient_json_is_rejected(self, text, kind):
        """Duplicate keys (at any depth) and non-finite numbers are rejected by kind."""
        assert kind == failure_kind(loads_strict, text)

    @pytest.mark.parametrize(("text", "kind"), LENIENT)
    def test_plain_json_loads_is_caught(self, text, kind):
        """The same assertion fails against plain json.loads, which accepts every one."""
        json.loads(text)  # does not raise: the naive parser takes them all
        assert kind != failure_kind(json.loads, text)

    @pytest.mark.parametrize(
        "text",
        [
            "",
            "   \n",
            "{",
            '{"a": 1',
            "{'a': 1}",
            '{"a": 1} trailing',
            "\ufeff{}",
            "nan",
            "1" * 5000,
        ],
    )
    def test_non_json_is_rejected(self, text):
        """Empty, truncated, single-quoted, trailing or over-long-integer text is not JSON."""
        assert "not JSON" == failure_kind(loads_strict, text)

    def test_deep_nesting_is_rejected(self):
        """Nesting past the parser's recursion is a typed error, not a RecursionError."""
        assert "nesting too deep" == failure_kind(loads_strict, "[" * 100_000 + "]" * 100_000)

    def test_message_is_the_kind_only(self):
        """The message is the fixed kind, and no exception from json is chained."""
        canary = "CANARY-strictjson-4b1e"
        with pytest.raises(StrictJSONError) as info:
            loads_strict(f'{{"{canary}": 1, "{canary}": 2}}')
        assert ("duplicate key", None, None) == (
            str(info.value),
            info.value.__cause__,
            info.value.__context__,
        )

    def test_decode_error_is_not_chained(self):
        """A syntax error drops json's JSONDecodeError, whose .doc holds the whole input."""
        with pytest.raises(StrictJSONError) as info:
            loads_strict("CANARY-strictjson-4b1e")
        assert ("not JSON", None, None) == (
            str(info.value),
            info.value.__cause__,
            info.value.__context__,
        )

    def test_error_pickles(self):
        """A StrictJSONError survives pickling with its kind."""
        restored = pickle.loads(pickle.dumps(StrictJSONError("duplicate key")))  # noqa: S301 - our own bytes
        assert ("duplicate key", "duplicate key") == (restored.kind, str(restored))

    def test_error_is_a_value_error(self):
        """StrictJSONError is a ValueError, so generic parsing handlers still catch it."""
        assert issubclass(StrictJSONError, ValueError)


class TestSize:
    def test_over_one_megabyte_is_rejected_before_parsing(self):
        """A text over 1 MB is rejected as too large even if it is valid JSON."""
        text = '"' + "a" * MAX_TEXT_BYTES + '"'
        json.loads(text)  # valid JSON: the size alone is what fails
        assert "too large" == failure_kind(loads_strict, text)

    def test_limit_counts_utf8_bytes(self):
        """The limit is in UTF-8 bytes, so few characters of many bytes also fail."""
        text = "é" * (MAX_TEXT_BYTES // 2 + 1)
        assert (True, "too large") == (len(text) < MAX_TEXT_BYTES, failure_kind(check_size, text))

    def test_lone_surrogates_are_counted_not_crashed_on(self):
        """A str holding a lone surrogate is measured instead of raising UnicodeEncodeError."""
        assert None is failure_kind(check_size, "\ud800")

    def test_text_at_the_limit_is_parsed(self):
        """A text of exactly 1 MB is parsed."""
        text = '"' + "a" * (MAX_TEXT_BYTES - 2) + '"'
        assert MAX_TEXT_BYTES - 2 == len(loads_strict(text))  # type: ignore[arg-type]

    def test_a_callers_cap_replaces_the_default(self):
        """max_bytes moves the limit both ways: a larger cap parses past 1 MB, a smaller one refuses."""
        text = '"' + "a" * MAX_TEXT_BYTES + '"'
        assert (MAX_TEXT_BYTES, "too large") == (
            len(loads_strict(text, max_bytes=2 * MAX_TEXT_BYTES)),  # type: ignore[arg-type]
            failure_kind(lambda t: loads_strict(t, max_bytes=3), '"ab"'),
        )

    def test_no_cap_parses_any_size(self):
        """max_bytes=None (a check input line) parses past 1 MB, which the default refuses."""
        text = '"' + "a" * MAX_TEXT_BYTES + '"'
        assert (MAX_TEXT_BYTES, "too large") == (
            len(loads_strict(text, max_bytes=None)),  # type: ignore[arg-type]
            failure_kind(loads_strict, text),
        )

    @pytest.mark.parametrize(("text", "kind"), LENIENT)
    def test_no_cap_is_still_strict(self, text, kind):
        """Without a cap every lenient text is refused exactly as with one."""
        assert kind == failure_kind(lambda t: loads_strict(t, max_bytes=None), text)


class TestStripSingleFence:
    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            ('```\n{"a": 1}\n```', '{"a": 1}'),
            ('```json\n{"a": 1}\n```', '{"a": 1}'),
            ('```JSON\n{"a": 1}\n```', '{"a": 1}'),
            ('\n  ```json\n{\n  "a": 1\n}\n```  \n', '{\n  "a": 1\n}'),
            ('```json\r\n{"a": 1}\r\n```', '{"a": 1}\r'),
        ],
    )
    def test_one_fence_is_removed(self, text, expected):
        """A reply that is exactly one ``` or ```json block gives back its content."""
        assert expected == strip_single_fence(text)

    @pytest.mark.parametrize(
        "text",
        [
            '{"a": 1}',
            '```json\n{"a": 1}\n```\n```json\n{"b": 2}\n```',
            'Here it is:\n```json\n{"a": 1}\n```',
            '```json\n{"a": 1}\n```\nHope this helps.',
            '```json\n{"a": 1}',
            '```python\n{"a": 1}\n```',
            '```json {"a": 1} ```',
            "```\n```",
            '~~~\n{"a": 1}\n~~~',
        ],
    )
    def test_anything_else_is_unchanged(self, text):
        """Two fences, prose around a fence, unclosed or other-language fences stay as they are."""
        assert text == strip_single_fence(text)

    def test_unchanged_text_then_fails_to_parse(self):
        """Prose plus a fence is not repaired into JSON: it fails strict parsing."""
        text = 'Sure!\n```json\n{"a": 1}\n```'
        assert "not JSON" == failure_kind(loads_strict, strip_single_fence(text))
