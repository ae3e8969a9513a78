"""Write DeepEval test cases with ``EvaluationDataset.save_as`` as JSON, JSONL and CSV.

Run with the formats environment's Python (``.venv-formats/bin/python``)::

    deepeval_dataset.py SPEC.json OUT_DIR

SPEC.json is a list of ``LLMTestCase`` field dicts, where a ``retrieval_context``
item may be ``{"context": ..., "source": ...}`` for a ``RetrievedContextData``.
Each becomes an ``LLMTestCase`` added with ``add_test_case``, and the dataset is
saved as OUT_DIR/deepeval.json, .jsonl and .csv.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
from pathlib import Path

# DeepEval would otherwise write telemetry settings and a .deepeval folder.
os.environ.setdefault("DEEPEVAL_TELEMETRY_OPT_OUT", "YES")


def main(spec_path: str, out_dir: str) -> None:
    """Build the test cases with DeepEval and save them in its three file types."""
    from deepeval.dataset import EvaluationDataset
    from deepeval.test_case import LLMTestCase, RetrievedContextData

    spec = json.loads(Path(spec_path).read_text(encoding="utf-8"))
    dataset = EvaluationDataset()
    for given in spec:
        fields = dict(given)
        if fields.get("retrieval_context") is not None:
            fields["retrieval_context"] = [
                RetrievedContextData(**item) if isinstance(item, dict) else item
                for item in fields["retrieval_context"]
            ]
        dataset.add_test_case(LLMTestCase(**fields))
    # save_as prints a line per file; keep the producer's stdout for errors only.
    with contextlib.redirect_stdout(io.StringIO()):
        for file_type in ("json", "jsonl", "csv"):
            dataset.save_as(file_type, out_dir, file_name="deepeval", include_test_cases=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
