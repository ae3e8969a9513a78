"""LangChain integration for citemark."""

__all__: list[str] = []
