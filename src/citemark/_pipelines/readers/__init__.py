"""Readers of recorded runs: citemark's own and every other tool's.

citemark's own rows are read by `citemark_rows` (with `provider_rows` for a
provider's native citations and `structured_rows` for structured answers). The
rest of this folder reads other tools' files, for ``citemark check --from FORMAT``.
Each reader turns one file in a neighbour's format (a Ragas dataset, DeepEval test
cases, LangSmith runs, OpenInference spans, MLflow traces, or any JSONL through
``--map``) into the rows ``citemark check`` reads natively: one `Recorded` per row,
streamed, never the whole file at once. A reader never guesses the numbering the
model saw: where its format does not record the order of the sources, joined them
into one string or cut them short, the row is *un-assessed* with a named reason
(`RECORDED_REASONS`), not resolved against a list that may not be the one the model
was shown.

The registry maps a format name to the module that reads it; a module is imported
only when its format is asked for, so ``import citemark`` loads none of them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Final

from citemark._pipelines.readers._base import Reader, ReadOptions, Recorded

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["FORMAT_NAMES", "ReadOptions", "Reader", "Recorded", "reader_for", "sniff"]

_MODULES: Final[Mapping[str, str]] = {
    "ragas": "citemark._pipelines.readers.ragas",
    "deepeval": "citemark._pipelines.readers.deepeval",
    "langsmith": "citemark._pipelines.readers.langsmith",
    "openinference": "citemark._pipelines.readers.openinference",
    "mlflow": "citemark._pipelines.readers.mlflow",
    "map": "citemark._pipelines.readers.mapped",
}

FORMAT_NAMES: Final = tuple(_MODULES)
"""The names ``--from`` takes (``map`` is chosen by ``--map``, not by ``--from``)."""


def reader_for(name: str) -> Reader:
    """The reader of format ``name``: its module's ``read`` function."""
    module = importlib.import_module(_MODULES[name])
    reader: Reader = module.read
    return reader


def sniff(value: object) -> str | None:
    """The ``--from`` name a native-format line seems to be written in, or None.

    Called on a line that is not a citemark row, so that its malformed-line reason
    can name the format to read it with. Only keys are looked at, never values.
    """
    if not isinstance(value, dict):
        return None
    keys = value.keys()
    if "user_input" in keys and ("response" in keys or "retrieved_contexts" in keys):
        return "ragas"
    if "actual_output" in keys or "retrieval_context" in keys:
        return "deepeval"
    if "resourceSpans" in keys or ("context" in keys and "attributes" in keys and "name" in keys):
        return "openinference"
    if "info" in keys and "data" in keys:
        return "mlflow"
    if "run_type" in keys or "dotted_order" in keys or ("inputs" in keys and "outputs" in keys):
        return "langsmith"
    return None
