"""The written form of a citation, for code that writes its own prompts or parsers.

The marker group the model writes (`GROUP_PATTERN`), the default labelled-context
syntax the scorer reads (`DEFAULT_LABEL_PATTERN`, `DEFAULT_CITATION_PATTERN`), the
numbering base (`DEFAULT_INDEX_BASE`, `INDEX_BASES`, and `check_index_base`, the one
validator every ``index_base`` argument goes through), and the sentences citemark's
own prompts use to ask for that syntax (`CITE_RULE`, `citing_rules`). Adapters and
user prompts that ask for citations take their words from here, so every prompt names
the syntax the parser reads.

Example:
    ```python
    from citemark.syntax import CITE_RULE, GROUP_PATTERN

    print(CITE_RULE.split(". ")[1])
    #> Cite several as [N][M] or [N, M].
    print([m.group(0) for m in GROUP_PATTERN.finditer("Rates rise [1, 2] and fall [3].")])
    #> ['[1, 2]', '[3]']
    ```
"""

from __future__ import annotations

from citemark._contract.syntax import (
    ABSTAIN_RULE,
    CITE_RULE,
    DEFAULT_CITATION_PATTERN,
    DEFAULT_INDEX_BASE,
    DEFAULT_LABEL_PATTERN,
    GROUP_PATTERN,
    INDEX_BASES,
    INT_PATTERN,
    PLACEHOLDER,
    check_index_base,
    citing_rules,
    no_invention_rule,
    source_header,
)
from citemark._public import publish

__all__ = [
    "ABSTAIN_RULE",
    "CITE_RULE",
    "DEFAULT_CITATION_PATTERN",
    "DEFAULT_INDEX_BASE",
    "DEFAULT_LABEL_PATTERN",
    "GROUP_PATTERN",
    "INDEX_BASES",
    "INT_PATTERN",
    "PLACEHOLDER",
    "check_index_base",
    "citing_rules",
    "no_invention_rule",
    "source_header",
]

publish(globals(), __name__, __all__)
