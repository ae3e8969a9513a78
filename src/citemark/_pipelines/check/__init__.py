"""``citemark check`` as a private subpackage: the run, its output sinks and its page.

``run`` reads the input and scores it in bounded chunks, counting as it goes
(``tally``); ``protocol`` is what every sink follows and is handed; ``sinks`` writes
``rows.jsonl``; ``formats`` registers the optional formats; ``page`` writes
``report.html`` (rows as data drawn by its script), from the markers ``html`` places
(style and script are package data under ``assets/``); ``junit`` writes
``report.junit.xml``; ``judge_calls`` records every judge call; ``groups`` counts by
``--group-by``; ``support`` adds a support verifier's advisory figures
(``--verifier``). ``report.json`` is written last by the run, naming the SHA-256 of
every other file; ``output_set`` checks a finished run's files. ``names`` holds the
outputs' names and defaults.

This package's own module is this docstring: importing any module below loads only
what that module imports. The run (and with it the scorer and the HTTP client) is
``run``, so ``citemark --help`` and the readers of a finished run, which import
``names``, do not pay for it.
"""
