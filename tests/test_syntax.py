"""One owner for citation syntax: every prompt names the syntax the parser reads."""

from __future__ import annotations

import re
from pathlib import Path

from citemark import DEFAULT_SYNTHESIS_PROMPT, parse_markers
from citemark.syntax import CITE_RULE, GROUP_PATTERN, PLACEHOLDER, citing_rules
from langchain_citemark import CitationOutputParser
from llama_index.postprocessor.citemark import CITATION_QA_TEMPLATE

ROOT = Path(__file__).resolve().parent.parent
OWNER = ROOT / "src" / "citemark" / "_contract" / "syntax.py"

# A regular expression literal for a bracketed ASCII integer: what the marker grammar is.
_MARKER_LITERAL = re.compile(r"""r["'][^"'\n]*\\\[\(?\[0-9\]""")


def own_code() -> list[Path]:
    paths = [*(ROOT / "src").rglob("*.py"), *(ROOT / "adapters").rglob("*.py")]
    return [p for p in paths if "tests" not in p.parts and p != OWNER]


class TestOneOwner:
    def test_every_prompt_states_the_one_citing_rule(self):
        """The synthesis prompt, the LlamaIndex QA template and the parser say it alike."""
        prompts = {
            "synthesis": DEFAULT_SYNTHESIS_PROMPT,
            "llama_index_qa": CITATION_QA_TEMPLATE.get_template(),
            "format_instructions": CitationOutputParser().get_format_instructions(),
        }
        assert dict.fromkeys(prompts, True) == {
            name: CITE_RULE in text for name, text in prompts.items()
        }

    def test_the_rules_name_no_real_marker(self):
        """The rules use the placeholder, so they add no citable [i] to a rendered prompt."""
        assert PLACEHOLDER in CITE_RULE
        assert () == parse_markers(citing_rules())

    def test_the_parser_reads_what_the_rule_asks_for(self):
        """Each form the rule names ([N], [N][M], [N, M]) is a marker group."""
        for form in ("[3]", "[1][2]", "[1, 2]"):
            assert GROUP_PATTERN.search(form) is not None

    def test_no_other_module_writes_the_marker_grammar(self):
        """Only citemark._contract.syntax spells out the bracketed-integer pattern."""
        naive_copy = 'GROUP = re.compile(r"\\[([0-9]+)\\]")'
        assert _MARKER_LITERAL.search(naive_copy), "the check must see a copied pattern"
        assert _MARKER_LITERAL.search(OWNER.read_text(encoding="utf-8"))
        copies = [
            path.relative_to(ROOT).as_posix()
            for path in own_code()
            if _MARKER_LITERAL.search(path.read_text(encoding="utf-8"))
        ]
        assert [] == copies
