"""The planted-marker echo check, SPEC §3.10, proved offline with scripted models."""

from __future__ import annotations

import asyncio
import json
import re
import tempfile
from pathlib import Path

import pytest
from pydantic import ValidationError

from citemark import (
    DEFAULT_ECHO_CASES,
    ChatError,
    Citation,
    CitedAnswer,
    EchoCase,
    ModelIdentity,
    PlannedCase,
    Synthesizer,
    plan_echo,
    run_echo_check_sync,
)
from citemark.echo import EchoReport, run_echo_check
from citemark.testing import ScriptedChat, ScriptExhaustedError

SEED = 20260815
MARKER = re.compile(r"CM-ECHO-[0-9a-f]{32}")


def source_number(prompt: str, needle: str) -> int:
    """The number the prompt shows the source containing ``needle`` under."""
    for m in re.finditer(r"^\[(\d+)\] (.*)$", prompt, re.MULTILINE):
        if needle in m.group(2):
            return int(m.group(1))
    msg = "needle not in any rendered source"
    raise AssertionError(msg)


def citing(marker: str, extra: str = ""):
    """A scripted reply that reads the prompt and cites the source carrying ``marker``."""

    def reply(prompt: str) -> str:
        return f"It is as stated [{source_number(prompt, marker)}].{extra}"

    return reply


def only_case(seed: int = SEED) -> PlannedCase:
    return plan_echo(seed, 1).cases[0]


def naive_outcome(answer: CitedAnswer, case: PlannedCase) -> str:
    """A checker that does not look: it grades the citations and never searches for the absent marker."""
    cited = [citation.text for citation in answer.citations]
    if any(case.decoy.marker in text for text in cited):
        return "wrong_source"
    if any(case.positive.marker in text for text in cited):
        return "pass"
    return "uncited"


class TestPlan:
    def test_same_seed_plans_the_same_corpus(self):
        """Two plans from one seed are equal: same documents, same markers, same corpus hash."""
        first, second = plan_echo(SEED, 3), plan_echo(SEED, 3)
        assert first == second
        assert first.corpus_sha256 == second.corpus_sha256

    def test_different_seeds_plan_different_markers(self):
        """Another seed gives other markers and another corpus hash."""
        first, second = plan_echo(SEED, 3), plan_echo(SEED + 1, 3)
        markers = {m for case in first.cases for m in case.markers}
        assert set() == markers & {m for case in second.cases for m in case.markers}
        assert first.corpus_sha256 != second.corpus_sha256

    def test_no_seed_draws_fresh_markers_each_time(self):
        """Without a seed, two plans share no marker."""
        first, second = plan_echo(None, 3), plan_echo(None, 3)
        assert set() == {m for c in first.cases for m in c.markers} & {
            m for c in second.cases for m in c.markers
        }

    def test_markers_are_high_entropy_and_distinct(self):
        """Every marker is CM-ECHO- and 32 hex digits (128 bits), and no two in a run are equal."""
        markers = [m for case in plan_echo(SEED, 9).cases for m in case.markers]
        assert all(MARKER.fullmatch(marker) for marker in markers)
        assert 27 == len(set(markers))

    def test_passages_carry_markers_at_exact_offsets(self):
        """Each presented passage is its document's text at its offsets, and carries its marker."""
        for case in plan_echo(SEED, 3).cases:
            for document in (case.positive, case.decoy):
                source = document.passage
                assert source.text == document.text[source.start : source.end]
                assert document.marker in source.text
                assert document.doc_id == source.doc_id

    def test_the_absent_marker_is_written_nowhere(self):
        """The absent marker is in neither document of its case, nor any other."""
        plan = plan_echo(SEED, 3)
        texts = [d.text for case in plan.cases for d in (case.positive, case.decoy)]
        for case in plan.cases:
            assert not any(case.absent_marker in text for text in texts)

    def test_presentation_order_varies(self):
        """The positive passage is presented as [1] in some cases and as [2] in others."""
        numbers = {case.positive_number for case in plan_echo(SEED, 12).cases}
        assert {1, 2} == numbers

    def test_a_number_of_cases_cycles_the_defaults(self):
        """cases=4 plans the three default questions and then the first again."""
        questions = [case.question for case in plan_echo(SEED, 4).cases]
        expected = [c.question for c in DEFAULT_ECHO_CASES] + [DEFAULT_ECHO_CASES[0].question]
        assert expected == questions

    def test_custom_cases_are_used(self):
        """A list of EchoCase plans exactly those cases."""
        case = EchoCase(
            question="What colour are Bellweather bikes?",
            passage="Bellweather bikes are painted green.",
            decoy="Bellweather scooters are painted grey.",
        )
        planned = plan_echo(SEED, [case]).cases
        assert ["What colour are Bellweather bikes?"] == [c.question for c in planned]
        assert planned[0].positive.passage.text.startswith(case.passage)

    @pytest.mark.parametrize("cases", [0, -1, [], True])
    def test_no_cases_is_refused(self, cases):
        """Zero, negative, empty or boolean cases raise ValueError."""
        with pytest.raises(ValueError, match="cases must be"):
            plan_echo(SEED, cases)

    def test_a_case_may_not_carry_its_own_marker(self):
        """A template holding CM-ECHO- is refused: markers are planted per run, never committed."""
        with pytest.raises(ValidationError, match="must not contain"):
            EchoCase(question="q", passage="cm-echo-0123 is here", decoy="something else")

    def test_the_decoy_must_differ(self):
        """A decoy equal to its passage is refused."""
        with pytest.raises(ValidationError, match="decoy must differ"):
            EchoCase(question="q", passage="same", decoy="same")


class TestOutcomes:
    def test_citing_the_positive_passage_passes(self):
        """An answer citing the positive passage passes, its citation verified from the file."""
        case = only_case()
        report = run_echo_check_sync(
            Synthesizer(ScriptedChat([citing(case.positive.marker)])), cases=1, seed=SEED
        )
        result = report.cases[0]
        assert "pass" == result.outcome
        assert [("verified", "positive")] == [
            (c.verification, c.document) for c in result.citations
        ]
        assert report.passed

    def test_a_leak_is_caught_where_a_checker_that_does_not_look_misses_it(self):
        """An answer holding the absent marker is a leak; the naive checker grades it a pass."""
        case = only_case()
        chat = ScriptedChat([citing(case.positive.marker, f" Ref {case.absent_marker}.")])
        synthesizer = Synthesizer(chat)
        answers: list[CitedAnswer] = []

        async def pipeline(question, sources):
            answer = await synthesizer.synthesize(question, sources)
            answers.append(answer)
            return answer

        report = run_echo_check_sync(pipeline, cases=1, seed=SEED)
        # The absent marker came from the plan, not from the prompt: it was never shown.
        assert case.absent_marker not in chat.prompts[0]
        # The same assertion against both checkers: only the real one catches the leak.
        for checker, outcome, catches in (
            ("citemark", report.cases[0].outcome, True),
            ("naive", naive_outcome(answers[0], case), False),
        ):
            assert catches == ("leak" == outcome), checker
        assert "pass" == naive_outcome(answers[0], case)
        assert ("answer",) == report.cases[0].leaked_in

    def test_a_leak_is_found_case_insensitively(self):
        """The absent marker in upper case is still a leak."""
        case = only_case()
        chat = ScriptedChat([citing(case.positive.marker, f" {case.absent_marker.upper()}")])
        report = run_echo_check_sync(Synthesizer(chat), cases=1, seed=SEED)
        assert "leak" == report.cases[0].outcome

    def test_a_leak_in_a_citation_is_caught(self):
        """A citation whose fields hold the absent marker is a leak, even with clean answer text."""
        case = only_case()

        def pipeline(question, sources):
            forged = Citation(
                marker=1,
                doc_id=f"notes-{case.absent_marker}.txt",
                chunk_id=None,
                start=None,
                end=None,
                uri=None,
                text="nothing",
            )
            return CitedAnswer(text="See [1].", citations=(forged,))

        result = run_echo_check_sync(pipeline, cases=1, seed=SEED).cases[0]
        assert ("leak", ("citation",)) == (result.outcome, result.leaked_in)

    def test_a_leak_dominates_a_wrong_source(self):
        """Citing the decoy and writing the absent marker is a leak, not a wrong source."""
        case = only_case()
        chat = ScriptedChat([citing(case.decoy.marker, f" {case.absent_marker}")])
        report = run_echo_check_sync(Synthesizer(chat), cases=1, seed=SEED)
        assert "leak" == report.cases[0].outcome

    def test_citing_the_decoy_is_a_wrong_source(self):
        """An answer citing the lexically similar decoy instead is wrong_source."""
        case = only_case()
        chat = ScriptedChat([citing(case.decoy.marker)])
        result = run_echo_check_sync(Synthesizer(chat), cases=1, seed=SEED).cases[0]
        assert "wrong_source" == result.outcome
        assert [("verified", "decoy")] == [(c.verification, c.document) for c in result.citations]

    def test_citing_both_is_a_wrong_source(self):
        """Citing the decoy beside the positive is still wrong_source: cite-everything never passes."""
        chat = ScriptedChat(["Both say something [1][2]."])
        report = run_echo_check_sync(Synthesizer(chat), cases=1, seed=SEED)
        assert "wrong_source" == report.cases[0].outcome

    def test_an_abstention_is_uncited(self):
        """An answer with no citation is uncited."""
        chat = ScriptedChat(["The sources do not say."])
        result = run_echo_check_sync(Synthesizer(chat), cases=1, seed=SEED).cases[0]
        assert ("uncited", "The sources do not say.", ()) == (
            result.outcome,
            result.answer,
            result.citations,
        )

    def test_a_citation_that_does_not_re_read_is_uncited(self):
        """A citation holding the positive text at offsets its file does not hold is uncited."""
        case = only_case()

        def pipeline(question, sources):
            text = case.positive.passage.text
            moved = Citation(
                marker=1,
                doc_id=case.positive.doc_id,
                chunk_id=None,
                start=0,  # the file holds its header here, not the passage
                end=len(text),
                uri=None,
                text=text,
            )
            return CitedAnswer(text="As stated [1].", citations=(moved,))

        result = run_echo_check_sync(pipeline, cases=1, seed=SEED).cases[0]
        assert ("uncited", ["mismatch"]) == (
            result.outcome,
            [c.verification for c in result.citations],
        )

    def test_an_out_of_range_marker_is_rejected(self):
        """A MarkerOutOfRangeError is recorded as rejected, with its type and no answer."""
        result = run_echo_check_sync(
            Synthesizer(ScriptedChat(["It is [3]."])), cases=1, seed=SEED
        ).cases[0]
        assert ("rejected", "MarkerOutOfRangeError", None) == (
            result.outcome,
            result.error,
            result.answer,
        )

    def test_a_blank_completion_is_rejected(self):
        """A blank completion is a SynthesisError, recorded as rejected."""
        result = run_echo_check_sync(Synthesizer(ScriptedChat(["  "])), cases=1, seed=SEED).cases[0]
        assert ("rejected", "SynthesisError") == (result.outcome, result.error)

    def test_a_failed_call_is_recorded(self):
        """A ChatError ends only its case, recorded as call_failed."""
        chat = ScriptedChat([ChatError("timed out", provider="p", model="m")])
        result = run_echo_check_sync(Synthesizer(chat), cases=1, seed=SEED).cases[0]
        assert ("call_failed", "ChatError") == (result.outcome, result.error)

    def test_one_rejected_case_does_not_stop_the_others(self):
        """A rejection in case 2 leaves cases 1 and 3 to run and pass."""
        cases = plan_echo(SEED, 3).cases
        chat = ScriptedChat(
            [citing(cases[0].positive.marker), "It is [7].", citing(cases[2].positive.marker)]
        )
        report = run_echo_check_sync(Synthesizer(chat), cases=3, seed=SEED)
        assert ["pass", "rejected", "pass"] == [c.outcome for c in report.cases]
        assert {
            "pass": 2,
            "wrong_source": 0,
            "uncited": 0,
            "leak": 0,
            "rejected": 1,
            "call_failed": 0,
        } == report.counts
        assert not report.passed

    def test_the_absent_markers_are_never_in_a_prompt(self):
        """No prompt of a default run holds any case's absent marker."""
        plan = plan_echo(SEED, 3)
        chat = ScriptedChat(["No."] * 3)
        run_echo_check_sync(Synthesizer(chat), seed=SEED)
        assert 3 == len(chat.prompts)
        for case in plan.cases:
            assert not any(case.absent_marker in prompt for prompt in chat.prompts)


class TestPipelines:
    def test_a_synthesizer_records_its_identity(self):
        """A Synthesizer's provider, model and prompt hash are recorded."""
        chat = ScriptedChat(["No."], provider="ollama", model_name="llama3.1")
        synthesizer = Synthesizer(chat)
        report = run_echo_check_sync(synthesizer, cases=1, seed=SEED)
        expected = ModelIdentity(
            provider="ollama", model="llama3.1", prompt_sha256=synthesizer.prompt_sha256
        )
        assert (expected, "citemark.Synthesizer") == (report.synthesis, report.pipeline)

    def test_a_bound_synthesize_method_records_its_identity(self):
        """synthesizer.synthesize passed as a callable still yields the identity."""
        synthesizer = Synthesizer(ScriptedChat(["No."]))
        report = run_echo_check_sync(synthesizer.synthesize, cases=1, seed=SEED)
        assert ModelIdentity.of(synthesizer) == report.synthesis

    def test_an_async_function_runs(self):
        """An async callable of (question, sources) is awaited; its identity is unknown."""
        case = only_case()
        synthesizer = Synthesizer(ScriptedChat([citing(case.positive.marker)]))

        async def pipeline(question, sources):
            return await synthesizer.synthesize(question, sources)

        report = run_echo_check_sync(pipeline, cases=1, seed=SEED)
        assert ("pass", None) == (report.cases[0].outcome, report.synthesis)
        assert report.pipeline.endswith("test_an_async_function_runs.<locals>.pipeline")

    def test_a_sync_function_that_runs_its_own_loop_works(self):
        """A sync callable using asyncio.run (synthesize_sync) runs in a worker thread."""
        case = only_case()
        synthesizer = Synthesizer(ScriptedChat([citing(case.positive.marker)]))
        report = run_echo_check_sync(synthesizer.synthesize_sync, cases=1, seed=SEED)
        assert "pass" == report.cases[0].outcome

    def test_an_object_with_a_sync_synthesize_works(self):
        """An adapter-like object whose synthesize is sync is called once per case."""
        case = only_case()

        class Chain:
            calls = 0

            def synthesize(self, question, sources):
                Chain.calls += 1
                number = 1 if case.positive.marker in sources[0].text else 2
                return CitedAnswer(
                    text=f"As stated [{number}].",
                    citations=(
                        Citation(
                            marker=number,
                            chunk_id=None,
                            uri=None,
                            **sources[number - 1].model_dump(
                                include={"text", "doc_id", "start", "end"}
                            ),
                        ),
                    ),
                )

        report = run_echo_check_sync(Chain(), cases=1, seed=SEED)
        assert ("pass", 1) == (report.cases[0].outcome, Chain.calls)

    def test_an_identity_can_be_passed_in(self):
        """identity= records a pipeline's model where the pipeline does not expose it."""
        identity = ModelIdentity(provider="p", model="m", prompt_sha256="a" * 64)
        report = run_echo_check_sync(
            lambda question, sources: CitedAnswer(text="No."), cases=1, identity=identity
        )
        assert identity == report.synthesis

    def test_the_async_entry_point_runs_in_a_loop(self):
        """run_echo_check is a coroutine usable from async code."""
        report = asyncio.run(run_echo_check(Synthesizer(ScriptedChat(["No."])), cases=1))
        assert 1 == len(report.cases)

    def test_a_pipeline_returning_something_else_is_a_type_error(self):
        """A pipeline that returns a string raises TypeError naming only the type."""
        with pytest.raises(TypeError, match="returned a str, not a CitedAnswer"):
            run_echo_check_sync(lambda question, sources: "It is [1].", cases=1)

    def test_untrusted_text_stays_out_of_the_error(self):
        """A pipeline's returned text never reaches the TypeError's message."""
        canary = "CANARY-echo-5b1d"
        with pytest.raises(TypeError) as info:
            run_echo_check_sync(lambda question, sources: f"{canary} [1]", cases=1)
        assert canary not in str(info.value)

    def test_an_unexpected_error_ends_the_run_without_a_report(self, tmp_path):
        """An exhausted script is a broken test: it propagates and nothing is written."""
        with pytest.raises(ScriptExhaustedError):
            run_echo_check_sync(Synthesizer(ScriptedChat([])), cases=1, out_dir=tmp_path)
        assert [] == list(tmp_path.iterdir())

    def test_the_temporary_folders_are_removed(self):
        """No citemark-echo- folder outlives the run."""
        root = Path(tempfile.gettempdir())
        before = set(root.glob("citemark-echo-*"))
        run_echo_check_sync(Synthesizer(ScriptedChat(["No."] * 3)), seed=SEED)
        assert before == set(root.glob("citemark-echo-*"))


class TestReport:
    def test_same_seed_reproduces_corpus_and_markers(self):
        """Two runs with one seed plant the same markers over the same corpus."""
        first = run_echo_check_sync(Synthesizer(ScriptedChat(["No."] * 3)), seed=SEED)
        second = run_echo_check_sync(Synthesizer(ScriptedChat(["No."] * 3)), seed=SEED)
        assert (first.markers, first.corpus) == (second.markers, second.corpus)
        assert "random.Random(seed)" == first.corpus.generator

    def test_other_seeds_and_no_seed_differ(self):
        """Another seed, or no seed, plants other markers over another corpus hash."""
        reports = [
            run_echo_check_sync(Synthesizer(ScriptedChat(["No."] * 3)), seed=seed)
            for seed in (SEED, SEED + 1, None, None)
        ]
        assert 4 == len({report.corpus.sha256 for report in reports})
        assert 4 * 9 == len({marker for report in reports for marker in report.markers})
        assert ("os.urandom", None) == (reports[2].corpus.generator, reports[2].seed)

    def test_every_planted_marker_is_recorded(self):
        """The report lists each case's positive, decoy and absent markers, as planned."""
        plan = plan_echo(SEED, 3)
        report = run_echo_check_sync(Synthesizer(ScriptedChat(["No."] * 3)), seed=SEED)
        assert tuple(m for case in plan.cases for m in case.markers) == report.markers
        assert plan.corpus_sha256 == report.corpus.sha256

    def test_the_corpus_is_described(self):
        """The corpus section counts cases and documents and states the marker shape."""
        corpus = run_echo_check_sync(Synthesizer(ScriptedChat(["No."] * 3)), seed=SEED).corpus
        assert (3, 6, "CM-ECHO-[0-9a-f]{32}", 128) == (
            corpus.cases,
            corpus.documents,
            corpus.marker_pattern,
            corpus.marker_bits,
        )
        assert "synthetic" in corpus.description.lower()

    def test_the_report_file_is_written_atomically(self, tmp_path):
        """echo-latest.json is valid JSON with schema_version 1, and no temporary file is left."""
        out = tmp_path / "results"
        report = run_echo_check_sync(Synthesizer(ScriptedChat(["No."] * 3)), seed=SEED, out_dir=out)
        path = out / "echo-latest.json"
        assert ["echo-latest.json"] == sorted(p.name for p in out.iterdir())
        data = json.loads(path.read_bytes())
        assert 1 == data["schema_version"]
        assert report == EchoReport.model_validate_json(path.read_bytes())

    def test_a_second_run_replaces_the_report(self, tmp_path):
        """A later run replaces echo-latest.json whole."""
        run_echo_check_sync(Synthesizer(ScriptedChat(["No."])), cases=1, out_dir=tmp_path)
        second = run_echo_check_sync(
            Synthesizer(ScriptedChat(["No."] * 2)), cases=2, out_dir=tmp_path
        )
        path = tmp_path / "echo-latest.json"
        assert second == EchoReport.model_validate_json(path.read_bytes())
        assert ["echo-latest.json"] == [p.name for p in tmp_path.iterdir()]

    def test_the_report_is_frozen_and_strict(self):
        """EchoReport refuses unknown fields and another schema_version."""
        report = run_echo_check_sync(Synthesizer(ScriptedChat(["No."])), cases=1, seed=SEED)
        data = json.loads(report.model_dump_json())
        with pytest.raises(ValidationError):
            EchoReport.model_validate({**data, "score": 0.9})
        with pytest.raises(ValidationError):
            EchoReport.model_validate({**data, "schema_version": 2})
        with pytest.raises(ValidationError):
            report.seed = 1  # type: ignore[misc]
