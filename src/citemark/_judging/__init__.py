"""Layer 5, judging: opinions about answers, recorded and advisory.

The LLM judge (`judge`) and the scorer that runs it over rows (`scorer`), calibration
against human labels (`calibration`), echo runs (`echo`), recording and replaying
judge calls (`replay`), telemetry (`observe`) and the test assertions (`assertions`).

May import: the layers below (`_contract`, `_markers`, `_sources`, `_model`).
"""
