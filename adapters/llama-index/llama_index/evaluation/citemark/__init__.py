"""citemark for LlamaIndex: citation and strict faithfulness evaluators."""

from llama_index.evaluation.citemark.base import CitationEvaluator, CitemarkEvaluationResult
from llama_index.evaluation.citemark.faithfulness import StrictFaithfulnessEvaluator

__all__ = ["CitationEvaluator", "CitemarkEvaluationResult", "StrictFaithfulnessEvaluator"]
