"""Write a Ragas ``EvaluationDataset`` with its own ``to_jsonl`` and ``to_csv``.

Run with the formats environment's Python (``.venv-formats/bin/python``)::

    ragas_dataset.py SPEC.json OUT_DIR

SPEC.json is a list of ``SingleTurnSample`` field dicts; the dataset of those
samples is written to OUT_DIR/ragas.jsonl and OUT_DIR/ragas.csv, and as users also
write it, to OUT_DIR/ragas.json (``json.dump(dataset.to_list())``) and
OUT_DIR/ragas.parquet (``dataset.to_pandas().to_parquet()``).
"""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path


def _stub_removed_vertexai() -> None:
    """Stand in for ``langchain_community.chat_models.vertexai``, gone from langchain-community 0.4.

    ``ragas.llms.base`` imports ``ChatVertexAI`` from it at import time, so
    ``import ragas`` fails without it. Nothing here uses Vertex AI: the stub only
    lets the import succeed, and the dataset classes are Ragas' own.
    """
    name = "langchain_community.chat_models.vertexai"
    stub = types.ModuleType(name)
    stub.ChatVertexAI = type("ChatVertexAI", (), {})  # type: ignore[attr-defined]
    sys.modules[name] = stub


def main(spec_path: str, out_dir: str) -> None:
    """Build the samples with Ragas and write both files."""
    _stub_removed_vertexai()
    from ragas import EvaluationDataset, SingleTurnSample

    spec = json.loads(Path(spec_path).read_text(encoding="utf-8"))
    dataset = EvaluationDataset(samples=[SingleTurnSample(**fields) for fields in spec])
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    dataset.to_jsonl(out / "ragas.jsonl")
    dataset.to_csv(out / "ragas.csv")
    # What users also write: the samples as one JSON array, and the dataframe as Parquet.
    (out / "ragas.json").write_text(json.dumps(dataset.to_list(), indent=2), encoding="utf-8")
    dataset.to_pandas().to_parquet(out / "ragas.parquet")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
