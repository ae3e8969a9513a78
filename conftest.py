"""Fixtures every test of the repository shares (tests/ and both adapters' suites)."""

from __future__ import annotations

import asyncio
import warnings
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from collections.abc import Iterator


@pytest.fixture(autouse=True)
def close_the_loop_llama_index_leaves() -> Iterator[None]:
    """Close the main thread's event loop that LlamaIndex's sync paths leave open.

    ``BaseEvaluator.evaluate`` runs through ``llama_index.core.async_utils.asyncio_run``,
    which sets a loop on the main thread and never closes it (the adapter's tests and
    the docs' LlamaIndex examples both call it); a later ``asyncio.run`` drops it, and
    its ResourceWarning then fails whichever test happens to be running, which depends
    on the order tests run in (``make check`` runs them on two workers).
    """
    yield
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            loop = asyncio.get_event_loop_policy().get_event_loop()
        except RuntimeError:  # none set: nothing was left open
            return
    if not loop.is_running():
        loop.close()
        asyncio.set_event_loop(None)
