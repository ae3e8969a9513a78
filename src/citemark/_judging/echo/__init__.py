"""The planted-marker echo check as a private subpackage (SPEC §3.10).

``plan`` builds the per-run corpus of positive, decoy and absent markers; ``run``
asks the pipeline, re-reads its citations from the files and writes
``echo-latest.json``. The public names are in `citemark.echo`.
"""
