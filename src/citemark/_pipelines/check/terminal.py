r"""Untrusted text on a terminal: every control character shown as an escape, never obeyed.

A row id, a group name, a file name or a model's answer may hold terminal escape
sequences (``ESC ]0;...BEL`` retitles the window, ``ESC [2J`` clears it, a C1
``CSI`` does both on some terminals) or a newline that forges a line of output.
`printable` writes each C0 and C1 control character and DEL as a Python-style escape
(``\x1b``), so the text is shown, not obeyed; every command's text output passes
untrusted values through it, and `json_printable` makes ``--json`` output safe the
same way while it still reads back as the same value.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["json_printable", "printable"]

_CONTROLS: Final = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_CONTROLS_BUT_LINES: Final = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# What json.dumps(ensure_ascii=False) leaves raw: DEL and the C1 controls.
_JSON_RAW_CONTROLS: Final = re.compile(r"[\x7f-\x9f]")


_SHORT: Final = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    return _SHORT.get(char) or f"\\x{ord(char):02x}"


def printable(text: str, *, keep_lines: bool = False) -> str:
    r"""``text`` with every control character written as ``\xNN`` (``\n``, ``\t``, ``\r``).

    Args:
        text: Untrusted text bound for a terminal.
        keep_lines: Keep newlines and tabs (a model's answer, printed as lines).

    Example:
        ```python
        from citemark._pipelines.check.terminal import printable

        print(printable("q1\x1b[2J\n"))
        #> q1\x1b[2J\n
        ```
    """
    pattern = _CONTROLS_BUT_LINES if keep_lines else _CONTROLS
    return pattern.sub(_escape, text)


def json_printable(dumped: str) -> str:
    r"""A JSON text from ``json.dumps(..., ensure_ascii=False)`` with DEL and C1 escaped.

    ``json.dumps`` escapes the C0 controls itself; the ``\u00XX`` escapes added here
    read back as the same characters.
    """
    return _JSON_RAW_CONTROLS.sub(lambda m: f"\\u{ord(m.group()):04x}", dumped)
