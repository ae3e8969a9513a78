"""Layer 4, the model side: calling a chat model and reading what it writes.

The chat seam (`completion`: `ChatModel`, `Completion`; `chat`: the OpenAI-compatible
client on httpx), strict JSON (`strictjson`), answer synthesis (`synthesis`) and
redaction of markers before a model reads an answer (`redaction`).

May import: the layers below (`_contract`, `_markers`, `_sources`).
"""
