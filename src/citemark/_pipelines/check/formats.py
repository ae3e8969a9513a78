"""The optional output formats of ``citemark check``, by the name ``--format`` takes.

``rows.jsonl`` and ``report.html`` are always written; `FORMATS` registers the
others. Adding a format is one new module with a sink class following
``citemark._pipelines.check.protocol.CheckSink``, its name in
``citemark._pipelines.check.names.OUTPUT_FORMATS`` (which ``--help`` reads before
any engine loads) and its class here. The registry sits above the sinks it names:
a sink module never imports it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from citemark._pipelines.check.junit import JUnitSink
from citemark._pipelines.check.names import OUTPUT_FORMATS

if TYPE_CHECKING:
    from collections.abc import Callable

    from citemark._pipelines.check.protocol import CheckSink, SinkOptions

__all__ = ["FORMATS"]

FORMATS: Final[dict[str, Callable[[SinkOptions], CheckSink]]] = dict(
    zip(OUTPUT_FORMATS, (JUnitSink,), strict=True)
)
"""The optional output formats, by the name ``--format`` takes."""
