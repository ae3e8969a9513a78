"""Provider-native citations: parsers, exact offset conversion and verification.

Private: the public names are re-exported by `citemark.providers`. One module per
provider parser (``anthropic``, ``openai``, ``cohere``, ``gemini``, ``bedrock``), one
for the model (``_model``), one for offset units (``_offsets``) and one for
verification (``_verify``).
"""

from __future__ import annotations

__all__: list[str] = []
