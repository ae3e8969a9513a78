"""Closing the client sockets Ray leaves behind, for the test modules that start Ray.

Ray leaves its client sockets to the garbage collector, which would close them (with
a ResourceWarning, an error under this suite's filterwarnings) in whichever test runs
next. A module fixture that starts Ray wraps its whole life in `closing_ray_sockets`;
`local_ray` is that fixture's body for a one-node cluster of two CPUs.
"""

from __future__ import annotations

import contextlib
import gc
import socket
import sys
import warnings
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator


def open_sockets() -> list[socket.socket]:
    return [
        obj for obj in gc.get_objects() if isinstance(obj, socket.socket) and obj.fileno() != -1
    ]


@contextlib.contextmanager
def closing_ray_sockets() -> Iterator[None]:
    """Close, on the way out, every socket opened inside the block and still open."""
    before = {id(sock) for sock in open_sockets()}
    yield
    for sock in open_sockets():
        if id(sock) not in before:
            sock.close()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        gc.collect()


@contextlib.contextmanager
def local_ray(module: str) -> Iterator[None]:
    """A local Ray of two CPUs, quiet, that pickles ``module`` (a test module) by value."""
    import ray

    with closing_ray_sockets():
        ray.cloudpickle.register_pickle_by_value(sys.modules[module])
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
        try:
            yield
        finally:
            ray.shutdown()
