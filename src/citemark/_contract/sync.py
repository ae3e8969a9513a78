"""The one way a ``*_sync`` twin runs its coroutine: `run_sync`.

Every synchronous twin of an async API (``score_sync``, ``synthesize_sync``,
``run_calibration_sync`` and the rest) calls `run_sync`, so all of them behave the
same way: a fresh event loop per call with `asyncio.run`, the same error when called
from inside a running loop, and no repr of the result.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

__all__ = ["run_sync"]

_T = TypeVar("_T")

_IN_A_LOOP = (
    "a citemark *_sync function cannot run inside a running event loop: "
    "await its async twin instead"
)


def run_sync(start: Callable[[], Awaitable[_T]]) -> _T:
    """Run the coroutine ``start()`` makes to completion on a new event loop.

    ``start`` is called only once it is certain the coroutine will run, so calling a
    twin from inside a running loop leaves no never-awaited coroutine behind. The
    loop's main task returns ``None`` on purpose, and the result travels beside it:
    Python 3.11's `asyncio.run` reprs the main task when it restores the SIGINT
    handler, and the repr of a large result (a score whose details list a hundred
    thousand markers) takes longer than the work itself.

    Args:
        start: Makes the coroutine, for example ``lambda: scorer.score(answer, sources)``.

    Returns:
        What the coroutine returned.

    Raises:
        RuntimeError: called from inside a running event loop, as `asyncio.run`
            refuses; the coroutine is never created.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        raise RuntimeError(_IN_A_LOOP)
    result: list[_T] = []

    async def main() -> None:
        result.append(await start())

    asyncio.run(main())
    return result[0]
