"""``citemark diff``: what changed between two ``citemark check`` runs, row by row.

``runs`` reads one run's ``report.json``, ``rows.jsonl`` and page tolerantly and
streamed; ``index`` keeps the old run's rows and the changes on disk; ``matching``
is the rule rows are paired by (id where the runs share ids, never a per-run id, else
question, else line) and each row's key under it; ``compare`` matches and classifies
the rows; ``render`` writes the comparison as text, JSON and
an HTML page in the style of ``report.html``; ``command`` is ``citemark diff``;
``digests`` is the per-row input digest ``rows.jsonl`` records. The public names are
in `citemark.diff`; importing this package loads none of them, so ``citemark check``,
which writes the digests, does not load the comparison.
"""
