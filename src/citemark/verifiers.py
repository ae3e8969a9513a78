"""Does the cited source say it? Support verifiers and ALCE's citation recall and precision.

A verifier answers one question per `Premise`, as ALCE and AutoAIS ask it: do these
passages entail this claim? Three come with citemark, each with a `VerifierIdentity`
(kind, name, version, SHA-256 of its rule, weights or prompt):

- `LexicalVerifier`: no model; a documented rule over content words, numbers and
  negations. Runs with nothing installed.
- `NliVerifier`: a local NLI model from a folder the user provides (``model.onnx``,
  ``tokenizer.json``, ``config.json``), on ONNX Runtime (``pip install
  'citemark[nli]'``). Nothing is ever downloaded.
- `JudgeVerifier`: any chat model behind citemark's chat seam, asked one strict
  entailment question per premise.

`citation_support` reads each sentence's markers as citemark reads them and
computes ALCE's citation recall and precision per sentence, row and run, naming
other given sources that do support a claim its citation does not
(``supported_by_other_source``). Every figure is advisory: it never changes a
check's outcome or exit code (see `citemark check --verifier`), and each verifier's
agreement with human labels is published in the docs.

Example:
    ```python
    from citemark import Source
    from citemark.verifiers import LexicalVerifier, SupportRow, citation_support_sync

    sources = [
        Source(doc_id="tower", text="The Eiffel Tower is 330 metres tall."),
        Source(doc_id="peak", text="Mount Everest rises 8849 metres above sea level."),
    ]
    row = SupportRow("Mount Everest rises 8849 metres [1].", sources)
    run = citation_support_sync([row], LexicalVerifier())
    citation = run.rows[0].sentences[0].citations[0]
    print(run.recall, citation.source, citation.reattribution.supported_by_other_source)
    #> 0.0 1 (2,)
    ```
"""

from __future__ import annotations

from citemark._judging.verifiers.base import (
    Premise,
    Verdict,
    Verifier,
    VerifierIdentity,
    verify_sync,
)
from citemark._judging.verifiers.judge import JudgeVerifier
from citemark._judging.verifiers.lexical import LexicalVerifier
from citemark._judging.verifiers.nli import NliVerifier
from citemark._judging.verifiers.reattribution import Reattribution
from citemark._judging.verifiers.support import (
    CitationSupport,
    RowSupport,
    SentenceClaim,
    SentenceSupport,
    SupportRow,
    SupportRun,
    citation_support,
    citation_support_sync,
    sentence_claims,
    support_not_assessed,
)
from citemark._public import publish

__all__ = [
    "CitationSupport",
    "JudgeVerifier",
    "LexicalVerifier",
    "NliVerifier",
    "Premise",
    "Reattribution",
    "RowSupport",
    "SentenceClaim",
    "SentenceSupport",
    "SupportRow",
    "SupportRun",
    "Verdict",
    "Verifier",
    "VerifierIdentity",
    "citation_support",
    "citation_support_sync",
    "sentence_claims",
    "support_not_assessed",
    "verify_sync",
]

publish(globals(), __name__, __all__)
