"""citemark for LlamaIndex: evaluation."""

__all__: list[str] = []
