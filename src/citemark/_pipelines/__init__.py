"""Layer 6, pipelines: recorded runs in, checked reports out.

Readers of recorded runs, citemark's own and other tools' (`readers`), rows recorded
from a live chain (`live_rows`), the evaluation report and its vocabulary
(`eval_report`), ``citemark check`` and its outputs (`check`), the scaled engines
(`scale`), comparing two runs (`diff`) and the command line (`cli`).

May import: every layer below. Only the public modules (``citemark.*``) sit above it.
"""
