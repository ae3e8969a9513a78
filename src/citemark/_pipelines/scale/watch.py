"""The Ray driver's guard: bounded waits on a live node, and Ray's failures as citemark's.

A Ray driver whose node dies (its GCS and raylet killed with the workers) can wait
for ever on a task's result: nothing is left to report the task lost. `NodeWatch`
waits in short steps (``ray.wait`` with a timeout) and, between steps, checks that
the node still answers: a TCP connection to the GCS and to the driver's raylet (a
connection refused is a process gone). A node that has not answered for
``node_timeout`` seconds ends the run with `RayRunError` (``node_lost``). The check
costs one connection per address per idle step, never one per shard.

`ray_failures` turns what Ray raises into what the local engine would: a worker's
``OSError`` (a full disk) is that ``OSError`` again, without its file name; a
citemark error a worker raised (`PartMismatchError`) is itself; a worker that died
or a task that failed outside every row's guard is `RayRunError`. Only structural
facts reach a message: a reason, a shard number, an exception's class name.
"""

from __future__ import annotations

import contextlib
import socket
import time
from typing import TYPE_CHECKING, Any, Final

from citemark._contract.errors import CitemarkError, RayRunError

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

__all__ = ["DEFAULT_NODE_TIMEOUT", "NodeWatch", "lost_shard", "ray_failures"]

DEFAULT_NODE_TIMEOUT: Final = 30.0
"""How long the driver waits on a node that does not answer before the run ends."""
_STEP: Final = 1.0
"""The longest single wait between two checks of the node, in seconds."""


class NodeWatch:
    """Waits on Ray results in short steps, ending the run if the node stops answering.

    Args:
        node_timeout: Seconds the node may go without answering before `RayRunError`.
    """

    def __init__(self, node_timeout: float = DEFAULT_NODE_TIMEOUT) -> None:
        if not node_timeout > 0:
            msg = "node_timeout must be a positive number of seconds"
            raise ValueError(msg)
        self._timeout = node_timeout
        self._step = min(_STEP, node_timeout / 4)
        self._addresses = _node_addresses()
        self._silent_since: float | None = None

    def answering(self) -> bool:
        """Whether every process of the driver's node that the run needs accepts a connection."""
        return all(_connects(address, self._step) for address in self._addresses)

    def check(self) -> None:
        """Note whether the node answers; raise once it has not for ``node_timeout``.

        Raises:
            RayRunError: the node has not answered for ``node_timeout`` seconds.
        """
        if self.answering():
            self._silent_since = None
            return
        now = time.monotonic()
        if self._silent_since is None:
            self._silent_since = now
        if now - self._silent_since >= self._timeout:
            msg = f"the Ray node stopped answering for {self._timeout:g} s (its GCS or raylet)"
            raise RayRunError(msg, "node_lost")

    def ensure(self) -> None:
        """Return once the node answers (at once if it does); raise as `check` does."""
        while True:
            self.check()
            if self._silent_since is None:
                return
            time.sleep(self._step)

    def wait(self, refs: Sequence[Any], num_returns: int | None = None) -> list[Any]:
        """Wait until ``num_returns`` of ``refs`` (all by default) are ready; return those.

        Raises:
            RayRunError: the node stopped answering for ``node_timeout`` meanwhile.
        """
        import ray  # noqa: PLC0415 - only with the ray extra

        need = len(refs) if num_returns is None else num_returns
        if need == 0:
            return []
        while True:
            ready, _ = ray.wait(list(refs), num_returns=need, timeout=self._step)
            if len(ready) >= need:
                self._silent_since = None
                return list(ready)
            self.check()


def _node_addresses() -> list[tuple[str, int]]:
    """The GCS's and the driver's raylet's addresses; those Ray does not tell are left out."""
    import ray  # noqa: PLC0415

    found: list[tuple[str, int]] = []
    with contextlib.suppress(Exception):  # Ray Client, or an address of another form
        host, _, port = str(ray.get_runtime_context().gcs_address).rpartition(":")
        found.append((host, int(port)))
    with contextlib.suppress(Exception):
        node: Any = ray._private.worker.global_worker.node  # noqa: SLF001 - no public accessor
        found.append((str(node.node_ip_address), int(node.node_manager_port)))
    return [(host.strip("[]"), port) for host, port in found if host and port > 0]


def _connects(address: tuple[str, int], timeout: float) -> bool:
    try:
        with socket.create_connection(address, timeout=timeout):
            return True
    except OSError:
        return False


def lost_shard(index: int) -> RayRunError:
    """The error for a worker that died with shard ``index`` in hand."""
    msg = f"a Ray worker died before shard {index} was done (killed, or out of memory)"
    return RayRunError(msg, "worker_lost")


@contextlib.contextmanager
def ray_failures() -> Iterator[None]:
    """Raise what Ray raises in the block as the local engine's errors (see the module)."""
    import ray.exceptions  # noqa: PLC0415

    try:
        yield
    except ray.exceptions.RayError as exc:
        raise _translated(exc) from None


def _translated(exc: BaseException) -> BaseException:
    import ray.exceptions  # noqa: PLC0415

    if isinstance(exc, ray.exceptions.RayTaskError):
        cause = exc.cause
        if isinstance(cause, ray.exceptions.RayError):
            return _translated(cause)
        if isinstance(cause, OSError):
            # The worker's own error, without its file name (a path on another node).
            return OSError(cause.errno, cause.strerror)
        if isinstance(cause, CitemarkError):
            return cause
        msg = f"a Ray task failed outside every row's guard ({type(cause).__name__})"
        return RayRunError(msg, "worker_failed")
    if isinstance(exc, RayRunError):
        return exc
    if isinstance(exc, ray.exceptions.RayActorError):
        msg = "a Ray worker died before its shard was done (killed, or out of memory)"
        return RayRunError(msg, "worker_lost")
    if isinstance(exc, ray.exceptions.LocalRayletDiedError | ray.exceptions.NodeDiedError):
        return RayRunError("the Ray node of this run died", "node_lost")
    msg = f"Ray failed before the run was done ({type(exc).__name__})"
    return RayRunError(msg, "worker_lost")
