"""Layer 3, sources: the numbered source list and citations that arrive structured.

Rendering sources and prompts (`render`), re-reading a cited span from its document
(`spans`), BM25 retrieval (`retrieval`), structured citations (`structured`) and the
providers' own citation formats (`providers`).

May import: `citemark._contract`, `citemark._markers`.
"""
