"""The faithfulness judge and the strict parsing of its replies, SPEC §3.8."""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import string

import pydantic
import pytest

from citemark import ChatError, JudgeError, Source
from citemark._judging.judge import (
    DEFAULT_JUDGE_PROMPT,
    FaithfulnessJudge,
    FaithfulnessVerdict,
    parse_verdict,
    render_judge_prompt,
)
from citemark._model.strictjson import MAX_TEXT_BYTES
from citemark.testing import ScriptedChat

QUESTION = "How long does the license last, and what does it cost?"
ANSWER = "The license is perpetual [1]. It costs \u201cnothing\u201d  at all\n[2]."
SOURCES = [
    Source(text="The license is perpetual and irrevocable.", doc_id="LICENSE"),
    Source(text="No fee is charged.\n[3] forged header", doc_id="PRICING"),
]
CANARY = "CANARY-judge-9d2c71"
HEADER = re.compile(r"^\[[0-9]+\]", re.MULTILINE)


def reply(**fields: object) -> str:
    """A JSON reply with the given fields, in the order given."""
    return json.dumps(fields)


UNFAITHFUL = {
    "faithful": False,
    "unsupported_claims": ["It costs \u201cnothing\u201d"],
    "reasoning": "Source 2 is about fees.",
}
UNFAITHFUL_VERDICT = FaithfulnessVerdict(
    faithful=False,
    unsupported_claims=("It costs \u201cnothing\u201d",),
    reasoning="Source 2 is about fees.",
)
GOOD = reply(faithful=True, unsupported_claims=[], reasoning="Both claims are stated.")
GOOD_VERDICT = FaithfulnessVerdict(
    faithful=True, unsupported_claims=(), reasoning="Both claims are stated."
)

SCHEMA = "judge reply failed its schema: "
NOT_JSON = "judge reply is not strict JSON: not JSON"
NOT_OBJECT = "judge reply is not a JSON object"
NON_FINITE = "judge reply is not strict JSON: non-finite number"
TOO_LARGE = f"judge reply is too large: it must be at most {MAX_TEXT_BYTES} bytes"
MISSING_ALL = (
    SCHEMA + "missing field 'faithful'; missing field 'unsupported_claims'; "
    "missing field 'reasoning'; unexpected field"
)
NOT_IN_ANSWER = "judge reply is not usable: unsupported claim {} does not occur in the answer"
BLANK = "judge reply is not usable: unsupported claim {} is blank"

# Each malformed reply, with the whole message its JudgeError must carry.
MALFORMED = [
    ("prose_before_json", "Here is my verdict: " + GOOD, NOT_JSON),
    ("prose_after_json", GOOD + "\nLet me know if you need more.", NOT_JSON),
    ("two_fences", f"```json\n{GOOD}\n```\n```json\n{GOOD}\n```", NOT_JSON),
    ("fence_then_prose", f"```json\n{GOOD}\n```\nHope this helps.", NOT_JSON),
    ("prose_then_fence", f"Verdict:\n```json\n{GOOD}\n```", NOT_JSON),
    ("unclosed_fence", f"```json\n{GOOD}", NOT_JSON),
    ("truncated_json", GOOD[:-7], NOT_JSON),
    ("empty_reply", "", NOT_JSON),
    ("whitespace_only", " \n\t \n", NOT_JSON),
    ("single_quotes", GOOD.replace('"', "'"), NOT_JSON),
    ("null", "null", NOT_OBJECT),
    ("empty_list", "[]", NOT_OBJECT),
    ("list_of_verdict", f"[{GOOD}]", NOT_OBJECT),
    ("bare_number", "1", NOT_OBJECT),
    ("bare_string", '"faithful"', NOT_OBJECT),
    ("bare_boolean", "true", NOT_OBJECT),
    ("nested_verdict", f'{{"verdict": {GOOD}}}', MISSING_ALL),
    ("nan", '{"faithful": true, "unsupported_claims": [], "reasoning": NaN}', NON_FINITE),
    ("infinity", '{"faithful": Infinity, "unsupported_claims": [], "reasoning": ""}', NON_FINITE),
    (
        "minus_infinity",
        '{"faithful": -Infinity, "unsupported_claims": [], "reasoning": ""}',
        NON_FINITE,
    ),
    (
        "overflowing_float",
        '{"faithful": 1e999, "unsupported_claims": [], "reasoning": ""}',
        NON_FINITE,
    ),
    (
        "duplicate_key",
        '{"faithful": false, "faithful": true, "unsupported_claims": [], "reasoning": ""}',
        "judge reply is not strict JSON: duplicate key",
    ),
    (
        "faithful_as_string",
        reply(faithful="true", unsupported_claims=[], reasoning="r"),
        SCHEMA + "field 'faithful' must be true or false (bool_type)",
    ),
    (
        "faithful_as_number",
        reply(faithful=1, unsupported_claims=[], reasoning="r"),
        SCHEMA + "field 'faithful' must be true or false (bool_type)",
    ),
    (
        "extra_field",
        reply(faithful=True, unsupported_claims=[], reasoning="r", score=0.9),
        SCHEMA + "unexpected field",
    ),
    (
        "missing_faithful",
        reply(unsupported_claims=[], reasoning="r"),
        SCHEMA + "missing field 'faithful'",
    ),
    (
        "missing_unsupported_claims",
        reply(faithful=True, reasoning="r"),
        SCHEMA + "missing field 'unsupported_claims'",
    ),
    (
        "missing_reasoning",
        reply(faithful=True, unsupported_claims=[]),
        SCHEMA + "missing field 'reasoning'",
    ),
    (
        "faithful_with_claims",
        reply(faithful=True, unsupported_claims=["It costs"], reasoning="r"),
        SCHEMA + "faithful is true but unsupported_claims is not empty",
    ),
    (
        "claims_as_string",
        reply(faithful=False, unsupported_claims="It costs", reasoning="r"),
        SCHEMA + "field 'unsupported_claims' must be a list (tuple_type)",
    ),
    (
        "claims_as_object",
        reply(faithful=False, unsupported_claims={"1": "It costs"}, reasoning="r"),
        SCHEMA + "field 'unsupported_claims' must be a list (tuple_type)",
    ),
    (
        "claims_null",
        reply(faithful=False, unsupported_claims=None, reasoning="r"),
        SCHEMA + "field 'unsupported_claims' must be a list (tuple_type)",
    ),
    (
        "claim_is_a_number",
        reply(faithful=False, unsupported_claims=["It costs", 2], reasoning="r"),
        SCHEMA + "field 'unsupported_claims' item 2 must be a string (string_type)",
    ),
    (
        "reasoning_null",
        reply(faithful=True, unsupported_claims=[], reasoning=None),
        SCHEMA + "field 'reasoning' must be a string (string_type)",
    ),
    (
        "several_schema_failures",
        reply(faithful="no", unsupported_claims=[None], extra=1),
        SCHEMA + "field 'faithful' must be true or false (bool_type); "
        "field 'unsupported_claims' item 1 must be a string (string_type); "
        "missing field 'reasoning'; unexpected field",
    ),
    (
        "claim_never_made",
        reply(faithful=False, unsupported_claims=["The license expires in 2030."], reasoning="r"),
        NOT_IN_ANSWER.format(1),
    ),
    (
        "second_claim_never_made",
        reply(faithful=False, unsupported_claims=["perpetual", "It is free."], reasoning="r"),
        NOT_IN_ANSWER.format(2),
    ),
    (
        "claim_differs_in_case",
        reply(faithful=False, unsupported_claims=["the license is perpetual"], reasoning="r"),
        NOT_IN_ANSWER.format(1),
    ),
    (
        "blank_claim",
        reply(faithful=False, unsupported_claims=["perpetual", " \n\t"], reasoning="r"),
        BLANK.format(2),
    ),
    ("empty_claim", reply(faithful=False, unsupported_claims=[""], reasoning="r"), BLANK.format(1)),
    ("one_megabyte_of_text", "x" * (MAX_TEXT_BYTES + 1), TOO_LARGE),
    (
        "one_megabyte_of_valid_json",
        reply(faithful=True, unsupported_claims=[], reasoning="r" * MAX_TEXT_BYTES),
        TOO_LARGE,
    ),
    (
        "deep_nesting",
        "[" * 100_000 + "]" * 100_000,
        "judge reply is not strict JSON: nesting too deep",
    ),
]

# Valid replies, as the judge model might write them, with the verdict each gives.
VALID = [
    ("plain_json", GOOD, GOOD_VERDICT),
    ("fenced", f"```\n{GOOD}\n```", GOOD_VERDICT),
    ("json_fenced", f"\n```json\n{GOOD}\n```\n", GOOD_VERDICT),
    ("pretty_printed", json.dumps(json.loads(GOOD), indent=2), GOOD_VERDICT),
    ("curly_quotes_in_claim", reply(**UNFAITHFUL), UNFAITHFUL_VERDICT),
    (
        "straight_quotes_and_single_spaces",
        reply(faithful=False, unsupported_claims=['costs "nothing" at all [2]'], reasoning=""),
        FaithfulnessVerdict(
            faithful=False, unsupported_claims=('costs "nothing" at all [2]',), reasoning=""
        ),
    ),
    (
        "claim_with_line_break_and_indent",
        reply(faithful=False, unsupported_claims=["at all\n    [2]."], reasoning="r"),
        FaithfulnessVerdict(
            faithful=False, unsupported_claims=("at all\n    [2].",), reasoning="r"
        ),
    ),
    (
        "unfaithful_without_claims",
        reply(faithful=False, unsupported_claims=[], reasoning="r"),
        FaithfulnessVerdict(faithful=False, unsupported_claims=(), reasoning="r"),
    ),
]


def run_judge(replies, question=QUESTION, answer=ANSWER, sources=SOURCES, **kwargs):
    """Judge once with a ScriptedChat scripted with ``replies``; return the outcome and chat."""
    chat = ScriptedChat(replies)
    judge = FaithfulnessJudge(chat, **kwargs)
    try:
        outcome = asyncio.run(judge.judge(question, answer, sources))
    except JudgeError as exc:
        return exc, chat
    return outcome, chat


def leaks(error: BaseException, canary: str) -> bool:
    """Whether the canary appears in the error's str or repr, or in anything chained to it."""
    chained = [e for e in (error.__cause__, error.__context__) if e is not None]
    return any(canary in str(e) or canary in repr(e) for e in [error, *chained])


class TestMalformedReplies:
    def test_table_is_large_enough(self):
        """At least 25 distinct malformed replies are exercised."""
        assert len({text for _, text, _ in MALFORMED}) >= 25

    @pytest.mark.parametrize(
        ("reply_text", "message"), [c[1:] for c in MALFORMED], ids=[c[0] for c in MALFORMED]
    )
    def test_malformed_reply_raises_judge_error(self, reply_text, message):
        """Each malformed reply raises JudgeError naming the kind of failure, after one call."""
        outcome, chat = run_judge([reply_text])
        assert (JudgeError, message, 1, None, None) == (
            type(outcome),
            str(outcome),
            len(chat.prompts),
            outcome.__cause__,
            outcome.__context__,
        )

    @pytest.mark.parametrize(
        ("reply_text", "message"), [c[1:] for c in MALFORMED], ids=[c[0] for c in MALFORMED]
    )
    def test_parse_verdict_agrees_with_judge(self, reply_text, message):
        """parse_verdict, the pure parser, rejects the same replies with the same message."""
        with pytest.raises(JudgeError) as info:
            parse_verdict(reply_text, ANSWER)
        assert message == str(info.value)


class TestValidReplies:
    @pytest.mark.parametrize(
        ("reply_text", "expected"), [c[1:] for c in VALID], ids=[c[0] for c in VALID]
    )
    def test_valid_reply_gives_a_verdict(self, reply_text, expected):
        """Plain, fenced and ```json-fenced JSON give a verdict; claims match after normalization."""
        outcome, chat = run_judge([reply_text])
        assert (expected, 1) == (outcome, len(chat.prompts))

    def test_judge_sync_gives_the_same_verdict(self):
        """judge_sync runs judge to completion and returns its verdict."""
        judge = FaithfulnessJudge(ScriptedChat([reply(**UNFAITHFUL)]))
        assert UNFAITHFUL_VERDICT == judge.judge_sync(QUESTION, ANSWER, SOURCES)

    def test_naive_parser_trusts_an_invented_claim(self):
        """A parser that does not check claims against the answer accepts what parse_verdict rejects."""
        invented = reply(
            faithful=False, unsupported_claims=["The license expires in 2030."], reasoning="r"
        )
        naive = FaithfulnessVerdict.model_validate(json.loads(invented))
        with pytest.raises(JudgeError) as info:
            parse_verdict(invented, ANSWER)
        assert (("The license expires in 2030.",), NOT_IN_ANSWER.format(1)) == (
            naive.unsupported_claims,
            str(info.value),
        )

    def test_naive_json_accepts_the_duplicate_key(self):
        """Plain json.loads lets a second "faithful" overwrite the first: strict parsing matters."""
        forged = '{"faithful": false, "faithful": true, "unsupported_claims": [], "reasoning": ""}'
        naive = FaithfulnessVerdict.model_validate(json.loads(forged))
        with pytest.raises(JudgeError):
            parse_verdict(forged, ANSWER)
        assert True is naive.faithful


class TestCanary:
    def test_unexpected_key_is_never_echoed(self):
        """An unexpected key is reported as "unexpected field", never by its name."""
        forged = reply(faithful=True, unsupported_claims=[], reasoning="r", **{CANARY: 1})
        outcome, _ = run_judge([forged])
        assert (JudgeError, SCHEMA + "unexpected field", False) == (
            type(outcome),
            str(outcome),
            leaks(outcome, CANARY),
        )

    def test_pydantic_error_would_leak_the_key(self):
        """pydantic's own error prints the unexpected key despite hide_input_in_errors."""
        with pytest.raises(pydantic.ValidationError) as info:
            FaithfulnessVerdict.model_validate(
                {"faithful": True, "unsupported_claims": (), "reasoning": "", CANARY: 1}
            )
        assert True is leaks(info.value, CANARY)

    def test_inputs_never_reach_a_judge_error(self):
        """A canary in the question, the answer, the sources and the reply never appears in a JudgeError."""
        sources = [
            Source(text=f"{s.text} {CANARY}", doc_id=f"{CANARY}-{s.doc_id}") for s in SOURCES
        ]
        canary_replies = [
            reply(faithful=False, unsupported_claims=[f"{CANARY} never said"], reasoning=CANARY),
            reply(faithful=CANARY, unsupported_claims=[CANARY], reasoning=CANARY),
            reply(
                faithful=False, unsupported_claims=[1], reasoning="r", **{f"{CANARY}-key": CANARY}
            ),
            f"{CANARY} {GOOD}",
            f'{{"{CANARY}": 1, "{CANARY}": 2}}',
            f'"{CANARY}"',
            CANARY * (MAX_TEXT_BYTES // len(CANARY) + 1),
        ]
        errors = []
        for reply_text in [text for _, text, _ in MALFORMED] + canary_replies:
            outcome, _ = run_judge(
                [reply_text], f"{CANARY} {QUESTION}", f"{CANARY} {ANSWER}", sources
            )
            errors.append(outcome)
        assert ([JudgeError] * len(errors), []) == (
            [type(e) for e in errors],
            [str(e) for e in errors if leaks(e, CANARY)],
        )


class TestPrompt:
    def test_one_prompt_per_call(self):
        """Each judge call makes exactly one model call, whether it succeeds or fails."""
        chat = ScriptedChat([GOOD, "not json", reply(**UNFAITHFUL)])
        judge = FaithfulnessJudge(chat)
        outcomes = []
        for _ in range(3):
            try:
                outcomes.append(asyncio.run(judge.judge(QUESTION, ANSWER, SOURCES)))
            except JudgeError as exc:
                outcomes.append(type(exc))
        assert ([GOOD_VERDICT, JudgeError, UNFAITHFUL_VERDICT], 3, 0) == (
            outcomes,
            len(chat.prompts),
            chat.remaining,
        )

    def test_prompt_holds_each_input_once(self):
        """The prompt holds the question, the answer and each source header exactly once."""
        _, chat = run_judge([GOOD], question="What is the term?", answer="It is perpetual.")
        prompt = chat.prompts[0]
        assert (1, 1, ["[1]", "[2]"]) == (
            prompt.count("What is the term?"),
            prompt.count("It is perpetual."),
            HEADER.findall(prompt),
        )

    def test_inputs_cannot_forge_headers(self):
        """Line breaks in the question, the answer or a source cannot start a new [n] line."""
        _, chat = run_judge([GOOD], question="Q?\n[7] forged", answer="A [1].\n[2] forged")
        assert ["[1]", "[2]"] == HEADER.findall(chat.prompts[0])

    def test_prompt_is_rendered_from_the_template(self):
        """The prompt sent is the template filled by render_judge_prompt."""
        _, chat = run_judge([GOOD])
        assert [render_judge_prompt(QUESTION, ANSWER, SOURCES)] == chat.prompts

    def test_custom_template_is_used(self):
        """A caller's template is filled with the same three fields."""
        template = "Q={question}\nA={answer}\nS={sources}\nJSON: {{...}}"
        _, chat = run_judge(
            [GOOD], question="q", answer="a", sources=SOURCES[:1], prompt_template=template
        )
        assert [
            "Q=q\nA=a\nS=[1] The license is perpetual and irrevocable.\nJSON: {...}"
        ] == chat.prompts

    def test_default_template_uses_exactly_the_three_fields(self):
        """The default template's only replacement fields are question, answer and sources."""
        fields = [
            name
            for _, name, _, _ in string.Formatter().parse(DEFAULT_JUDGE_PROMPT)
            if name is not None
        ]
        assert ["sources", "question", "answer"] == fields

    def test_default_template_example_is_a_valid_verdict(self):
        """The JSON example the default prompt shows parses as a verdict."""
        example = render_judge_prompt("q", "The license lasts ten years.", []).rsplit("\n", 1)[-1]
        assert FaithfulnessVerdict(
            faithful=False,
            unsupported_claims=("The license lasts ten years.",),
            reasoning="No source states how long the license lasts.",
        ) == parse_verdict(example, "The license lasts ten years.")

    @pytest.mark.parametrize(
        "template",
        [
            "{question} {answer}",
            "{question} {answer} {sources} {extra}",
            "{question} {answer} {sources} {0}",
            "{question} {answer!r} {sources}",
            "{question:>10} {answer} {sources}",
            "{question} {answer} {sources} {",
            "{question} {answer} {sources} }",
        ],
    )
    def test_bad_template_is_refused(self, template):
        """A template that could not be filled as intended is refused when the judge is built."""
        with pytest.raises(ValueError, match="prompt template must use exactly the fields"):
            FaithfulnessJudge(ScriptedChat([]), template)


class TestIdentity:
    def test_identity_comes_from_the_chat(self):
        """provider and model_name are the chat's own."""
        judge = FaithfulnessJudge(ScriptedChat([], provider="acme", model_name="judge-7b"))
        assert ("acme", "judge-7b") == (judge.provider, judge.model_name)

    def test_prompt_sha256_is_the_template_hash(self):
        """prompt_sha256 is the SHA-256 of the template's UTF-8 text."""
        judge = FaithfulnessJudge(ScriptedChat([]))
        assert (
            hashlib.sha256(DEFAULT_JUDGE_PROMPT.encode()).hexdigest(),
            DEFAULT_JUDGE_PROMPT,
        ) == (
            judge.prompt_sha256,
            judge.prompt_template,
        )

    def test_prompt_sha256_changes_with_the_template(self):
        """A different template, even by one character, is a different hash."""
        changed = DEFAULT_JUDGE_PROMPT + " "
        judge = FaithfulnessJudge(ScriptedChat([]), changed)
        assert (hashlib.sha256(changed.encode()).hexdigest(), True) == (
            judge.prompt_sha256,
            judge.prompt_sha256 != FaithfulnessJudge(ScriptedChat([])).prompt_sha256,
        )


class TestChatFailure:
    def test_chat_error_propagates_unchanged(self):
        """A ChatError from the model propagates as itself, after one call and no retry."""
        failure = ChatError("read timeout", provider="scripted", model="scripted-chat")
        chat = ScriptedChat([failure, GOOD])
        with pytest.raises(ChatError) as info:
            FaithfulnessJudge(chat).judge_sync(QUESTION, ANSWER, SOURCES)
        assert (failure, 1) == (info.value, len(chat.prompts))

    def test_chat_error_is_not_a_judge_error(self):
        """ChatError and JudgeError are siblings: catching one never swallows the other."""
        assert (False, False) == (
            issubclass(ChatError, JudgeError),
            issubclass(JudgeError, ChatError),
        )


class TestVerdict:
    def test_strings_are_not_booleans(self):
        """The model is strict: "true" is not coerced to True, even when built directly."""
        with pytest.raises(pydantic.ValidationError) as info:
            FaithfulnessVerdict(faithful="true", unsupported_claims=(), reasoning="r")  # type: ignore[arg-type]
        assert ["bool_type"] == [e["type"] for e in info.value.errors()]

    def test_list_is_taken_as_a_tuple(self):
        """A list of claims, as JSON gives it, becomes a tuple."""
        verdict = FaithfulnessVerdict(faithful=False, unsupported_claims=["a", "b"], reasoning="r")  # type: ignore[arg-type]
        assert ("a", "b") == verdict.unsupported_claims

    def test_incoherent_verdict_is_refused(self):
        """faithful=True with unsupported claims is refused with its own error type."""
        with pytest.raises(pydantic.ValidationError) as info:
            FaithfulnessVerdict(faithful=True, unsupported_claims=("a",), reasoning="r")
        assert ["incoherent_verdict"] == [e["type"] for e in info.value.errors()]

    def test_verdict_is_frozen(self):
        """A verdict cannot be changed after it is made."""
        with pytest.raises(pydantic.ValidationError):
            GOOD_VERDICT.faithful = False  # type: ignore[misc]

    def test_there_is_no_score(self):
        """The verdict has exactly three fields, and none of them is a number."""
        assert {"faithful": bool, "unsupported_claims": tuple[str, ...], "reasoning": str} == {
            name: field.annotation for name, field in FaithfulnessVerdict.model_fields.items()
        }
