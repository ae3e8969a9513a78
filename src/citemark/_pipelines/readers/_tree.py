"""Whether a trace's spans, linked by their parent ids, lead up to a root: parent cycles.

A span names its parent by id, and the trace readers walk those links (to the LLM
call an LLM span is part of, to a retriever a retriever span sits inside). Spans
whose parent ids lead round in a circle (a span its own parent; A's parent B and B's
parent A) are below no root: nothing says which call or retrieval they belong to,
and a walk up from them never ends at the root. `has_cycle` tells such a trace
apart, in time linear in its spans, so a reader can make its row ``trace_incomplete``
instead of reading the circle as if it were a tree.

Two different spans under one span id are the other way a trace stops being a tree:
a mapping from span id to parent cannot hold both, so each reader checks for those
as it gathers the spans.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["has_cycle"]


def has_cycle(parents: Mapping[str, str | None]) -> bool:
    """Whether following parent ids up from some span comes back to a span passed.

    Args:
        parents: Each span's id mapped to its parent's id, None for a root. A parent
            id that no span has ends its chain (a lost parent is not a cycle; each
            reader judges that on its own).

    Returns:
        True when the parent ids of some spans form a cycle.

    Example:
        ```python
        from citemark._pipelines.readers._tree import has_cycle

        print(has_cycle({"root": None, "a": "root", "b": "a"}))
        print(has_cycle({"root": None, "a": "b", "b": "a"}))
        #> False
        #> True
        ```
    """
    settled: set[str] = set()
    for start in parents:
        passed: dict[str, None] = {}
        span: str | None = start
        while span is not None and span in parents and span not in settled:
            if span in passed:
                return True
            passed[span] = None
            span = parents[span]
        settled.update(passed)
    return False
