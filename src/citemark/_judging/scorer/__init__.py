"""The citation correctness scorer, as a private subpackage.

``scorer`` holds `CitationScorer`; ``findings`` the typed findings it records;
``result`` the `CitationScore` it returns; ``labels`` the deterministic
classification of marker occurrences; ``sentences`` sentence coverage; ``prompt`` and
``reply`` the judge's prompt and the strict validation of its reply. The public names
are re-exported by `citemark.evaluation` and the top-level package.
"""
