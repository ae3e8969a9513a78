"""What the command line's parser and its commands share: exit codes, the usage error, output.

A module that loads no engine, so that ``citemark --help`` and a usage error cost
the parser alone.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING

from citemark._pipelines.check.terminal import json_printable, printable

if TYPE_CHECKING:
    import argparse

__all__ = [
    "EXIT_CHAT",
    "EXIT_OK",
    "EXIT_USAGE",
    "EXIT_VIOLATION",
    "UsageError",
    "fail",
    "print_json",
]

EXIT_OK = 0
EXIT_VIOLATION = 1
EXIT_USAGE = 2
EXIT_CHAT = 3


class UsageError(Exception):
    """A problem with the command line or the configuration; printed as one line."""


def fail(args: argparse.Namespace, message: str, code: int, **facts: int | str) -> int:
    """Print ``message`` as one line (or one JSON object with ``--json``); return ``code``."""
    if getattr(args, "json", False):
        print_json({"error": message, "exit_code": code, **facts})
    else:
        sys.stderr.write(f"citemark: error: {printable(message)}\n")
    return code


def print_json(value: object) -> None:
    """``value`` as one line of JSON on standard output, terminal controls escaped."""
    # json.dumps escapes the C0 controls; DEL and C1 (a CSI) are escaped here too.
    sys.stdout.write(json_printable(json.dumps(value, ensure_ascii=False, allow_nan=False)) + "\n")
