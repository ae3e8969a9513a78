"""citemark for LlamaIndex: postprocessor."""

__all__: list[str] = []
