"""Layer 2, markers: finding the citation markers an answer holds.

The marker grammar and CommonMark masking (`grammar`, with the block and inline
scanners `blocks`, `inlines` and the fast path `fast`), near-miss reporting
(`nearmiss`), resolving markers to the sources given (`resolve`) and the streaming
check (`stream`).

May import: `citemark._contract`.
"""
