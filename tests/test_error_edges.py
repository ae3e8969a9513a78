"""Deliberate refusals at the edges raise CitemarkError subclasses, and the CLI catches only those.

Each refusal that citemark 0.1 raised as a bare ``ValueError`` is now a named
`CitemarkError` that is still a ``ValueError`` (code that caught ``ValueError`` keeps
working); the CLI turns the citemark class into a usage line and lets any other
``ValueError`` through, so an unexpected message never becomes citemark's output.
"""

from __future__ import annotations

import ast
import inspect
import json
from pathlib import Path

import pytest

import citemark._pipelines.cli.commands
import citemark._pipelines.cli.main
from citemark import (
    BlankQueryError,
    CalibrationError,
    ChatConfigError,
    CitemarkError,
    LabelledItem,
    LabelSet,
    LabelSetError,
    NoRowsError,
    OpenAIChat,
    QueryRewriter,
    Source,
    StrictJSONError,
    Threshold,
    register_threshold,
)
from citemark._judging.scorer.scorer import CitationScorer
from citemark._model.strictjson import loads_strict
from citemark._pipelines.check.run import run_check
from citemark._pipelines.cli.main import main
from citemark.testing import ScriptedChat

CANARY = "canary-3f9a"


def labels() -> LabelSet:
    item = LabelledItem(
        id="q1",
        question="When?",
        answer="In May [1].",
        sources=[Source(text="Fees rise in May.", doc_id="fees")],
        faithful=True,
        labeller="ana",
        rubric_version="1",
    )
    return LabelSet(items=[item])


def refusal(call) -> BaseException:
    with pytest.raises(CitemarkError) as info:
        call()
    return info.value


class TestRefusalsAreCitemarkErrors:
    def test_each_refusal_is_its_class_and_still_a_value_error(self, tmp_path):
        """Every edge refusal raises its own CitemarkError, which 0.1's ValueError handlers still catch."""
        registration = tmp_path / "reg.json"
        register_threshold(labels(), Threshold(kappa=0.5), registration)
        (tmp_path / "empty.jsonl").write_bytes(b"\n")
        raised = {
            "blank query": refusal(lambda: QueryRewriter(ScriptedChat([])).rewrite_sync("\u200b ")),
            "strict json": refusal(lambda: loads_strict('{"a": 1, "a": 2}')),
            "chat config": refusal(lambda: OpenAIChat("localhost:1/v1", "m")),
            "late registration": refusal(
                lambda: register_threshold(labels(), Threshold(kappa=0.5), registration)
            ),
            "label file": refusal(lambda: LabelSet.from_json(b"[]")),
            "no rows": refusal(
                lambda: run_check(tmp_path / "empty.jsonl", tmp_path / "out", CitationScorer())
            ),
        }
        assert {
            "blank query": BlankQueryError,
            "strict json": StrictJSONError,
            "chat config": ChatConfigError,
            "late registration": CalibrationError,
            "label file": LabelSetError,
            "no rows": NoRowsError,
        } == {name: type(exc) for name, exc in raised.items()}
        assert all(isinstance(exc, ValueError) for exc in raised.values())

    def test_a_label_file_error_is_a_calibration_error(self):
        """Catching CalibrationError catches a bad label file too."""
        assert issubclass(LabelSetError, CalibrationError)


def write_labels(path: Path) -> Path:
    labels().write(path)
    return path


class TestCliCatchesCitemarkTypesOnly:
    def test_a_label_set_error_is_a_usage_line(self, tmp_path, capsys):
        """A refused label file is exit 2 with its structural message."""
        path = tmp_path / "labels.json"
        path.write_text(json.dumps({"schema_version": 1, "sha256": "0" * 64, "items": []}))
        code = main(["calibrate", "register", str(path), "--threshold", "kappa=0.5",
                     "--out", str(tmp_path / "reg.json")])  # fmt: skip
        assert 2 == code
        assert (
            "citemark: error: the label set fails its integrity check: items (too_short)\n"
            == capsys.readouterr().err
        )

    def test_another_value_error_is_not_printed_as_a_usage_line(
        self, tmp_path, monkeypatch, capsys
    ):
        """A ValueError that is no citemark refusal escapes; the 0.1 CLI printed its text."""
        path = write_labels(tmp_path / "labels.json")

        def broken(_path: object) -> LabelSet:
            raise ValueError(CANARY)

        monkeypatch.setattr(LabelSet, "read", broken)
        with pytest.raises(ValueError, match=CANARY):
            main(["calibrate", "register", str(path), "--threshold", "kappa=0.5",
                  "--out", str(tmp_path / "reg.json")])  # fmt: skip
        assert CANARY not in capsys.readouterr().err

    def test_no_handler_prints_a_value_errors_message(self):
        """In the command line no ``except ValueError`` binds the exception: its text is never shown.

        The naive variant, 0.1's ``except ValueError as exc: raise _UsageError(str(exc))``,
        is caught by the same check.
        """

        def bound(source: str) -> list[int]:
            return [
                handler.lineno
                for handler in ast.walk(ast.parse(source))
                if isinstance(handler, ast.ExceptHandler)
                and handler.name is not None
                and any(
                    isinstance(node, ast.Name) and node.id == "ValueError"
                    for node in ast.walk(handler.type or ast.Name(id=""))
                )
            ]

        naive = "try:\n    f()\nexcept ValueError as exc:\n    raise _UsageError(str(exc))\n"
        sources = [
            inspect.getsource(citemark._pipelines.cli.main),
            inspect.getsource(citemark._pipelines.cli.commands),
        ]
        assert ([], [3]) == ([n for text in sources for n in bound(text)], bound(naive))
